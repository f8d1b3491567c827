"""SMPI's alltoall "ring": step i sends to r + i and receives from r - i."""

from __future__ import annotations

from ...patterns.dense import split
from ...patterns.smpi import exchange_steps
from ..registry import register


def _messages(P, **_):
    """P (P - 1) (step 0, with itself, is a copy)."""
    return P * (P - 1)


@register("smpi-ring", kind="dense", collective="alltoall", messages=_messages)
def alltoall_smpi_ring(comm, x):
    """SMPI's alltoall ring: step i = 1 .. P - 1 sends block r + i to r + i, receives block r - i from r - i.

    As SMPI 3.32's ``alltoall-ring.cpp`` (step 0, with itself, is a copy). The same
    messages, in the same order, as the project's ``pairwise``.
    """
    P, r = comm.size, comm.rank
    with comm.phase("alltoall"):
        return (yield from exchange_steps(comm, split(x, P), [((r + i) % P, (r - i) % P) for i in range(1, P)]))
