"""Sparse ring allreduce on SparCML streams."""

from __future__ import annotations

from ...data.parts import Parts
from ...patterns.sparse import assembly_time, ring_allgather, ring_reduce_scatter, split_stream, split_time
from ..registry import register


def _messages(P, **_):
    """2 P (P - 1)."""
    return 2 * P * (P - 1)


@register("sparse-ring", kind="sparse", options=("densify",), messages=_messages)
def sparse_ring(comm, x, *, densify="exact"):
    """Sparse ring: the dense ring's reduce-scatter and allgather on part-streams.

    The input stream is cut into P part-streams of s = N // P elements (the last absorbs
    the remainder; exact dense rule per part). Reduce-scatter step i: send part (r - i)
    to r + 1, receive part (r - i - 1) from r - 1 and merge it (``densify``: "exact"
    tests the dense rule on the union size, "upper-bound" on n1 + n2 as the study's
    code; "study", part of ``--study``: the study's ring code, which sizes every message
    as 4 + 8 nnz or dense, whichever is smaller, i.e. the exact rule); rank r then owns
    part r + 1. Allgather step i: send part (r + 1 - i), receive
    part (r - i). A reduce-scatter message of step i carries ~s(1 - (1 - d)^(i + 1))
    entries (capped at dense size) plus the 4-byte header. The output is the P parts in
    index order (a ``Parts``: dense if the total is not smaller dense; shared by
    reference, never concatenated per rank).
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return Parts([x])
    parts = split_stream(x, P)
    yield comm.compute(split_time(comm, x))
    with comm.phase("reduce-scatter"):
        yield from ring_reduce_scatter(comm, parts, owns=(r + 1) % P, densify=densify)
    with comm.phase("allgather"):
        yield from ring_allgather(comm, parts, owns=(r + 1) % P)
    yield comm.compute(assembly_time(comm, parts))
    return Parts(parts)
