"""SMPI's allgather "ring": a shift, rank r's block goes to r + i at step i."""

from __future__ import annotations

from ...patterns.smpi import exchange_steps
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("smpi-ring", kind="dense", collective="allgather", messages=_messages)
def allgather_smpi_ring(comm, x):
    """SMPI's allgather ring (a shift): step i sends rank r's own block to r + i, receives r - i's.

    As SMPI 3.32's ``allgather-ring.cpp``: P - 1 blocking send-receives, each of one
    block (the rank's input, never a forwarded one), to rank (r + i) mod P and from rank
    (r - i) mod P, for i = 1 .. P - 1. Unlike the project's ``ring`` (a neighbour ring
    forwarding blocks to r + 1), every step reaches a farther rank. On a contention-free
    machine: (P - 1)(alpha + S / (P beta)) with S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    with comm.phase("allgather"):
        return (yield from exchange_steps(comm, [x] * P, [((r + i) % P, (r - i) % P) for i in range(1, P)]))
