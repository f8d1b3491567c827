"""Bruck's allgather (ceil(log2 P) steps, any P)."""

from __future__ import annotations

from ...patterns.dense import ceil_log2
from ..registry import register


def _messages(P, **_):
    """P ceil(log2 P)."""
    return P * ceil_log2(P)


@register("bruck", kind="dense", collective="allgather", messages=_messages)
def allgather_bruck(comm, x):
    """Bruck: ceil(log2 P) steps; step j sends the first min(2^j, P - 2^j) blocks held to r - 2^j.

    Rank r holds the blocks r, r + 1, ... (mod P) in that order. At step j (dist = 2^j)
    it sends its first min(dist, P - held) blocks to r - dist and appends the ones it
    receives from r + dist (which are blocks r + dist, ...). At the end the list is rotated
    into rank order (a local step, free). On a contention-free machine with P a power of
    two: log2 P alpha + (P - 1) S / (P beta).
    """
    P, r = comm.size, comm.rank
    held = [x]
    with comm.phase("allgather"):
        dist = 1
        while dist < P:
            cnt = min(dist, P - len(held))
            got = yield comm.sendrecv((r - dist) % P, tuple(held[:cnt]), (r + dist) % P)
            held.extend(got)
            dist <<= 1
    return [held[(j - r) % P] for j in range(P)]
