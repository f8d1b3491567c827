"""SSAR_Recursive_double: recursive doubling on SparCML streams (algorithms.md item 7)."""

from __future__ import annotations

from ._sparse_common import check_densify, fold, pof2_floor, real_rank, shared_merge_op, unfold
from .registry import register


def _check(nranks: int, densify=None, **_ignored) -> None:
    check_densify(densify, "ssar-recursive-doubling")


@register("ssar-recursive-doubling", kind="sparse", options=("densify",), check=_check)
def ssar_recursive_doubling(comm, x, *, densify="exact"):
    """SSAR recursive doubling: exchange the whole stream with vrank XOR 2^j and merge.

    Any P: "fold" onto p' = the largest power of two <= P (even r < 2 rem hands its
    stream to r + 1), then for dist = 1, 2, ..., p'/2 ("recursive-doubling") exchange the
    whole current stream with virtual rank v XOR dist and merge (``densify`` policy:
    "exact" or "upper-bound"); "unfold" sends the result back to the ranks that sat out.
    The message of step j holds ~N(1 - (1 - d)^(2^j)) entries (capped at dense size).
    At step j the 2^(j+1) ranks of a window all merge the same two partial sums; the
    merge is computed once and shared (each rank pays its compute time), so every
    partial sum exists once per simulation, not once per rank.
    """
    P = comm.size
    if P == 1:
        return x
    p2 = pof2_floor(P)
    rem = P - p2
    v, x = yield from fold(comm, x, densify)
    if v is not None:
        with comm.phase("recursive-doubling"):
            dist = 1
            while dist < p2:
                partner = real_rank(v ^ dist, rem)
                got = yield comm.sendrecv(partner, x, partner)
                # all 2 dist ranks of the new window merge the same two partial sums
                x = yield comm.add(x, got, op=shared_merge_op(comm, densify, users=2 * dist))
                dist <<= 1
    return (yield from unfold(comm, x))
