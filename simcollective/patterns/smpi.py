"""Helpers of the ``smpi-*`` algorithms: SMPI's (SimGrid 3.32) collectives as SMPI has them.

The rank-count requirement SMPI puts on some of its algorithms (a power of two), as a
registry ``check``, so a run is refused before it starts, as SMPI refuses it; MPICH's
recursive-doubling allgather with its fix-up for any P; MPICH's binomial scatter of a
broadcast's pieces of ceil(S / P) bytes.
"""

from __future__ import annotations

from ..errors import UserInputError
from .sparse import is_pof2

__all__ = ["needs_pof2", "subtree_fix_up", "mpich_rdb_messages", "exchange_steps", "rdb_allgather", "piece_elements",
           "piece_counts", "bcast_scatter", "bcast_scatter_messages", "scattered_pieces"]


def needs_pof2(name: str, smpi_name: str):
    """A registry ``check``: ``name`` (SMPI's ``smpi_name``) runs on a power-of-two number
    of ranks only, as in SMPI, which refuses other counts."""
    def check(nranks: int, **_) -> None:
        if not is_pof2(nranks):
            raise UserInputError(f"{name} needs a power-of-two number of ranks (SMPI's {smpi_name} refuses others), "
                                 f"not {nranks}: use 2, 4, 8, 16, 32, 64, ...")
    return check


def subtree_fix_up(comm, mask: int, i: int, my_root: int, data):
    """MPICH's fix-up for P not a power of two (SMPI's allgather rdb, reduce_scatter
    mpich_rdb), after step i (``mask`` = 2^i) of a rank whose partner subtree is
    incomplete: the ranks of its subtree that had a partner (the first P - my_root - mask)
    pass ``data`` down a binary tree, for tmp = mask/2, ..., 1, to those that had none.
    Returns ``(data, received)``: what the rank holds after it, and whether it received."""
    P, r = comm.size, comm.rank
    completed = P - my_root - mask
    k, tmp, received = i, mask >> 1, False
    while tmp:
        dst = r ^ tmp
        root = (r >> k) << k
        if dst > r and r < root + completed <= dst:
            yield comm.send(dst, data)
        elif dst < r and dst < root + completed <= r:
            data, received = (yield comm.recv(dst)), True
        tmp >>= 1
        k -= 1
    return data, received


def mpich_rdb_messages(P: int) -> int:
    """Messages of MPICH's recursive doubling with :func:`subtree_fix_up` on P ranks."""
    total = 0
    for r in range(P):
        mask, i = 1, 0
        while mask < P:
            dst = r ^ mask
            dst_root, my_root = (dst >> i) << i, (r >> i) << i
            total += dst < P
            if dst_root + mask > P:
                completed, k, tmp = P - my_root - mask, i, mask >> 1
                while tmp:
                    d, root = r ^ tmp, (r >> k) << k
                    total += d > r and r < root + completed <= d
                    tmp >>= 1
                    k -= 1
            mask <<= 1
            i += 1
    return total


def exchange_steps(comm, blocks: list, peers):
    """One blocking send-receive per step: for each ``(dst, src)`` in order, send
    ``blocks[dst]`` to ``dst`` and receive from ``src``. Returns the P received parts in
    rank order (the rank's own ``blocks[rank]`` in its place)."""
    out = [None] * comm.size
    out[comm.rank] = blocks[comm.rank]
    for dst, src in peers:
        out[src] = yield comm.sendrecv(dst, blocks[dst], src)
    return out


def rdb_allgather(comm, have: list):
    """MPICH's recursive-doubling allgather (SMPI's allgather rdb) of the parts ``have``
    (P slots, this rank's own filled in): at step i (mask = 2^i) exchange the parts of
    this rank's subtree (from its root, the rank with its i low bits cleared) with rank
    XOR mask if it exists, then :func:`subtree_fix_up` where the partner subtree is
    incomplete. Fills and returns ``have``."""
    P, r = comm.size, comm.rank
    curr, last = 1, 0           # parts held (from the subtree root on), parts last received
    i, mask = 0, 1
    while mask < P:
        dst = r ^ mask
        dst_root, my_root = (dst >> i) << i, (r >> i) << i
        if dst < P:
            got = yield comm.sendrecv(dst, tuple(have[my_root:my_root + curr]), dst)
            have[dst_root:dst_root + len(got)] = got
            last = len(got)
            curr += last
        if dst_root + mask > P:
            offset = my_root + mask
            got, received = yield from subtree_fix_up(comm, mask, i, my_root, tuple(have[offset:offset + last]))
            if received:
                have[offset:offset + len(got)] = got
                last = len(got)
                curr += last
        mask <<= 1
        i += 1
    return have


def piece_elements(name: str, n: int, dtype, P: int) -> int:
    """Elements of a broadcast piece: ceil(S / P) bytes, S = n elements of ``dtype``; a
    one-line error when that is not a whole number of elements (SMPI cuts bytes)."""
    item = dtype.itemsize
    s_bytes = -(-n * item // P)
    if s_bytes % item:
        raise UserInputError(f"{name} cuts the {n * item} bytes into {P} pieces of {s_bytes} bytes, "
                             f"not whole {dtype} elements: use a size whose P-th part is a multiple of {item} bytes")
    return s_bytes // item


def piece_counts(n: int, s: int, P: int) -> list:
    """Elements of each relative rank's piece: s, ..., s, the rest, 0, ..."""
    return [max(0, min(s, n - j * s)) for j in range(P)]


def bcast_scatter(comm, x, root: int, s: int):
    """MPICH's binomial scatter of a broadcast (SMPI's ``scatter_for_bcast``): relative
    rank v receives, from r - (lowest set bit of v), everything from its piece v (s
    elements from v s) to the end that its sender holds, then for mask halving sends to
    r + mask the part from piece v + mask on (if any). Returns what the rank holds (from
    piece v on)."""
    P, r = comm.size, comm.rank
    n, v = len(x), (r - root) % P
    held = x if r == root else x[:0]
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


def bcast_scatter_messages(P: int, n: int, dtype) -> int:
    """The non-empty sends of :func:`bcast_scatter` (pieces sized as :func:`piece_elements`)."""
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
    return sends


def scattered_pieces(comm, x, root: int, name: str):
    """The scatter phase of SMPI's scatter-allgather broadcasts: the pieces (sized by
    :func:`piece_elements`, refused for algorithm ``name`` if not whole elements) sent down
    :func:`bcast_scatter`. Returns P slots in relative rank order, this rank's own piece
    filled in."""
    P, n = comm.size, len(x)
    s = piece_elements(name, n, x.dtype, P)
    v = (comm.rank - root) % P
    with comm.phase("scatter"):
        held = yield from bcast_scatter(comm, x, root, s)
    have = [None] * P
    have[v] = held[:piece_counts(n, s, P)[v]]
    return have
