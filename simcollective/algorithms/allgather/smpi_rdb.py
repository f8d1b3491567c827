"""SMPI's allgather "rdb": MPICH's recursive doubling, with its tree fix-up for any P."""

from __future__ import annotations

from ...patterns.smpi import mpich_rdb_messages, rdb_allgather
from ..registry import register


def _messages(P, **_):
    """The steps' exchanges with an existing partner, and the fix-up's sends."""
    return mpich_rdb_messages(P)


@register("smpi-rdb", kind="dense", collective="allgather", messages=_messages)
def allgather_smpi_rdb(comm, x):
    """SMPI's allgather rdb: recursive doubling on subtrees of 2^i ranks, any P (MPICH's rule).

    As SMPI 3.32's ``allgather-rdb.cpp``: at step i (mask = 2^i) rank r exchanges the
    blocks of its subtree (those from r's subtree root, r with its i low bits cleared)
    with r XOR mask, if that rank exists. When P is not a power of two, a subtree whose
    partner subtree is incomplete (its root + mask > P) then passes on the blocks it just
    received: down the levels j < i, a rank holding them sends them to r XOR 2^j if that
    rank lacks them. For P a power of two, on a contention-free machine:
    log2 P alpha + (P - 1) S / (P beta), S = P x block bytes.
    """
    have = [None] * comm.size
    have[comm.rank] = x
    with comm.phase("allgather"):
        return (yield from rdb_allgather(comm, have))
