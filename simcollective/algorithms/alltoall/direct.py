"""Direct alltoall (all messages at once)."""

from __future__ import annotations

from ...patterns.dense import split
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("direct", kind="dense", collective="alltoall", messages=_messages)
def alltoall_direct(comm, x):
    """Direct: every rank posts its P - 1 blocks to their destinations at once and receives P - 1.

    One round; the messages share the links as the network shares them (as NCCL's
    alltoall, a group of P sends and receives, does).
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    out = [None] * P
    out[r] = blocks[r]
    with comm.phase("alltoall"):
        peers = [(r + i) % P for i in range(1, P)]
        srcs = [(r - i) % P for i in range(1, P)]
        sends = [comm.isend(d, blocks[d]) for d in peers]
        got = yield comm.waitall([comm.irecv(s) for s in srcs])
        yield comm.waitall(sends)
    for s, b in zip(srcs, got):
        out[s] = b
    return out
