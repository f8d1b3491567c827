"""Pipelined-chain reduce."""

from __future__ import annotations

from ...patterns.dense import nchunks, relative, split
from ...patterns.rings import CHAIN_CHUNK
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=CHAIN_CHUNK, **_):
    """(P - 1) k."""
    return (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("pipelined-chain", kind="dense", collective="reduce", options=("chunk_size",), messages=_messages)
def reduce_chain(comm, x, *, root=0, chunk_size=CHAIN_CHUNK):
    """Pipelined chain: P-1 -> P-2 -> ... -> root (numbered from the root), chunk by chunk.

    The vector is cut into k = ceil(bytes / ``chunk_size``) chunks (default 128 KiB). The
    last rank sends its chunks one after the other; every other rank receives chunk j from
    v + 1, adds its own and sends the sum on to v - 1 (after its previous send) while the
    next chunk arrives. On a contention-free
    machine with free sums: (P - 2 + k)(alpha + S / (k beta)).
    """
    rel = relative(comm, root)
    P, v = rel.size, rel.rank
    chunks = split(x, nchunks(x.nbytes, chunk_size))
    sending = None
    with comm.phase("reduce"):
        recvs = [rel.irecv(v + 1, tag=j) for j in range(len(chunks))] if v < P - 1 else None
        for j in range(len(chunks)):
            if recvs is not None:
                got = yield recvs[j]
                chunks[j] = yield comm.add(chunks[j], got)
            if v > 0:
                if sending is not None:
                    yield sending
                sending = rel.isend(v - 1, chunks[j], tag=j)
        if sending is not None:
            yield sending
    return chunks if v == 0 else None
