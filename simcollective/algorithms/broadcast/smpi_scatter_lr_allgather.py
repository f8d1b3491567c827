"""SMPI's bcast "scatter_LR_allgather": binomial scatter, then a ring allgather."""

from __future__ import annotations

from ...patterns.smpi import bcast_scatter_messages, scattered_pieces
from ..registry import register


def _messages(P, *, n, dtype, **_):
    """The scatter's non-empty sends, then P (P - 1) ring messages."""
    return bcast_scatter_messages(P, n, dtype) + P * (P - 1)


@register("smpi-scatter-lr-allgather", kind="dense", collective="broadcast", messages=_messages)
def broadcast_smpi_scatter_lr_allgather(comm, x, *, root=0):
    """SMPI's bcast scatter_LR_allgather: scatter pieces of ceil(S / P) bytes down a binomial tree, then a ring allgather.

    As SMPI 3.32's ``bcast-scatter-LR-allgather.cpp`` (Van de Geijn's): relative rank v =
    (r - root) mod P owns piece v, bytes [v s, (v + 1) s) with s = ceil(S / P). Scatter:
    v receives, from r - (lowest set bit of v), everything from its piece to the end that
    its sender holds; then for mask halving it sends to r + mask the part of what it holds
    from piece v + mask on (if any). Allgather: P - 1 ring steps; step i sends to r + 1 the
    piece of rank r - i + 1 and receives that of r - i from r - 1 (empty pieces travel as
    empty messages). SMPI cuts bytes; here pieces are whole elements, so a size whose s
    is not a multiple of the element size is refused.
    """
    P, r = comm.size, comm.rank
    pieces = yield from scattered_pieces(comm, x, root, "smpi-scatter-lr-allgather")
    left, right = (r - 1) % P, (r + 1) % P
    src, nxt = r, left
    with comm.phase("allgather"):
        for _ in range(1, P):
            pieces[(nxt - root) % P] = yield comm.sendrecv(right, pieces[(src - root) % P], left)
            src, nxt = nxt, (nxt - 1) % P
    return pieces
