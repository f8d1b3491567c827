"""Pipelined-chain broadcast."""

from __future__ import annotations

from ._common import nchunks, relative, split
from .registry import register

#: default chunk: 128 KiB (Open MPI's "tuned" component segments large pipelined broadcasts
#: in 128 KiB pieces; recalled, not re-checked against its source)
DEFAULT_CHUNK = 128 * 1024


def chain(comm, chunks, root_has: bool):
    """Pass ``chunks`` down the chain 0 -> 1 -> ... -> P - 1 of ``comm``: rank v receives chunk
    j from v - 1 (unless it is rank 0) and sends it on to v + 1 at once, without waiting for
    the send (the next chunk's receive is already posted). Returns the chunks."""
    P, v = comm.size, comm.rank
    out = list(chunks)
    sends = []
    recvs = [comm.irecv(v - 1, tag=j) for j in range(len(out))] if v > 0 else None
    for j in range(len(out)):
        if recvs is not None:
            out[j] = yield recvs[j]
        if v < P - 1:
            sends.append(comm.isend(v + 1, out[j], tag=j))
    if sends:
        yield comm.waitall(sends)
    return out


@register("pipelined-chain", kind="dense", collective="broadcast", options=("chunk_size",))
def broadcast_chain(comm, x, *, root=0, chunk_size=DEFAULT_CHUNK):
    """Pipelined chain: root -> root + 1 -> ... in chunks, each forwarded as soon as it arrives.

    The vector is cut into k = ceil(bytes / ``chunk_size``) chunks (default 128 KiB, Open
    MPI's pipelined-broadcast segment; ``--chunk-size`` sets it). On a contention-free
    machine: (P - 2 + k)(alpha + S / (k beta)).
    """
    rel = relative(comm, root)
    chunks = split(x, nchunks(x.nbytes, chunk_size))
    with comm.phase("broadcast"):
        out = yield from chain(rel, chunks, rel.rank == 0)
    return out
