"""The two-level (hierarchical) ring allreduce with a multi-leader inter-group phase."""

from __future__ import annotations

from ...data.parts import Parts
from ...patterns.dense import flatten, two_level_messages
from ...patterns.rings import ring_allgather, ring_reduce_scatter
from ..registry import register


def _messages(P, *, group_size=None, **_):
    """2 P ((L - 1) + (M - 1)): reduce-scatter and allgather rings inside and across groups."""
    return two_level_messages(P, group_size or P, passes=2)


@register("ring-ring", kind="dense", options=("group_size",), messages=_messages)
def ring_ring(comm, x, *, group_size=None):
    """Ring-ring: intra-group ring reduce-scatter, inter-group rings, intra-group allgather.

    Groups are L = ``group_size`` consecutive ranks (default: the topology's group size,
    GPUs per node); M = P / L. The vector is cut into L blocks (``block_bounds(N, L)``)
    and block b into M sub-blocks (``block_bounds`` of its length). (a) Intra-group ring
    reduce-scatter: local rank l ends with block l. (b) Ranks with the same l run a ring
    reduce-scatter over the M sub-blocks of block l, (c) then a ring allgather; all L
    ranks of a group do so at once on different blocks (multi-leader). (d) Intra-group
    ring allgather of the blocks.
    """
    L = comm.size if group_size is None else group_size
    intra, inter = comm.groups(L)
    l, g = intra.rank, inter.rank
    M = inter.size
    # one payload per block (flat lists), each cut from its source when a reduce-scatter
    # reaches it (see patterns.rings.ring_pass)
    blocks = [None] * L
    with comm.phase("intra-reduce-scatter"):
        yield from ring_reduce_scatter(intra, blocks, owns=l, source=x, flat=True)
    subs = [None] * M
    with comm.phase("inter-reduce-scatter"):
        yield from ring_reduce_scatter(inter, subs, owns=g, source=blocks[l], flat=True)
    with comm.phase("inter-allgather"):
        yield from ring_allgather(inter, subs, owns=g, flat=True)
    blocks[l] = Parts(subs)   # block l as one payload: its M sub-blocks (sized once, not per hop)
    with comm.phase("intra-allgather"):
        yield from ring_allgather(intra, blocks, owns=l, flat=True)
    return flatten(blocks)
