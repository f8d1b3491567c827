"""SMPI's reduce_scatter "mpich_rdb": MPICH's recursive doubling, every block but the partner subtree's."""

from __future__ import annotations

from ...patterns.dense import split
from ...patterns.smpi import mpich_rdb_messages, subtree_fix_up
from ..registry import register


def _messages(P, **_):
    """The steps' exchanges with an existing partner, and the fix-up's sends."""
    return mpich_rdb_messages(P)


@register("smpi-mpich-rdb", kind="dense", collective="reduce-scatter", messages=_messages)
def reduce_scatter_smpi_mpich_rdb(comm, x):
    """SMPI's reduce_scatter mpich_rdb: step mask = 2^i exchanges all blocks outside the subtree of 2^i ranks.

    As SMPI 3.32's ``reduce_scatter-mpich.cpp`` (``reduce_scatter__mpich_rdb``, a
    commutative sum, equal counts): every rank keeps partial sums of all P blocks. At
    step i the partner is r XOR 2^i; a rank sends the blocks outside its own subtree
    (the 2^i ranks from r with its i low bits cleared) and receives those outside the
    partner's, then adds them. When the partner does not exist (P not a power of two),
    the ranks of the subtree that had one pass what they received down a binary tree to
    those that had none (MPICH's rule). Each step moves (P - 2^i) blocks, so the volume
    is about log2 P times the ring's.
    """
    P, r = comm.size, comm.rank
    sums = split(x, P)
    mask, i = 1, 0
    with comm.phase("reduce-scatter"):
        while mask < P:
            dst = r ^ mask
            dst_root, my_root = (dst >> i) << i, (r >> i) << i
            send = [j for j in range(P) if not my_root <= j < my_root + mask]
            recv = [j for j in range(P) if not dst_root <= j < dst_root + mask]
            got = None
            if dst < P:
                got = yield comm.sendrecv(dst, tuple(sums[j] for j in send), dst)
            if dst_root + mask > P:
                got, _ = yield from subtree_fix_up(comm, mask, i, my_root, got)
            if got is not None:
                for j, g in zip(recv, got):
                    sums[j] = yield comm.add(sums[j], g)
            mask <<= 1
            i += 1
    return sums[r]
