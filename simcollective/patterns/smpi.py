"""Helpers of the ``smpi-*`` algorithms: SMPI's (SimGrid 3.32) collectives as SMPI has them.

The rank-count requirement SMPI puts on some of its algorithms (a power of two), as a
registry ``check``, so a run is refused before it starts, as SMPI refuses it.
"""

from __future__ import annotations

from ..errors import UserInputError
from .sparse import is_pof2

__all__ = ["needs_pof2", "subtree_fix_up", "mpich_rdb_messages", "exchange_steps"]


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
