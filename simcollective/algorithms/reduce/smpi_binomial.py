"""SMPI's reduce "binomial": MPICH's binomial tree to the root."""

from __future__ import annotations

from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("smpi-binomial", kind="dense", collective="reduce", messages=_messages)
def reduce_smpi_binomial(comm, x, *, root=0):
    """SMPI's reduce binomial: for mask = 1, 2, 4, ... receive from v | mask or send to v - mask.

    As SMPI 3.32's ``reduce-binomial.cpp`` (a commutative sum): v = (r - root) mod P;
    while mask < P, a rank with v & mask = 0 receives the whole vector from v | mask (if
    that rank exists) and adds it; otherwise it sends its sum to v without that bit and
    stops. Only the root has a result (the others return ``None``).
    """
    P, r = comm.size, comm.rank
    v = (r - root) % P
    mask = 1
    with comm.phase("reduce"):
        while mask < P:
            if v & mask == 0:
                if v | mask < P:
                    got = yield comm.recv(((v | mask) + root) % P)
                    x = yield comm.add(x, got)
            else:
                yield comm.send(((v & ~mask) + root) % P, x)
                return None
            mask <<= 1
    return x
