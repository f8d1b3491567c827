"""Sparse allgather: every rank's top-k stream to every rank."""

from __future__ import annotations

from ...patterns.dense import allgather_messages

from ...patterns.doubling import allgather
from ..registry import register


def _messages(P, *, allgather="recursive-doubling", **_):
    """The allgather variant's count (see :func:`simcollective.patterns.dense.allgather_messages`)."""
    return allgather_messages(P, allgather)


@register("sparse-streams", kind="sparse", collective="allgather", options=("allgather",), messages=_messages)
def allgather_sparse_streams(comm, x, *, allgather="recursive-doubling"):
    """Sparse allgather: gather every rank's (index, value) stream, never densified.

    Each message carries whole streams (4 + k (si + sv) bytes each, or dense if a stream is
    not smaller dense); ``allgather``: "recursive-doubling" (default; log2 p' steps, folding
    for P not a power of two), "ring" (P - 1 steps) or "direct" (all at once). Output: the
    P input streams in rank order (shared by reference).
    """
    with comm.phase("allgather"):
        return (yield from _gather(comm, x, allgather))


def _gather(comm, x, variant):
    return (yield from allgather(comm, x, variant, pack=tuple))
