"""TopkA / AGsparse: allgather every rank's k (index, value) pairs, then sum them
locally (TopkA / AGsparse)."""

from __future__ import annotations

from ...patterns.sparse import selection_time, shared_sum
from ...patterns.sparse import allgather as gather_items
from ...patterns.dense import allgather_messages
from ..registry import register


def _messages(P, *, allgather="recursive-doubling", **_):
    """The allgather variant's count."""
    return allgather_messages(P, allgather)


@register("topk-allgather", kind="sparse", options=("allgather",), messages=_messages)
def topk_allgather(comm, x, *, allgather="recursive-doubling"):
    """TopkA (AGsparse): allgather all ranks' k pairs, then every rank scatter-adds the P k pairs.

    "allgather" of the input streams, never densified: a message carrying several
    ranks' pairs is sized as the sum of their streams (4 + k (si + sv) bytes each).
    ``allgather``: "recursive-doubling" (default; log2 p' steps, folding for P not a
    power of two), "ring" (P - 1 steps) or "direct" (every rank posts its pairs to every
    other rank at once). Then each rank sums the P streams (paying the sparse merge rate
    on the P k entries; added in rank order). The sum is identical on every rank, so it
    is computed once and shared. Output: one stream over [0, N) (dense if the union is
    not smaller dense).
    """
    P = comm.size
    if P == 1:
        return x
    with comm.phase("allgather"):
        items = yield from gather_items(comm, x, allgather, pack=tuple)
    yield comm.compute(selection_time(comm, sum(s.nnz for s in items)))
    return shared_sum(comm, items, users=P)
