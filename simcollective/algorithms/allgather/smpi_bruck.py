"""SMPI's allgather "bruck": Bruck's concatenation, ceil(log2 P) steps, any P."""

from __future__ import annotations

from ...patterns.dense import ceil_log2
from ..registry import register


def _messages(P, **_):
    """P ceil(log2 P)."""
    return P * ceil_log2(P) if P > 1 else 0


@register("smpi-bruck", kind="dense", collective="allgather", messages=_messages)
def allgather_smpi_bruck(comm, x):
    """SMPI's allgather bruck: step k sends the first 2^k blocks held to r - 2^k, receives 2^k from r + 2^k.

    As SMPI 3.32's ``allgather-bruck.cpp`` (MPICH's, as modified by Faraj and Yuan): rank
    r holds the blocks of ranks r, r + 1, ... (mod P) in that order; while 2^k <= P / 2 it
    sends the 2^k blocks it holds to r - 2^k and appends the 2^k received from r + 2^k;
    then, if P is not a power of two, it sends its first P - 2^k blocks the same way. The
    final rotation into rank order is a local copy. For P a power of two, on a
    contention-free machine: log2 P alpha + (P - 1) S / (P beta), S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    held = [x]                       # blocks of ranks r, r + 1, ... (mod P)
    pof2 = 1
    with comm.phase("allgather"):
        while pof2 <= P // 2:
            got = yield comm.sendrecv((r - pof2) % P, tuple(held), (r + pof2) % P)
            held += got
            pof2 *= 2
        if P - pof2:
            got = yield comm.sendrecv((r - pof2) % P, tuple(held[:P - pof2]), (r + pof2) % P)
            held += got
    return held[P - r:] + held[:P - r]
