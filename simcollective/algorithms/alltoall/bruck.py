"""Bruck's alltoall (ceil(log2 P) rounds, for small blocks)."""

from __future__ import annotations

from ...patterns.dense import ceil_log2, split
from ..registry import register


def _messages(P, **_):
    """P ceil(log2 P)."""
    return P * ceil_log2(P)


@register("bruck", kind="dense", collective="alltoall", messages=_messages)
def alltoall_bruck(comm, x):
    """Bruck: ceil(log2 P) rounds; round j sends every block whose index has bit j set to r + 2^j.

    Local rotation: slot i holds the block for rank r + i. Round j (dist = 2^j) sends the
    slots i with bit j set, in one message, to r + dist and replaces them with the slots
    received from r - dist. Afterwards slot i holds the block rank r - i sent to r (a local
    reordering, free). Fewer messages than pairwise (log P instead of P - 1) at the price
    of moving each block up to log P times: with P a power of two every round carries
    S / 2 bytes, so on a contention-free machine log2 P (alpha + S / (2 beta)).
    """
    P, r = comm.size, comm.rank
    blocks = split(x, P)
    slots = [blocks[(r + i) % P] for i in range(P)]
    with comm.phase("alltoall"):
        dist = 1
        while dist < P:
            idx = [i for i in range(P) if i & dist]
            got = yield comm.sendrecv((r + dist) % P, tuple(slots[i] for i in idx), (r - dist) % P)
            for i, b in zip(idx, got):
                slots[i] = b
            dist <<= 1
    return [slots[(r - j) % P] for j in range(P)]
