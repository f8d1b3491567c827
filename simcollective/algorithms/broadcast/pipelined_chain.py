"""Pipelined-chain broadcast."""

from __future__ import annotations

from ...patterns.dense import nchunks, relative, split
from ..registry import register

#: default chunk: 128 KiB (Open MPI's "tuned" component segments large pipelined broadcasts
#: in 128 KiB pieces; recalled, not re-checked against its source)
DEFAULT_CHUNK = 128 * 1024


def chain(comm, chunks):
    """Pass ``chunks`` down the chain 0 -> 1 -> ... -> P - 1 of ``comm``, pipelined: every
    receive is posted at once; rank v forwards chunk j to v + 1 as soon as it has it and
    its send of chunk j - 1 is done (one chunk at a time on the outgoing link). Returns
    the chunks (rank 0's own)."""
    P, v = comm.size, comm.rank
    out = list(chunks)
    recvs = [comm.irecv(v - 1, tag=j) for j in range(len(out))] if v > 0 else None
    sending = None
    for j in range(len(out)):
        if recvs is not None:
            out[j] = yield recvs[j]
        if v < P - 1:
            if sending is not None:
                yield sending
            sending = comm.isend(v + 1, out[j], tag=j)
    if sending is not None:
        yield sending
    return out


def _messages(P, *, n, dtype, chunk_size=DEFAULT_CHUNK, **_):
    """(P - 1) k."""
    return (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("pipelined-chain", kind="dense", collective="broadcast", options=("chunk_size",), messages=_messages)
def broadcast_chain(comm, x, *, root=0, chunk_size=DEFAULT_CHUNK):
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
