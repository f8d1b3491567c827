"""Recursive-doubling allreduce (whole-vector exchanges, log2 P steps)."""

from __future__ import annotations

from ...patterns.dense import recursive_doubling_messages

from ...patterns.doubling import recursive_doubling
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem."""
    return recursive_doubling_messages(P)


@register("recursive-doubling", kind="dense", messages=_messages)
def recursive_doubling_allreduce(comm, x):
    """Recursive doubling: exchange the whole vector with vrank XOR dist, log2 P steps.

    Non-powers of two are folded onto p' = the largest power of two <= P (the extra ranks
    hand their data to a neighbour first and get the result back at the end).
    """
    return (yield from recursive_doubling(comm, x))
