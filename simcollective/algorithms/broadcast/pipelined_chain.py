"""Pipelined-chain broadcast."""

from __future__ import annotations

from ...patterns.dense import nchunks, relative, split
from ...patterns.rings import CHAIN_CHUNK, chain
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=CHAIN_CHUNK, **_):
    """(P - 1) k."""
    return (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("pipelined-chain", kind="dense", collective="broadcast", options=("chunk_size",), messages=_messages)
def broadcast_chain(comm, x, *, root=0, chunk_size=CHAIN_CHUNK):
    """Pipelined chain: root -> root + 1 -> ... in chunks, each forwarded as soon as it arrives.

    The vector is cut into k = ceil(bytes / ``chunk_size``) chunks (default 128 KiB, Open
    MPI's pipelined-broadcast segment; ``--chunk-size`` sets it). On a contention-free
    machine: (P - 2 + k)(alpha + S / (k beta)).
    """
    rel = relative(comm, root)
    chunks = split(x, nchunks(x.nbytes, chunk_size))
    with comm.phase("broadcast"):
        out = yield from chain(rel, chunks)
    return out
