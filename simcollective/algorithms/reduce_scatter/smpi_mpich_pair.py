"""SMPI's reduce_scatter "mpich_pair": pairwise exchange, step i sends to r + i."""

from __future__ import annotations

from ..registry import register
from .direct import reduce_scatter_direct


def _messages(P, **_):
    """P (P - 1)."""
    return P * (P - 1)


@register("smpi-mpich-pair", kind="dense", collective="reduce-scatter", messages=_messages)
def reduce_scatter_smpi_mpich_pair(comm, x):
    """SMPI's reduce_scatter mpich_pair: step i sends block r + i to r + i, receives r's block from r - i and adds it.

    As SMPI 3.32's ``reduce_scatter-mpich.cpp`` (``reduce_scatter__mpich_pair``, a
    commutative sum, equal counts): P - 1 blocking send-receives of one block of the
    rank's input each (never a partial sum), for i = 1 .. P - 1; rank r accumulates block
    r. On a contention-free machine with free sums: (P - 1)(alpha + S / (P beta)), S =
    P x block bytes. The same messages, in the same order, as the project's ``direct``
    (which it runs).
    """
    return (yield from reduce_scatter_direct(comm, x))
