"""Hierarchical alltoall: intra-group exchange to the rail, inter-group exchange along it."""

from __future__ import annotations

from ...patterns.dense import split, two_level_messages
from ..registry import register


def _exchange(comm, items):
    """Pairwise exchange of ``items[d]`` (one payload per rank d of ``comm``); returns the
    payloads received, by source (own item kept)."""
    P, r = comm.size, comm.rank
    out = [None] * P
    out[r] = items[r]
    for i in range(1, P):
        dst, src = (r + i) % P, (r - i) % P
        out[src] = yield comm.sendrecv(dst, items[dst], src)
    return out


def _messages(P, *, group_size=None, **_):
    """P ((L - 1) + (M - 1))."""
    return two_level_messages(P, group_size or P)


@register("hierarchical", kind="dense", collective="alltoall", options=("group_size",), messages=_messages)
def alltoall_hierarchical(comm, x, *, group_size=None):
    """Hierarchical (rail-aligned): intra-group gather by destination rail, then inter-group exchange.

    Groups are L = ``group_size`` consecutive ranks (default: GPUs per node); M = P / L;
    rank r = g L + l. (a) "intra-gather": pairwise exchange inside the group in which rank
    l sends local rank l' the M blocks destined to ranks g' L + l' (one message of M
    blocks); rank l then holds, from every rank of its group, the blocks for the ranks with
    local index l. (b) "inter-exchange": pairwise exchange among the ranks with local index
    l (one per group, a "rail") in which group g sends group g' the L blocks for rank
    g' L + l. Inter-group messages are L times larger and P/L times fewer than in a
    flat alltoall, and each stays on its rail (as used for mixture-of-experts on
    rail-optimized clusters).
    """
    P = comm.size
    L = P if group_size is None else group_size
    intra, inter = comm.groups(L)
    M = inter.size
    blocks = split(x, P)
    with comm.phase("intra-gather"):
        # to local rank l': the blocks for ranks g' L + l', g' = 0..M-1
        got = yield from _exchange(intra, [tuple(blocks[gg * L + ll] for gg in range(M)) for ll in range(L)])
    # got[l'][g'] = block from rank g L + l' for rank g' L + l
    with comm.phase("inter-exchange"):
        # to group g': the blocks from this group's L ranks for rank g' L + l
        back = yield from _exchange(inter, [tuple(got[ll][gg] for ll in range(L)) for gg in range(M)])
    # back[g'][l'] = block from rank g' L + l' for this rank
    return [back[gg][ll] for gg in range(M) for ll in range(L)]
