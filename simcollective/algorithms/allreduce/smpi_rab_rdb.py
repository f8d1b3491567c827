"""SMPI's allreduce "rab_rdb": Rabenseifner's, recursive-halving reduce-scatter then recursive-doubling allgather."""

from __future__ import annotations

from ...patterns.dense import pof2_floor, real_rank, recursive_doubling_messages
from ...patterns.doubling import fold, unfold
from ..registry import register


def _messages(P, **_):
    """2 p' log2 p' + 2 rem: recursive doubling's fold, steps and unfold, plus as many halving steps."""
    p2 = pof2_floor(P)
    return recursive_doubling_messages(P) + p2 * (p2.bit_length() - 1)


@register("smpi-rab-rdb", kind="dense", messages=_messages)
def allreduce_smpi_rab_rdb(comm, x):
    """SMPI's allreduce rab_rdb: fold to p', halve the vector with partners 1, 2, 4, ... apart, double it back, unfold.

    As SMPI 3.32's ``allreduce-rab-rdb.cpp`` (MPICH's Rabenseifner): the extra ranks are
    folded as in ``smpi-rdb``. The vector is cut into p' blocks, p' - 1 of N // p'
    elements and the last with the rest. Reduce-scatter: for mask = 1, 2, ..., p'/2 the
    partner is virtual rank XOR mask; the lower rank keeps the lower half of its current
    block range (p' / 2 mask blocks), sends the upper half and adds what it receives.
    Allgather: mask = p'/2, ..., 1 replays the steps backwards, each rank sending the
    range it has and receiving its partner's (SMPI's index bookkeeping, kept as is).
    """
    P = comm.size
    if P == 1:
        return x
    p2 = pof2_floor(P)
    rem = P - p2
    n = len(x)
    v, x = yield from fold(comm, x)
    if v is not None:
        c = n // p2
        bounds = [(i * c, (i + 1) * c) for i in range(p2 - 1)] + [((p2 - 1) * c, n)]
        blocks = [x[a:b] for a, b in bounds]
        with comm.phase("reduce-scatter"):
            send_idx, last_idx = yield from _halving(comm, blocks, v, p2, rem)
        with comm.phase("allgather"):
            yield from _doubling(comm, blocks, v, p2, rem, send_idx, last_idx)
        x = blocks
    return (yield from unfold(comm, x))


def _halving(comm, blocks, v, p2, rem):
    """The reduce-scatter; returns SMPI's (send_idx, last_idx) after it."""
    mask, send_idx, recv_idx, last_idx = 1, 0, 0, p2
    while mask < p2:
        w = v ^ mask
        half = p2 // (mask * 2)
        if v < w:
            send_idx = recv_idx + half
            give, keep = range(send_idx, last_idx), range(recv_idx, send_idx)
        else:
            recv_idx = send_idx + half
            give, keep = range(send_idx, recv_idx), range(recv_idx, last_idx)
        peer = real_rank(w, rem)
        got = yield comm.sendrecv(peer, tuple(blocks[i] for i in give), peer)
        for i, g in zip(keep, got):
            blocks[i] = yield comm.add(blocks[i], g)
        send_idx = recv_idx
        mask <<= 1
        if mask < p2:
            last_idx = recv_idx + p2 // mask
    return send_idx, last_idx


def _doubling(comm, blocks, v, p2, rem, send_idx, last_idx):
    """The allgather, with SMPI's index updates."""
    mask = p2 >> 1
    while mask > 0:
        w = v ^ mask
        half = p2 // (mask * 2)
        if v < w:
            if mask != p2 // 2:
                last_idx += half
            recv_idx = send_idx + half
            give, take = range(send_idx, recv_idx), range(recv_idx, last_idx)
        else:
            recv_idx = send_idx - half
            give, take = range(send_idx, last_idx), range(recv_idx, send_idx)
        peer = real_rank(w, rem)
        got = yield comm.sendrecv(peer, tuple(blocks[i] for i in give), peer)
        for i, g in zip(take, got):
            blocks[i] = g
        if v > w:
            send_idx = recv_idx
        mask >>= 1
