"""Binomial-tree reduce."""

from __future__ import annotations

from ...patterns.dense import relative
from ...patterns.trees import binomial_links
from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("binomial-tree", kind="dense", collective="reduce", messages=_messages)
def reduce_binomial_tree(comm, x, *, root=0):
    """Binomial tree to the root: add the children's sums in mask order, send to the parent.

    Ranks are numbered from the root (v = r - root mod P). For mask = 1, 2, 4, ... below
    its lowest set bit v receives from v | mask and adds, then sends to its parent. On a
    contention-free machine with free sums: ceil(log2 P)(alpha + S / beta). Only the root
    has a result (the others return ``None``).
    """
    rel = relative(comm, root)
    parent, children = binomial_links(rel.size, rel.rank)
    with comm.phase("reduce"):
        for c in children:
            got = yield rel.recv(c)
            x = yield comm.add(x, got)
        if parent is not None:
            yield rel.send(parent, x)
            return None
    return x
