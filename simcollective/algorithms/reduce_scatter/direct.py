"""Pairwise (direct) reduce-scatter (P - 1 rounds)."""

from __future__ import annotations

from ...patterns.dense import split
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("direct", kind="dense", collective="reduce-scatter", messages=_messages)
def reduce_scatter_direct(comm, x):
    """Pairwise exchange: round i sends block r + i to rank r + i, receives block r from r - i and adds it.

    P - 1 rounds of one block each (the partial sum of block r accumulates in round
    order). On a contention-free machine with free sums: (P - 1)(alpha + S / (P beta)).
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    acc = blocks[r]
    with comm.phase("reduce-scatter"):
        for i in range(1, P):
            dst, src = (r + i) % P, (r - i) % P
            got = yield comm.sendrecv(dst, blocks[dst], src)
            acc = yield comm.add(acc, got)
    return acc
