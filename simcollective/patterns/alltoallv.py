"""Per-rank building blocks of the alltoallv algorithms: a send buffer cut into its
per-destination blocks, and the dispatch (the sizes matrix) followed by the combine (its
transpose) that every alltoallv algorithm runs with its own exchange.

An exchange is a generator ``exchange(comm, blocks, counts, name)``: ``blocks[j]`` is what
this rank sends rank j (``counts[r][j]`` elements; the own block ``blocks[r]`` stays), and it
returns the blocks received, by source (an empty payload where ``counts[j][r]`` is 0),
spending its time in phases whose names start with ``name``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split_counts", "dispatch_combine", "nonzero_pairs", "block_messages", "own_block_only"]


def split_counts(x, row) -> list:
    """``x`` cut into ``len(row)`` consecutive blocks of ``row[j]`` elements (views)."""
    ends = np.cumsum(row).tolist()
    starts = [0] + ends[:-1]
    return [x[a:b] for a, b in zip(starts, ends)]


def dispatch_combine(comm, x, counts, exchange, combine: bool, back=None):
    """The dispatch of ``x``'s blocks (row ``r`` of ``counts``) with ``exchange`` in phase
    ``dispatch``; with ``combine``, every received block then returns to its sender (the
    transpose) in phase ``combine``, with the exchange ``back`` (default: ``exchange``). Returns the nonempty parts of the result, in source
    order (an empty part sits at no position of the result)."""
    blocks = split_counts(x, counts[comm.rank])
    got = yield from exchange(comm, blocks, counts, "dispatch")
    if combine:
        got = yield from (back or exchange)(comm, got, counts.T, "combine")
    return [b for b in got if len(b)]


def nonzero_pairs(counts) -> int:
    """Messages of one pass that sends every nonzero block off the diagonal once."""
    c = np.asarray(counts)
    return int(np.count_nonzero(c) - np.count_nonzero(np.diag(c)))


def block_messages(P, *, sizes, combine=False, **_):
    """The ``messages`` hook of an algorithm that sends every nonzero block off the
    diagonal as one message, per pass (dispatch, and combine if it follows)."""
    return nonzero_pairs(sizes) * (2 if combine else 1)


def own_block_only(blocks, rank: int) -> list:
    """A result slot per source: the own block at ``rank``, empty payloads elsewhere."""
    out = [blocks[rank][:0]] * len(blocks)
    out[rank] = blocks[rank]
    return out
