"""SMPI's allgather "rdb": MPICH's recursive doubling, with its tree fix-up for any P."""

from __future__ import annotations

from ..registry import register


@register("smpi-rdb", kind="dense", collective="allgather")
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
                curr, last = yield from _fix_up(comm, have, mask, i, my_root, curr, last)
            mask <<= 1
            i += 1
    return have


def _fix_up(comm, have, mask, i, my_root, curr, last):
    """The blocks received at step i, passed down a binary tree to the ranks lacking them;
    returns the (blocks held, blocks last received) after it."""
    P, r = comm.size, comm.rank
    completed = P - my_root - mask      # ranks of this subtree holding the new blocks
    offset = my_root + mask
    k, tmp = i, mask >> 1
    while tmp:
        dst = r ^ tmp
        root = (r >> k) << k
        if dst > r and r < root + completed <= dst:
            yield comm.send(dst, tuple(have[offset:offset + last]))
        elif dst < r and dst < root + completed <= r:
            got = yield comm.recv(dst)
            have[offset:offset + len(got)] = got
            last = len(got)
            curr += last
        tmp >>= 1
        k -= 1
    return curr, last
