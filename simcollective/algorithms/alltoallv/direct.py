"""Direct alltoallv (every nonzero block at once)."""

from __future__ import annotations

from ...patterns.alltoallv import block_messages, dispatch_combine, own_block_only
from ..registry import register


def direct_exchange(comm, blocks, counts, name):
    """Post every nonzero send and receive at once, then wait for all of them."""
    P, r = comm.size, comm.rank
    out = own_block_only(blocks, r)
    with comm.phase(name):
        srcs = [(r - i) % P for i in range(1, P) if counts[(r - i) % P][r]]
        sends = [comm.isend(d, blocks[d]) for d in ((r + i) % P for i in range(1, P)) if counts[r][d]]
        got = yield comm.waitall([comm.irecv(s) for s in srcs])
        yield comm.waitall(sends)
    for s, b in zip(srcs, got):
        out[s] = b
    return out


@register("direct", kind="dense", collective="alltoallv", messages=block_messages)
def alltoallv_direct(comm, x, *, sizes, combine=False):
    """Direct: every rank posts its nonzero blocks to their destinations at once (one round).

    As MPI's and NCCL's alltoallv over point-to-point: one group of sends and receives,
    sharing the links as the network shares them; zero-size pairs send nothing. On a
    contention-free machine: max over the messages of alpha + bytes / beta.
    """
    return (yield from dispatch_combine(comm, x, sizes, direct_exchange, combine))
