"""Hierarchical alltoallv (DeepEP-style): RDMA along the rail to the destination node, then NVLink forwarding."""

from __future__ import annotations

import numpy as np

from ...patterns.alltoallv import dispatch_combine
from ..registry import register


def _pass_messages(counts, L: int) -> int:
    """Messages of one pass: a rail message per (source, node) pair with bytes for another
    node, then a forwarding message per (forwarder, local destination) pair with bytes."""
    P = counts.shape[0]
    M = P // L
    by_node = counts.reshape(P, M, L)              # [source, node, local]
    rail = by_node.sum(axis=2)                      # bytes from source s to node g'
    own = np.arange(P) // L
    inter = int(np.count_nonzero(rail)) - int(np.count_nonzero(rail[np.arange(P), own]))
    # forwarder (g', l) holds, for local l', what the sources (any node, local l) sent there
    fwd = by_node.reshape(M, L, M, L).sum(axis=0)   # [l, g', l']
    intra = int(np.count_nonzero(fwd)) - int(np.count_nonzero(np.einsum("lgl->lg", fwd)))
    return inter + intra


def _messages(P, *, sizes, combine=False, group_size=None, **_):
    """Rail messages plus forwarding messages; the combine retraces the dispatch's messages."""
    n = _pass_messages(np.asarray(sizes), group_size or P)
    return 2 * n if combine else n


def _stage(comm, sub, items, sizes_out, sizes_in, tag):
    """Send ``items[d]`` to every rank d of ``sub`` with ``sizes_out[d] > 0``, receive from
    every s with ``sizes_in[s] > 0``, wait for all; the ``(source, item)`` pairs received."""
    P, r = sub.size, sub.rank
    srcs = [(r - i) % P for i in range(1, P) if sizes_in[(r - i) % P]]
    sends = [sub.isend(d, items[d], tag=tag) for d in ((r + i) % P for i in range(1, P)) if sizes_out[d]]
    got = yield comm.waitall([sub.irecv(s, tag=tag) for s in srcs] + sends)
    return list(zip(srcs, got))


def _frame(comm, blocks, counts, L: int) -> tuple:
    """``(intra, inter, M, g, l, empty, rows)`` of this rank: its group and rail
    communicators, the groups, its group and local index, an empty payload, and the
    counts as ``rows[source, group, local]``."""
    P, r = comm.size, comm.rank
    intra, inter = comm.groups(L)
    return intra, inter, P // L, r // L, r % L, blocks[r][:0], counts.reshape(P, P // L, L)


def rail_exchange(comm, blocks, counts, name, L: int):
    """One pass: (a) RDMA: rank g L + l sends rank g' L + l (same local index, node g') the
    blocks for all ranks of node g', one message; (b) NVLink: it forwards to each local rank
    l' of its node the blocks for l' it holds (its own and those the rails brought)."""
    P, r = comm.size, comm.rank
    intra, inter, M, g, l, empty, rows = _frame(comm, blocks, counts, L)
    # hold[g''][l'] = block from rank g'' L + l for rank g L + l'
    hold = [[empty] * L for _ in range(M)]
    hold[g] = [blocks[g * L + ll] for ll in range(L)]
    with comm.phase(f"{name}-rdma"):
        out_bytes = rows[r].sum(axis=1)                                 # to node g'
        in_bytes = rows[[gg * L + l for gg in range(M)], g].sum(axis=1)  # from rank g'' L + l
        items = [tuple(blocks[gg * L + ll] for ll in range(L)) for gg in range(M)]
        for s, item in (yield from _stage(comm, inter, items, out_bytes, in_bytes, tag=1)):
            hold[s] = list(item)
    out = [empty] * P
    with comm.phase(f"{name}-nvlink"):
        fwd_out = rows[[gg * L + l for gg in range(M)], g].sum(axis=0)       # to local l'
        fwd_in = rows[[gg * L + ll for ll in range(L) for gg in range(M)], g, l].reshape(L, M).sum(axis=1)
        items = [tuple(hold[gg][ll] for gg in range(M)) for ll in range(L)]
        got = yield from _stage(comm, intra, items, fwd_out, fwd_in, tag=2)
        for ll, item in [(l, [hold[gg][l] for gg in range(M)])] + got:
            for gg in range(M):
                out[gg * L + ll] = item[gg]
    return out


def gather_exchange(comm, blocks, counts, name, L: int):
    """The mirror pass (the combine): (a) NVLink: rank g L + l sends each local rank l' the
    blocks for ranks g' L + l' of every node g'; (b) RDMA: rank g L + l' sends rank g' L + l'
    (its rail) the blocks from every rank of its node for that one rank, in one message."""
    P, r = comm.size, comm.rank
    intra, inter, M, g, l, empty, rows = _frame(comm, blocks, counts, L)
    # hold[l''][g'] = block from rank g L + l'' for rank g' L + l
    hold = [[empty] * M for _ in range(L)]
    hold[l] = [blocks[gg * L + l] for gg in range(M)]
    with comm.phase(f"{name}-nvlink"):
        items = [tuple(blocks[gg * L + ll] for gg in range(M)) for ll in range(L)]
        fwd_out, fwd_in = rows[r].sum(axis=0), rows[g * L:(g + 1) * L, :, l].sum(axis=1)   # to / from local l'
        for s, item in (yield from _stage(comm, intra, items, fwd_out, fwd_in, tag=3)):
            hold[s] = list(item)
    out = [empty] * P
    with comm.phase(f"{name}-rdma"):
        items = [tuple(hold[ll][gg] for ll in range(L)) for gg in range(M)]
        out_bytes = rows[g * L:(g + 1) * L, :, l].sum(axis=0)              # to node g'
        in_bytes = rows[:, g, l].reshape(M, L).sum(axis=1)                  # from node g''
        got = yield from _stage(comm, inter, items, out_bytes, in_bytes, tag=4)
        for gg, item in [(g, [hold[ll][g] for ll in range(L)])] + got:
            for ll in range(L):
                out[gg * L + ll] = item[ll]
    return out


@register("hierarchical", kind="dense", collective="alltoallv", options=("group_size",), messages=_messages)
def alltoallv_hierarchical(comm, x, *, sizes, combine=False, group_size=None):
    """Hierarchical (DeepEP-style): RDMA to the same local index on the destination node, then NVLink forwarding.

    Groups are L = ``group_size`` consecutive ranks (default: GPUs per node), rank
    r = g L + l. Blocks for another node g' cross the network once, in one message on rail
    l to rank g' L + l; that rank then forwards over NVLink, to each local rank l', the
    blocks for l' from every node (with its own). Every inter-node byte so stays on its
    rail. The combine retraces it (as DeepEP's does): NVLink to the GPU on the rail of
    the destination, then one rail message per node. The two stages run one after the
    other (DeepEP overlaps them in chunks).
    """
    L = comm.size if group_size is None else group_size
    return (yield from dispatch_combine(comm, x, sizes, lambda c, b, k, n: rail_exchange(c, b, k, n, L), combine,
                                        lambda c, b, k, n: gather_exchange(c, b, k, n, L)))
