"""Rabenseifner's allreduce: recursive-halving reduce-scatter, recursive-doubling allgather."""

from __future__ import annotations

from ...data.blocks import block_bounds
from ...patterns.dense import pof2_floor, real_rank
from ...patterns.doubling import fold, unfold
from ..registry import register


def _messages(P, **_):
    """2 p' log2 p' + 2 rem: halving and doubling steps over p', one fold and one unfold
    message per extra rank."""
    if P < 2:
        return 0
    p2 = pof2_floor(P)
    return 2 * p2 * (p2.bit_length() - 1) + 2 * (P - p2)


@register("rabenseifner", kind="dense", messages=_messages)
def rabenseifner(comm, x):
    """Rabenseifner: reduce-scatter by recursive halving, allgather by recursive doubling.

    The vector is cut into p' blocks with ``block_bounds(N, p')`` (p' = the largest power
    of two <= P; extra ranks are folded). A window is a range of blocks; at the step with
    ``mask`` the partner is vrank XOR mask, the lower one keeps the lower half of the
    window (split on a block boundary, so any N works), sends the other half and adds
    what it receives. Virtual rank v ends owning block bit-reverse(v); the allgather
    replays the steps in reverse, exchanging whole windows (as lists of blocks).
    """
    P = comm.size
    if P == 1:
        return [x]
    p2 = pof2_floor(P)
    rem = P - p2
    n = len(x)
    v, x = yield from fold(comm, x)
    parts = None
    if v is not None:
        edges = [a for a, _ in block_bounds(n, p2)] + [n]   # block b = [edges[b], edges[b+1])
        lo, hi = 0, p2            # window, in blocks
        cur = x                   # this rank's partial sums over the window
        steps = []
        with comm.phase("reduce-scatter"):
            mask = 1
            while mask < p2:
                partner = real_rank(v ^ mask, rem)
                mid = (lo + hi) // 2
                cut = edges[mid] - edges[lo]
                lower = not (v & mask)
                keep, give = (cur[:cut], cur[cut:]) if lower else (cur[cut:], cur[:cut])
                got = yield comm.sendrecv(partner, give, partner)
                cur = yield comm.add(keep, got)
                steps.append((partner, lower))
                lo, hi = (lo, mid) if lower else (mid, hi)
                mask <<= 1
        parts = [cur]
        with comm.phase("allgather"):
            for partner, lower in reversed(steps):
                got = yield comm.sendrecv(partner, parts, partner)
                parts = parts + got if lower else got + parts
    return (yield from unfold(comm, parts))
