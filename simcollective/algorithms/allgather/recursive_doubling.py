"""Recursive-doubling allgather (log2 P steps, any P)."""

from __future__ import annotations

from ...patterns.dense import allgather_messages

from ...patterns.doubling import allgather
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem."""
    return allgather_messages(P, "recursive-doubling")


@register("recursive-doubling", kind="dense", collective="allgather", messages=_messages)
def allgather_recursive_doubling(comm, x):
    """Recursive doubling: exchange everything gathered so far with vrank XOR 2^j.

    p' = the largest power of two <= P. For P not a power of two, even r < 2 rem first
    hands its block to r + 1 and receives the whole result from it at the end. Step j
    (dist = 2^j) exchanges the 2^j blocks gathered so far in one message. On a
    contention-free machine with P a power of two: sum over j of (alpha + 2^j S / (P beta))
    = log2 P alpha + (P - 1) S / (P beta).
    """
    with comm.phase("allgather"):
        return (yield from allgather(comm, x, "recursive-doubling", pack=tuple))
