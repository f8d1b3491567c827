"""Hierarchical (two-level) reduce-scatter."""

from __future__ import annotations

from ...patterns.dense import add_parts, split, two_level_messages

from ...patterns.rings import ring_reduce_scatter
from ..registry import register


def _messages(P, *, group_size=None, **_):
    """P ((L - 1) + (M - 1))."""
    return two_level_messages(P, group_size or P)


@register("hierarchical", kind="dense", collective="reduce-scatter", options=("group_size",), messages=_messages)
def reduce_scatter_hierarchical(comm, x, *, group_size=None):
    """Hierarchical: intra-group ring reduce-scatter, then inter-group ring reduce-scatter.

    Groups are L = ``group_size`` consecutive ranks (default: the topology's group size);
    M = P / L; rank r = g L + l. (a) "intra-reduce-scatter": a ring over the group on L
    bundles, bundle l' = the M blocks g' L + l' (g' = 0..M-1), summed as lists; rank l
    ends with bundle l summed over its group. (b) "inter-reduce-scatter": the M ranks with
    local index l run a ring reduce-scatter of the M blocks of that bundle; rank g keeps
    block g L + l. Across groups each rank sends (M - 1) blocks (not (M - 1) L).
    """
    P = comm.size
    L = P if group_size is None else group_size
    intra, inter = comm.groups(L)
    l, g = intra.rank, inter.rank
    M = inter.size
    blocks = split(x, P)
    bundles = [[[blocks[gg * L + ll] for gg in range(M)]] for ll in range(L)]
    if L > 1:
        with comm.phase("intra-reduce-scatter"):
            yield from ring_reduce_scatter(intra, bundles, owns=l, op=add_parts)
    subs = [[b] for b in bundles[l][0]]
    if M > 1:
        with comm.phase("inter-reduce-scatter"):
            yield from ring_reduce_scatter(inter, subs, owns=g)
    return subs[g][0]
