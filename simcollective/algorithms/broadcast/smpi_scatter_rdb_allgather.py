"""SMPI's bcast "scatter_rdb_allgather": binomial scatter, then a recursive-doubling allgather."""

from __future__ import annotations

from ...patterns.dense import relative
from ...patterns.smpi import bcast_scatter_messages, mpich_rdb_messages, rdb_allgather, scattered_pieces
from ..registry import register


def _messages(P, *, n, dtype, **_):
    """The scatter's non-empty sends, then the recursive doubling's exchanges and fix-up sends."""
    return bcast_scatter_messages(P, n, dtype) + mpich_rdb_messages(P)


@register("smpi-scatter-rdb-allgather", kind="dense", collective="broadcast", messages=_messages)
def broadcast_smpi_scatter_rdb_allgather(comm, x, *, root=0):
    """SMPI's bcast scatter_rdb_allgather: scatter pieces of ceil(S / P) bytes down a binomial tree, then MPICH's recursive-doubling allgather.

    As SMPI 3.32's ``bcast-scatter-rdb-allgather.cpp`` (MPICH's long-message broadcast):
    the scatter of ``smpi-scatter-lr-allgather``, then, over ranks numbered from the root,
    the allgather of ``smpi-rdb`` on the pieces (each step sends the pieces of the rank's
    subtree, empty ones included; for P not a power of two MPICH's fix-up passes the
    pieces of an incomplete subtree on). SMPI cuts bytes; here pieces are whole elements,
    so a size whose ceil(S / P) bytes is not a multiple of the element size is refused.
    """
    if comm.size == 1:
        return x
    have = yield from scattered_pieces(comm, x, root, "smpi-scatter-rdb-allgather")
    with comm.phase("allgather"):
        return (yield from rdb_allgather(relative(comm, root), have))
