"""SMPI's reduce "flat_tree": every rank sends to the root, which adds in rank order from P - 1 down."""

from __future__ import annotations

from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("smpi-flat-tree", kind="dense", collective="reduce", messages=_messages)
def reduce_smpi_flat_tree(comm, x, *, root=0):
    """SMPI's reduce flat_tree: the root receives from P - 1, P - 2, ..., 0 one after the other.

    As SMPI 3.32's ``reduce-flat-tree.cpp``: every other rank sends its whole vector to
    the root (one blocking send); the root receives them with blocking receives in the
    order P - 1, P - 2, ..., 0 (its own vector taken in its turn, no message) and adds
    each. Only the root has a result (the others return ``None``).
    """
    P, r = comm.size, comm.rank
    with comm.phase("reduce"):
        if r != root:
            yield comm.send(root, x)
            return None
        acc = None
        for i in range(P - 1, -1, -1):
            got = x if i == r else (yield comm.recv(i))
            acc = got if acc is None else (yield comm.add(acc, got))
    return acc
