"""Ring reduce-scatter (P - 1 steps)."""

from __future__ import annotations

from ...data.blocks import block_bounds
from ...patterns.dense import flatten, nchunks, split
from ...patterns.rings import ring_reduce_scatter
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=None, **_):
    """P (P - 1) k, k chunks per block (from block 0)."""
    if P < 2:
        return 0
    a, b = block_bounds(n, P)[0]
    return P * (P - 1) * nchunks((b - a) * dtype.itemsize, chunk_size)


@register("ring", kind="dense", collective="reduce-scatter", options=("chunk_size",), messages=_messages)
def reduce_scatter_ring(comm, x, *, chunk_size=None):
    """Ring reduce-scatter: P - 1 steps; step s sends partial block r - s - 1 to r + 1 and adds block r - s - 2.

    The input (P blocks of ``count`` elements) is cut into its P blocks; after the pass
    rank r owns block r summed over all ranks. ``chunk_size`` (bytes, default ``None`` =
    one message per block and step) cuts every block into chunks sent one after the
    other, the sum of one overlapping the transfer of the next. On a contention-free
    machine with free sums: (P - 1)(alpha + S / (P beta)), S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [x]
    bounds = split(x, P)
    k = nchunks(bounds[0].nbytes, chunk_size)
    blocks = [split(b, k) for b in bounds]
    with comm.phase("reduce-scatter"):
        yield from ring_reduce_scatter(comm, blocks, owns=r)
    return flatten([blocks[r]])
