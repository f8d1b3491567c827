"""Rabenseifner's reduce: recursive-halving reduce-scatter, then a binomial gather."""

from __future__ import annotations

from ...data.blocks import block_bounds
from ...patterns.dense import recursive_doubling_messages, relative
from ...patterns.doubling import recursive_halving
from ...patterns.trees import binomial_links
from ..registry import register


def _messages(P, **_):
    """Recursive halving (p' log2 p' + 2 rem), then P - 1 gather messages."""
    return recursive_doubling_messages(P) + P - 1


@register("reduce-scatter-gather", kind="dense", collective="reduce", messages=_messages)
def reduce_rabenseifner(comm, x, *, root=0):
    """Rabenseifner: reduce-scatter by recursive halving (any P), then a binomial gather to the root.

    Ranks are numbered from the root (v). The vector is cut into P blocks
    (``block_bounds``); after the reduce-scatter v owns block v summed over all ranks.
    "gather": v receives from each binomial child c (mask order) the blocks of c's subtree
    and, unless it is the root, sends the blocks [v, v + subtree size) to its parent.
    On a contention-free machine, P a power of two, free sums: 2 log2 P alpha +
    2 (P - 1) S / (P beta).
    """
    rel = relative(comm, root)
    P, v = rel.size, rel.rank
    if P == 1:
        return x
    mine = yield from recursive_halving(rel, x, block_bounds(len(x), P))
    parent, children = binomial_links(P, v)
    held = [mine]
    with comm.phase("gather"):
        for c in children:
            got = yield rel.recv(c, tag="gather")
            held.extend(got)
        if parent is not None:
            yield rel.send(parent, tuple(held), tag="gather")
            return None
    return held
