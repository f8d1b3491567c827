"""Ring allreduce (reduce-scatter then allgather, P - 1 steps each)."""

from __future__ import annotations

from ...data.blocks import largest_block
from ...patterns.dense import flatten, nchunks, split
from ...patterns.rings import ring_allgather, ring_reduce_scatter
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=None, **_):
    """2 P (P - 1) k: two ring passes of P - 1 steps, each block in k chunks (k from the
    largest block)."""
    if P < 2:
        return 0
    largest = largest_block(n, P) * dtype.itemsize
    return 2 * P * (P - 1) * nchunks(largest, chunk_size)


@register("ring", kind="dense", options=("chunk_size",), messages=_messages)
def ring(comm, x, *, chunk_size=None):
    """Ring allreduce: reduce-scatter then allgather, P-1 steps each.

    Blocks follow ``block_bounds(N, P)``. Reduce-scatter step s: send block (r - s) to
    r + 1, receive block (r - s - 1) from r - 1 and add; rank r then owns block r + 1.
    Allgather step s: send block (r + 1 - s), receive block (r - s).

    ``chunk_size`` (bytes, default ``None`` = one message per block and step): every
    block is cut into ``ceil(largest block bytes / chunk_size)`` chunks sent as
    consecutive messages; the sum of a chunk is computed while the next one is in flight.
    With ``chunk_size`` >= the block size this is exactly the unchunked ring.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [x]
    largest = largest_block(len(x), P) * x.dtype.itemsize
    k = nchunks(largest, chunk_size)
    if k == 1:  # one payload per block, each cut from x when the reduce-scatter reaches it
        blocks = [None] * P
        with comm.phase("reduce-scatter"):
            yield from ring_reduce_scatter(comm, blocks, owns=(r + 1) % P, source=x, flat=True)
        with comm.phase("allgather"):
            yield from ring_allgather(comm, blocks, owns=(r + 1) % P, flat=True)
        return blocks
    blocks = [split(b, k) for b in split(x, P)]
    with comm.phase("reduce-scatter"):
        yield from ring_reduce_scatter(comm, blocks, owns=(r + 1) % P)
    with comm.phase("allgather"):
        yield from ring_allgather(comm, blocks, owns=(r + 1) % P)
    return flatten(blocks)
