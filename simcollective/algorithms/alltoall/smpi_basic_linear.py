"""SMPI's alltoall "basic_linear": every receive and send posted at once."""

from __future__ import annotations

from ...patterns.dense import split
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("smpi-basic-linear", kind="dense", collective="alltoall", messages=_messages)
def alltoall_smpi_basic_linear(comm, x):
    """SMPI's alltoall basic_linear: post receives from r + 1, r + 2, ..., sends to r - 1, r - 2, ..., wait for all.

    As SMPI 3.32's ``alltoall-basic-linear.cpp``: the P - 1 receives are posted first, in
    the order r + 1, r + 2, ... (mod P), then the P - 1 sends of block j to rank j, in
    the order r - 1, r - 2, ... (mod P), and the rank waits for all of them.
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    out = [None] * P
    out[r] = blocks[r]
    srcs = [(r + j) % P for j in range(1, P)]
    with comm.phase("alltoall"):
        recvs = [comm.irecv(s) for s in srcs]
        sends = [comm.isend(d, blocks[d]) for d in ((r - j) % P for j in range(1, P))]
        got = yield comm.waitall(recvs + sends)
    for s, g in zip(srcs, got):
        out[s] = g
    return out
