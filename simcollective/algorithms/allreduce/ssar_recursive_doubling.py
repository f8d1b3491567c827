"""SSAR_Recursive_double: recursive doubling on SparCML streams (SparCML, Renggli et al., SC 2019)."""

from __future__ import annotations

from ...patterns.dense import recursive_doubling_messages

from ...patterns.doubling import recursive_doubling
from ...patterns.sparse import merge_op, no_study_sizing, shared_merge_op
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem."""
    return recursive_doubling_messages(P)


@register("ssar-recursive-doubling", kind="sparse", options=("densify",),
          check=no_study_sizing("ssar-recursive-doubling"), messages=_messages)
def ssar_recursive_doubling(comm, x, *, densify="exact"):
    """SSAR recursive doubling: exchange the whole stream with vrank XOR 2^j and merge.

    Any P: "fold" onto p' = the largest power of two <= P (even r < 2 rem hands its
    stream to r + 1), then for dist = 1, 2, ..., p'/2 ("recursive-doubling") exchange the
    whole current stream with virtual rank v XOR dist and merge (``densify`` policy:
    "exact" or "upper-bound"); "unfold" sends the result back to the ranks that sat out.
    The message of step j holds ~N(1 - (1 - d)^(2^j)) entries (capped at dense size).
    At step j the 2^(j+1) ranks of a window all merge the same two partial sums; the
    merge is computed once and shared (each rank pays its compute time), so every
    partial sum exists once per simulation, not once per rank.
    """
    # at step dist all 2 dist ranks of the new window merge the same two partial sums
    return (yield from recursive_doubling(comm, x, op=merge_op(densify),
                                          step_op=lambda dist: shared_merge_op(comm, densify, users=2 * dist)))
