"""Binomial-tree broadcast."""

from __future__ import annotations

from ...patterns.dense import relative
from ...patterns.trees import binomial_links
from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("binomial-tree", kind="dense", collective="broadcast", messages=_messages)
def broadcast_binomial_tree(comm, x, *, root=0):
    """Binomial tree from the root: receive from the parent, send to the children one after the other.

    Ranks are numbered from the root (v = r - root mod P); v's parent is v without its
    lowest set bit and its children are v | mask for the masks below that bit, sent to
    largest subtree first (as MPICH). The whole vector travels in one message per edge.
    On a contention-free machine: ceil(log2 P)(alpha + S / beta).
    """
    rel = relative(comm, root)
    parent, children = binomial_links(rel.size, rel.rank)
    with comm.phase("broadcast"):
        if parent is not None:
            x = yield rel.recv(parent)
        for c in reversed(children):
            yield rel.send(c, x)
    return x
