"""Ring allgather (P - 1 steps)."""

from __future__ import annotations

from ...patterns.dense import flatten, nchunks, split

from ...patterns.rings import ring_allgather
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=None, **_):
    """P (P - 1) k, k chunks per block."""
    return P * (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("ring", kind="dense", collective="allgather", options=("chunk_size",), messages=_messages)
def allgather_ring(comm, x, *, chunk_size=None):
    """Ring allgather: P - 1 steps, step s sends block r - s to r + 1 and receives r - s - 1.

    Rank r starts with its block (its input); at step s it sends block (r - s) mod P to
    r + 1 and receives block (r - s - 1) mod P from r - 1. ``chunk_size`` (bytes, default
    ``None`` = one message per block and step) cuts every block into
    ``ceil(block bytes / chunk_size)`` chunks sent one after the other. On a contention-free
    machine: (P - 1)(alpha + S / (P beta)) with S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [x]
    k = nchunks(x.nbytes, chunk_size)
    blocks = [[None] * k for _ in range(P)]
    blocks[r] = split(x, k)
    with comm.phase("allgather"):
        yield from ring_allgather(comm, blocks, owns=r)
    return flatten(blocks)
