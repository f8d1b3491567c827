"""NCCL-style pipelined ring broadcast."""

from __future__ import annotations

from ...patterns.dense import nchunks, relative, split
from ...patterns.rings import chain
from ..registry import register

#: NCCL's SIMPLE-protocol step: NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8)
NCCL_STEP = 512 * 1024


def _messages(P, *, n, dtype, chunk_size=NCCL_STEP, **_):
    """(P - 1) k."""
    return (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("ring", kind="dense", collective="broadcast", options=("chunk_size",), messages=_messages)
def broadcast_ring(comm, x, *, root=0, chunk_size=NCCL_STEP):
    """NCCL-style ring: the ring in rank order opened after the rank before the root, in 512 KiB steps.

    NCCL broadcasts along its ring starting at the root: root -> root + 1 -> ... ->
    root - 1, the data cut into steps of NCCL_BUFFSIZE / NCCL_STEPS = 512 KiB (SIMPLE
    protocol; ``--chunk-size`` sets it) that are forwarded as they arrive. The same chain
    as ``pipelined-chain`` with NCCL's step size instead of a chosen segment.
    """
    rel = relative(comm, root)
    chunks = split(x, nchunks(x.nbytes, chunk_size))
    with comm.phase("broadcast"):
        out = yield from chain(rel, chunks)
    return out
