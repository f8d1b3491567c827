"""Pairwise-exchange alltoall (P - 1 rounds)."""

from __future__ import annotations

from ...patterns.dense import split
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("pairwise", kind="dense", collective="alltoall", messages=_messages)
def alltoall_pairwise(comm, x):
    """Pairwise exchange: round i sends block r + i to rank r + i and receives from r - i.

    P - 1 rounds of one block (count elements) each; rank r keeps its own block r. On a
    contention-free machine: (P - 1)(alpha + S / (P beta)), S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    out = [None] * P
    out[r] = blocks[r]
    with comm.phase("alltoall"):
        for i in range(1, P):
            dst, src = (r + i) % P, (r - i) % P
            out[src] = yield comm.sendrecv(dst, blocks[dst], src)
    return out
