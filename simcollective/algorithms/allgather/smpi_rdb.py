"""SMPI's allgather "rdb": MPICH's recursive doubling, with its tree fix-up for any P."""

from __future__ import annotations

from ...patterns.smpi import mpich_rdb_messages, subtree_fix_up
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
    P, r = comm.size, comm.rank
    have = [None] * P
    have[r] = x
    curr, last = 1, 0           # blocks held (from the subtree root on), blocks last received
    i, mask = 0, 1
    with comm.phase("allgather"):
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
