"""SMPI's allreduce "lr": a logical ring, reduce-scatter then allgather."""

from __future__ import annotations

from ...errors import UserInputError
from ..registry import register


def _messages(P, **_):
    """2 P (P - 1)."""
    return 2 * P * (P - 1)


@register("smpi-lr", kind="dense", messages=_messages)
def allreduce_smpi_lr(comm, x):
    """SMPI's allreduce lr: ring reduce-scatter, then ring allgather, blocks of N / P.

    As SMPI 3.32's ``allreduce-lr.cpp``: block b is elements [b N/P, (b + 1) N/P). Step
    i = 0 .. P - 2 of the reduce-scatter sends block (r - 1 - i) mod P to r + 1 and
    receives block (r - 2 - i) mod P from r - 1, which it adds to its own input's block;
    rank r ends with block r summed. Step i of the allgather sends block (r - i) mod P to
    r + 1 and receives block (r - 1 - i) mod P. SMPI sends a count that P does not divide
    (or one smaller than P) partly or wholly through another algorithm; here such a count
    is refused. On a contention-free machine: 2 (P - 1)(alpha + N / (P beta)).
    """
    P, r = comm.size, comm.rank
    n = len(x)
    if n % P:
        raise UserInputError(f"smpi-lr runs counts that are a multiple of the {P} ranks (SMPI hands the rest to "
                             f"another algorithm), not {n}: use a multiple of {P}")
    if P == 1:
        return x
    c = n // P
    mine = [x[b * c:(b + 1) * c] for b in range(P)]   # this rank's input, by block
    acc = list(mine)                                  # partial sums, by block
    right, left = (r + 1) % P, (r - 1) % P
    with comm.phase("reduce-scatter"):
        for i in range(P - 1):
            send, recv = (r - 1 - i) % P, (r - 2 - i) % P
            got = yield comm.sendrecv(right, acc[send], left)
            acc[recv] = yield comm.add(mine[recv], got)
    with comm.phase("allgather"):
        for i in range(P - 1):
            send, recv = (r - i) % P, (r - 1 - i) % P
            acc[recv] = yield comm.sendrecv(right, acc[send], left)
    return acc
