"""SMPI's alltoall "pair": pairwise exchange with r XOR i (a power of two of ranks)."""

from __future__ import annotations

from ...patterns.dense import split
from ...patterns.smpi import exchange_steps, needs_pof2
from ..registry import register


def _messages(P, **_):
    """P (P - 1) (step 0, with itself, is a copy)."""
    return P * (P - 1)


@register("smpi-pair", kind="dense", collective="alltoall", messages=_messages,
          check=needs_pof2("smpi-pair", "alltoall pair"))
def alltoall_smpi_pair(comm, x):
    """SMPI's alltoall pair: step i = 1 .. P - 1 exchanges block r XOR i with rank r XOR i.

    As SMPI 3.32's ``alltoall-pair.cpp``: P blocking send-receives (step 0 with itself,
    a copy); P must be a power of two (SMPI refuses other counts).
    """
    P, r = comm.size, comm.rank
    with comm.phase("alltoall"):
        return (yield from exchange_steps(comm, split(x, P), [(r ^ i, r ^ i) for i in range(1, P)]))
