"""SMPI's bcast "flattree": the root sends to every rank at once."""

from __future__ import annotations

from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("smpi-flattree", kind="dense", collective="broadcast", messages=_messages)
def broadcast_smpi_flattree(comm, x, *, root=0):
    """SMPI's bcast flattree: the root posts P - 1 sends of the whole vector, in rank order, and waits for all.

    As SMPI 3.32's ``bcast-flattree.cpp``: every other rank receives once from the root.
    """
    P, r = comm.size, comm.rank
    with comm.phase("broadcast"):
        if r != root:
            return (yield comm.recv(root))
        yield comm.waitall([comm.isend(i, x) for i in range(P) if i != root])
    return x
