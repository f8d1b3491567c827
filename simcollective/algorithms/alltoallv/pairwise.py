"""Pairwise-exchange alltoallv (P - 1 shifted rounds)."""

from __future__ import annotations

from ...patterns.alltoallv import block_messages, dispatch_combine, own_block_only
from ..registry import register


def pairwise_exchange(comm, blocks, counts, name):
    """Round i = 1..P-1: send block r + i to rank r + i, receive from r - i (zero sizes skipped)."""
    P, r = comm.size, comm.rank
    out = own_block_only(blocks, r)
    with comm.phase(name):
        for i in range(1, P):
            dst, src = (r + i) % P, (r - i) % P
            reqs = [comm.irecv(src, tag=i)] if counts[src][r] else []
            if counts[r][dst]:
                reqs.append(comm.isend(dst, blocks[dst], tag=i))
            got = yield comm.waitall(reqs)
            if counts[src][r]:
                out[src] = got[0]
    return out


@register("pairwise", kind="dense", collective="alltoallv", messages=block_messages)
def alltoallv_pairwise(comm, x, *, sizes, combine=False):
    """Pairwise exchange: round i sends the block for r + i and receives the one from r - i.

    The classic shifted exchange (MPICH's alltoallv for large messages): P - 1 rounds, one
    partner each way per round; a round waits for its own send and receive only.
    """
    return (yield from dispatch_combine(comm, x, sizes, pairwise_exchange, combine))
