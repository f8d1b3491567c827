"""SMPI's reduce_scatter "ompi_basic_recursivehalving": Open MPI's recursive halving, folded to a power of two."""

from __future__ import annotations

from ...patterns.dense import pof2_floor, real_rank, split
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem: the halving steps over p', one fold and one result message per extra rank."""
    p2 = pof2_floor(P)
    return p2 * (p2.bit_length() - 1) + 2 * (P - p2)


@register("smpi-ompi-basic-recursivehalving", kind="dense", collective="reduce-scatter", messages=_messages)
def reduce_scatter_smpi_ompi_basic_recursivehalving(comm, x):
    """SMPI's reduce_scatter ompi_basic_recursivehalving: fold, halve the block range log2 p' times, unfold.

    As SMPI 3.32's ``reduce_scatter-ompi.cpp`` (Open MPI's basic recursive halving, a
    commutative sum): p' = the largest power of two <= P, rem = P - p'. Even r < 2 rem
    sends its whole input to r + 1 and drops out; odd r adds it and is virtual rank r / 2,
    the others r - rem. Virtual block v is real blocks 2v and 2v + 1 for v < rem, else
    real block v + rem. For mask = p'/2, ..., 1 a rank and its partner (virtual rank XOR
    mask, real rank 2 v + 1 or v + rem) split their block range in two: the lower rank
    keeps the lower half; each posts the receive of the half it keeps, sends the other
    half (a blocking send), waits and adds. At the end odd r < 2 rem sends block r - 1
    to r - 1.
    """
    P, r = comm.size, comm.rank
    sums = split(x, P)
    p2 = pof2_floor(P)
    rem = P - p2
    v = r - rem
    with comm.phase("reduce-scatter"):
        if r < 2 * rem:
            if r % 2 == 0:
                yield comm.send(r + 1, tuple(sums))
                return (yield comm.recv(r + 1))
            got = yield comm.recv(r - 1)
            for j, g in enumerate(got):
                sums[j] = yield comm.add(sums[j], g)
            v = r // 2
        vblocks = [[2 * i, 2 * i + 1] if i < rem else [i + rem] for i in range(p2)]
        mask, send_index, recv_index, last = p2 >> 1, 0, 0, p2
        while mask > 0:
            peer = real_rank(v ^ mask, rem)
            if v < v ^ mask:
                send_index = recv_index + mask
                give, keep = range(send_index, last), range(recv_index, send_index)
            else:
                recv_index = send_index + mask
                give, keep = range(send_index, recv_index), range(recv_index, last)
            req = comm.irecv(peer)
            yield comm.send(peer, tuple(sums[j] for i in give for j in vblocks[i]))
            got = yield req
            for j, g in zip((j for i in keep for j in vblocks[i]), got):
                sums[j] = yield comm.add(sums[j], g)
            send_index, last = recv_index, recv_index + mask
            mask >>= 1
        if r < 2 * rem:
            yield comm.send(r - 1, sums[r - 1])
    return sums[r]
