"""SMPI's allgather "pair": pairwise exchange with r XOR i (a power of two of ranks)."""

from __future__ import annotations

from ...patterns.smpi import exchange_steps, needs_pof2
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("smpi-pair", kind="dense", collective="allgather", messages=_messages,
          check=needs_pof2("smpi-pair", "allgather pair"))
def allgather_smpi_pair(comm, x):
    """SMPI's allgather pair: step i exchanges the rank's own block with rank r XOR i.

    As SMPI 3.32's ``allgather-pair.cpp``: P - 1 blocking send-receives of one block (the
    rank's input) with partner r XOR i, for i = 1 .. P - 1; P must be a power of two
    (SMPI refuses other counts). On a contention-free machine:
    (P - 1)(alpha + S / (P beta)) with S = P x block bytes.
    """
    P, r = comm.size, comm.rank
    with comm.phase("allgather"):
        return (yield from exchange_steps(comm, [x] * P, [(r ^ i, r ^ i) for i in range(1, P)]))
