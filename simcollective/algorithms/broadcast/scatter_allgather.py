"""Van de Geijn broadcast: binomial scatter, then ring allgather."""

from __future__ import annotations

from ...patterns.dense import relative, split

from ...patterns.rings import ring_allgather
from ...patterns.trees import binomial_links
from ..registry import register


def _messages(P, **_):
    """(P - 1) + P (P - 1): the scatter's tree edges, then the ring."""
    return (P - 1) * (P + 1)


@register("scatter-allgather", kind="dense", collective="broadcast", messages=_messages)
def broadcast_scatter_allgather(comm, x, *, root=0):
    """Van de Geijn: binomial-tree scatter of P blocks from the root, then a ring allgather.

    Ranks are numbered from the root (v). The vector is cut into P blocks
    (``block_bounds``); "scatter": v receives from its binomial parent the blocks
    [v, v + subtree size) and sends each child c the blocks [c, c + its subtree size),
    largest subtree first; "allgather": ring over v = 0..P-1 where v owns block v.
    On a contention-free machine, P a power of two: log2 P alpha + (P-1) S/(P beta) for the
    scatter plus (P - 1)(alpha + S / (P beta)) for the allgather.
    """
    rel = relative(comm, root)
    P, v = rel.size, rel.rank
    if P == 1:
        return x
    parent, children = binomial_links(P, v)
    span = lambda u: (low(u, P) if u else P)  # noqa: E731  blocks in u's subtree
    with comm.phase("scatter"):
        if parent is None:
            mine = list(split(x, P))
        else:
            got = yield rel.recv(parent)
            mine = [None] * P
            mine[v:v + len(got)] = got
        for c in reversed(children):
            n = min(span(c), P - c)
            yield rel.send(c, tuple(mine[c:c + n]))
    blocks = [[b] for b in mine]
    for u in range(P):
        if u != v:
            blocks[u] = [None]
    with comm.phase("allgather"):
        yield from ring_allgather(rel, blocks, owns=v)
    return [b[0] for b in blocks]


def low(u: int, P: int) -> int:
    """Size of the binomial subtree of ``u`` > 0 (its lowest set bit; capped by P - u)."""
    return min(u & -u, P - u)
