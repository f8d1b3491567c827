"""SMPI's alltoall "bruck": Bruck's index algorithm, ceil(log2 P) steps, any P."""

from __future__ import annotations

from ...patterns.dense import ceil_log2, split
from ..registry import register


def _messages(P, **_):
    """P ceil(log2 P)."""
    return P * ceil_log2(P) if P > 1 else 0


@register("smpi-bruck", kind="dense", collective="alltoall", messages=_messages)
def alltoall_smpi_bruck(comm, x):
    """SMPI's alltoall bruck: rotate, then step 2^k sends every block whose index has bit k set to r + 2^k.

    As SMPI 3.32's ``alltoall-bruck.cpp``: the rank first rotates its blocks (a local
    copy) so that position j holds the block for rank r + j; for pof2 = 1, 2, 4, ... < P
    it packs the blocks at the positions j (1 <= j < P) with j & pof2 into one message to
    r + pof2 and unpacks the one from r - pof2 into the same positions. Position j then
    holds the block from rank r - j; the final rotation is a local copy.
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    held = [blocks[(r + j) % P] for j in range(P)]
    pof2 = 1
    with comm.phase("alltoall"):
        while pof2 < P:
            moved = [j for j in range(1, P) if j & pof2]
            got = yield comm.sendrecv((r + pof2) % P, tuple(held[j] for j in moved), (r - pof2) % P)
            for j, g in zip(moved, got):
                held[j] = g
            pof2 *= 2
    out = [None] * P
    for j in range(P):
        out[(r - j) % P] = held[j]
    return out
