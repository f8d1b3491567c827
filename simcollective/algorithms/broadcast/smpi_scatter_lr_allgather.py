"""SMPI's bcast "scatter_LR_allgather": binomial scatter, then a ring allgather."""

from __future__ import annotations

from ...errors import UserInputError
from ..registry import register


def _counts(n: int, s: int, P: int) -> list:
    """Elements of each relative rank's piece: s, ..., s, the rest, 0, ..."""
    return [max(0, min(s, n - j * s)) for j in range(P)]


def _messages(P, *, n, dtype, **_):
    """The scatter's non-empty sends, then P (P - 1) ring messages."""
    if P < 2:
        return 0
    s = max(1, -(-n * dtype.itemsize // P) // dtype.itemsize)
    sends = 0
    for v in range(P):
        held = n if v == 0 else max(0, n - v * s)
        mask = (v & -v) >> 1 if v else 1 << (P - 1).bit_length() - 1
        while mask > 0:
            if v + mask < P and held - s * mask > 0:
                sends += 1
                held = s * mask
            mask >>= 1
    return sends + P * (P - 1)


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
    n, item = len(x), x.dtype.itemsize
    s_bytes = -(-n * item // P)
    if s_bytes % item:
        raise UserInputError(f"smpi-scatter-lr-allgather cuts the {n * item} bytes into {P} pieces of {s_bytes} bytes, "
                             f"not whole {x.dtype} elements: use a size whose P-th part is a multiple of {item} bytes")
    s = s_bytes // item
    v = (r - root) % P
    held = x if r == root else x[:0]          # elements [v s, v s + len(held))
    with comm.phase("scatter"):
        held = yield from _scatter(comm, held, v, s, n)
    counts = _counts(n, s, P)
    pieces = [None] * P
    pieces[v] = held[:counts[v]]
    if r == root:
        pieces = [x[j * s:j * s + counts[j]] for j in range(P)]
    left, right = (r - 1) % P, (r + 1) % P
    src, nxt = r, left
    with comm.phase("allgather"):
        for _ in range(1, P):
            pieces[(nxt - root) % P] = yield comm.sendrecv(right, pieces[(src - root) % P], left)
            src, nxt = nxt, (nxt - 1) % P
    return pieces


def _scatter(comm, held, v, s, n):
    """The binomial scatter: returns what this rank holds after it (from piece v on)."""
    P, r = comm.size, comm.rank
    mask = 1
    while mask < P:
        if v & mask:
            if n - v * s > 0:
                held = yield comm.recv((r - mask) % P)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if v + mask < P:
            send = len(held) - s * mask
            if send > 0:
                yield comm.send((r + mask) % P, held[s * mask:])
                held = held[:s * mask]
        mask >>= 1
    return held
