"""NCCL's alltoallv: grouped send/recv in p2p chunks."""

from __future__ import annotations

from collections import deque

from ...nccl.protocols import NCCL_STEPS, p2p_chunk_bytes
from ...patterns.alltoallv import dispatch_combine, own_block_only
from ...patterns.dense import nchunks, split
from ..registry import register


def _pass_messages(counts, servers, itemsize: int) -> int:
    P = len(servers)
    return sum(nchunks(int(counts[s][d]) * itemsize, p2p_chunk_bytes(servers[s] == servers[d]))
               for s in range(P) for d in range(P) if s != d and counts[s][d])


def _messages(P, *, sizes, servers, dtype, combine=False, **_):
    """Every nonzero block off the diagonal in ceil(bytes / p2p chunk) chunks, per pass."""
    n = _pass_messages(sizes, servers, dtype.itemsize)
    return 2 * n if combine else n


def nccl_exchange(comm, blocks, counts, name):
    """The group of sends to r + i and receives from r - i (NCCL's p2p round order), each
    block cut into ceil(bytes / chunk) chunks of NCCL's p2p chunk size; chunk wave c is
    posted once wave c - NCCL_STEPS is done (at most NCCL_STEPS chunks of a peer in flight)."""
    P, r = comm.size, comm.rank
    item = blocks[r].dtype.itemsize

    def k(s, d):
        return nchunks(int(counts[s][d]) * item, p2p_chunk_bytes(comm.server(s) == comm.server(d)))

    dsts = [(r + i) % P for i in range(1, P) if counts[r][(r + i) % P]]
    srcs = [(r - i) % P for i in range(1, P) if counts[(r - i) % P][r]]
    chunks = {d: split(blocks[d], k(r, d)) for d in dsts}
    nrecv = {s: k(s, r) for s in srcs}
    recvs = {s: [] for s in srcs}
    waves = deque()
    with comm.phase(name):
        for c in range(max([len(v) for v in chunks.values()] + list(nrecv.values()) + [0])):
            if len(waves) == NCCL_STEPS:
                yield comm.waitall(waves.popleft())
            wave = []
            for s in srcs:
                if c < nrecv[s]:
                    recvs[s].append(comm.irecv(s, tag=c))
                    wave.append(recvs[s][-1])
            wave += [comm.isend(d, chunks[d][c], tag=c) for d in dsts if c < len(chunks[d])]
            waves.append(wave)
        yield comm.waitall([q for w in waves for q in w])
    out = own_block_only(blocks, r)
    for s in srcs:
        out[s] = tuple(q.value for q in recvs[s])
    return out


@register("nccl", kind="dense", collective="alltoallv", messages=_messages)
def alltoallv_nccl(comm, x, *, sizes, combine=False):
    """NCCL's alltoallv: one group of ncclSend/ncclRecv, each block in NCCL's p2p chunks.

    As NCCL runs alltoall(v) (grouped point-to-point over its p2p channels): every rank
    sends to r + i and receives from r - i for i = 1..P-1 at once, a block of S bytes in
    ceil(S / chunk) chunks (chunk 512 KiB inside a node, 128 KiB across nodes), at most
    NCCL_STEPS = 8 chunks of one peer in flight. The route latencies are the graph's (NCCL's
    tuning model has no p2p latency figure); channels per peer are not modelled apart
    (in the flow model a pair's chunks share one route whatever channel carries them).
    """
    return (yield from dispatch_combine(comm, x, sizes, nccl_exchange, combine))
