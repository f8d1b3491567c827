"""Recursive-doubling allreduce (whole-vector exchanges, log2 P steps)."""

from __future__ import annotations

from ._common import fold, pof2_floor, real_rank, unfold
from .registry import register


@register("recursive-doubling", kind="dense")
def recursive_doubling(comm, x):
    """Recursive doubling: exchange the whole vector with vrank XOR dist, log2 P steps.

    Non-powers of two are folded onto p' = the largest power of two <= P (the extra ranks
    hand their data to a neighbour first and get the result back at the end).
    """
    P = comm.size
    if P == 1:
        return x
    p2 = pof2_floor(P)
    rem = P - p2
    v, x = yield from fold(comm, x)
    if v is not None:
        with comm.phase("recursive-doubling"):
            dist = 1
            while dist < p2:
                partner = real_rank(v ^ dist, rem)
                got = yield comm.sendrecv(partner, x, partner)
                x = yield comm.add(x, got)
                dist <<= 1
    return (yield from unfold(comm, x))
