"""SMPI's allreduce "rdb": MPICH's recursive doubling on whole vectors."""

from __future__ import annotations

from ...patterns.dense import recursive_doubling_messages
from ...patterns.doubling import recursive_doubling
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem."""
    return recursive_doubling_messages(P)


@register("smpi-rdb", kind="dense", messages=_messages)
def allreduce_smpi_rdb(comm, x):
    """SMPI's allreduce rdb: fold to p' ranks, whole-vector recursive doubling, unfold.

    As SMPI 3.32's ``allreduce-rdb.cpp``: p' = the largest power of two <= P, rem = P - p';
    even r < 2 rem sends its vector to r + 1 and waits; odd r < 2 rem adds it and takes
    new rank r / 2, the others r - rem. Step mask = 1, 2, ..., p'/2 exchanges the whole
    vector with new rank XOR mask (real rank 2 v + 1 for v < rem, else v + rem) and adds;
    at the end odd r < 2 rem sends the result to r - 1. The same messages, in the same
    order, as the project's ``recursive-doubling``.
    """
    return (yield from recursive_doubling(comm, x))
