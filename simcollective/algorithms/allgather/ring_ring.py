"""Hierarchical (two-level) ring allgather."""

from __future__ import annotations

from ...patterns.dense import two_level_messages

from ...patterns.rings import ring_allgather
from ..registry import register


def _messages(P, *, group_size=None, **_):
    """P ((M - 1) + (L - 1))."""
    return two_level_messages(P, group_size or P)


@register("ring-ring", kind="dense", collective="allgather", options=("group_size",), messages=_messages)
def allgather_ring_ring(comm, x, *, group_size=None):
    """Ring-ring: inter-group ring among ranks with the same local index, then intra-group ring.

    Groups are L = ``group_size`` consecutive ranks (default: the topology's group size,
    GPUs per node); M = P / L; rank r = g L + l. (a) "inter-allgather": the M ranks with
    local index l (one per group) run a ring allgather of their blocks (M - 1 steps of one
    block: across groups each block travels once per group). (b) "intra-allgather": the L
    ranks of a group run a ring allgather of those bundles of M blocks (L - 1 steps).
    Output in rank order.
    """
    L = comm.size if group_size is None else group_size
    intra, inter = comm.groups(L)
    l, g = intra.rank, inter.rank
    M = inter.size
    mine = [[None] for _ in range(M)]
    mine[g] = [x]
    with comm.phase("inter-allgather"):
        yield from ring_allgather(inter, mine, owns=g)
    bundles = [[None] for _ in range(L)]
    bundles[l] = [tuple(b[0] for b in mine)]
    with comm.phase("intra-allgather"):
        yield from ring_allgather(intra, bundles, owns=l)
    return [bundles[ll][0][gg] for gg in range(M) for ll in range(L)]
