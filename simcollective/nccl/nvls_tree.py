"""NCCL's NVLSTree allreduce beyond two nodes: NVLS inside every node, NCCL's double binary
tree across the nodes (``shared/reference/nccl.md`` 2.3, 2.4; NCCL ``src/transport/nvls.cc``
``connectNvls`` and ``src/device/all_reduce.h`` ``runNvlsTree``).

How NCCL runs it, and what runs here:

* every GPU of a node is an NVLS **head**: each channel's range of the buffer is cut into
  ``ppn`` blocks, block ``h`` belongs to local GPU ``h`` (NVLS graph: one head per GPU, each
  with its own NIC, so head ``h`` of every node is on rail ``h``);
* channel ``c`` uses tree ``c % 2`` of NCCL's double binary tree over the **nodes**
  (``ncclGetDtree``: :func:`~simcollective.nccl.search.btree`, and its mirror image for an even
  node count, shifted by one for an odd one); in that tree head ``h`` of node ``v`` talks to
  head ``h`` of ``v``'s parent and children nodes (``treeUp = heads[tree0Parent]``, ...);
* per chunk of its block, a head receives the NVLS reduction of its node's GPUs (the
  multimem load-reduce in the switch), adds what its children in the tree send up, and sends
  the sum to its parent (the root keeps it); the fully reduced chunk comes down from the
  parent, goes on to the children and is multicast to the node's GPUs by the switch
  (multimem store). Reduce, tree and multicast run at once on successive chunks.

The switch's reduce and multicast are emulated with point-to-point messages between the
GPUs of a node, sized as in nccl-nvls (every GPU link carries (P + 1)/P x S each way at the
NVLS efficiency); tree messages carry the data as it is (Simple). Channels of one tree use
the same links, so inside a node the simulation sends them together: a message carries
chunk ``k`` of block ``h`` of every channel of that tree. Across nodes every channel's share
is its own message: NCCL opens one network connection per channel and head (16 NVLS
channels = 16 connections per NIC, where the ring has 2), and a per-connection goodput
(``--topology-opt net_conn_bandwidth``) caps each of them. Chunks are NCCL's NVLSTree chunk (128 KiB per
channel and head, 64 KiB from 4 nodes), merged down to at most ``MAX_PIECES`` per tree.
Every receive stream (peer, kind, tree) has one receive posted at a time, so the chunks of
a stream travel one after the other (rendezvous messages start when the receive is posted).

Two nodes keep the exchange of ``collectives._nvlstree`` (the same bytes on the one network
link: with two nodes each tree's up and down messages cross the same link in opposite
directions, which the exchange sends as one message each way).
"""

from __future__ import annotations

import math

from ..patterns.dense import split
from .protocols import Wire
from .search import btree, dtree

__all__ = ["MAX_PIECES", "chunk_bytes", "pieces", "trees_of", "nvlstree_links", "messages", "run"]

#: chunks per tree simulated at most (NCCL's chunks beyond that are merged: in this flow
#: model merging only shortens the pipeline fill, by at most one chunk's time per stage)
MAX_PIECES = 16


def chunk_bytes(nnodes: int) -> int:
    """NCCL's NVLSTree chunk per channel and head: 128 KiB, 64 KiB from 4 nodes (nccl.md 2.4)."""
    return 64 * 1024 if nnodes >= 4 else 128 * 1024


def pieces(nbytes: int, channels: int, ppn: int, nnodes: int) -> int:
    """Chunks per tree: NCCL's chunk count of one channel's block (``nbytes / (C x ppn)``
    bytes), 1 to :data:`MAX_PIECES`."""
    per_block = nbytes / (max(1, channels) * max(1, ppn))
    return max(1, min(MAX_PIECES, math.ceil(per_block / chunk_bytes(nnodes))))


def trees_of(channels: int) -> list:
    """``[(tree, [channels using it])]``: channel ``c`` uses tree ``c % 2`` (nvls.cc
    ``treeUp[c % 2]``); a tree no channel uses is left out."""
    return [(t, [c for c in range(channels) if c % 2 == t]) for t in (0, 1) if t < channels]


def nvlstree_links(machine, channel: int) -> dict:
    """``rank -> (parent rank or None, [children ranks])`` of ``channel``'s NVLSTree: tree
    ``channel % 2`` over the nodes, between the heads of one local index (one rail)."""
    make = btree if channel % 2 == 0 else dtree
    nn = machine.nnodes
    links = {}
    for v, ranks in enumerate(machine.nodes):
        pnode, knodes = make(nn, v)
        for h, r in enumerate(ranks):
            parent = None if pnode is None else machine.nodes[pnode][h]
            links[r] = (parent, [machine.nodes[k][h] for k in knodes])
    return links


def messages(machine, nbytes: int, channels: int) -> int:
    """Messages of one call: per tree and chunk, every GPU sends its block to the other
    ``ppn - 1`` heads and every head multicasts to them; every tree edge carries, per head,
    one message up and one down for each channel of the tree (NCCL's connections)."""
    P, N = machine.ppn, machine.nnodes
    K = pieces(nbytes, channels, P, N)
    return sum(K * P * (2 * (P - 1) * N + 2 * (N - 1) * len(chans))
               for _, chans in trees_of(channels))


def _add(a, b):
    return [x + y for x, y in zip(a, b)]


def run(comm, x, plan):
    """This rank's part of one NVLSTree allreduce on 3 or more nodes (``plan``: a
    :class:`~simcollective.nccl.collectives.Plan` with ``trees`` from :func:`nvlstree_links`);
    returns the result parts in order."""
    r, f = comm.rank, plan.wire
    m = plan.machine
    node = next(i for i, ranks in enumerate(m.nodes) if r in ranks)
    local = m.nodes[node]
    me = local.index(r)
    P = len(local)
    C = plan.channels
    K = pieces(int(x.nbytes), C, P, m.nnodes)
    # parts[c][h][k]: chunk k of head h's block of channel c
    parts = [[split(b, K) for b in split(rng, P)] for rng in split(x, C)]
    trees = trees_of(C)
    peers = [h for h in range(P) if h != me]
    acc = {}        # (t, k) -> my block's partial sum (list over the tree's channels)
    missing = {}    # (t, k) -> contributions still to add
    final = {}      # (t, k) -> my block, fully reduced
    got_ag = {}     # (t, k, h) -> head h's block, fully reduced
    waiting: list = []
    actions: list = []
    sends: list = []
    width = {t: len(chans) for t, chans in trees}

    def piece(chans, h, k):
        return [parts[c][h][k] for c in chans]

    def post(src, kind, t, k):
        if k < K:
            if kind in ("up", "down"):   # one message per channel (NCCL connection)
                waiting.append(comm.waitall([comm.irecv(src, tag=(kind, t, k, i)) for i in range(width[t])]))
            else:
                waiting.append(comm.irecv(src, tag=(kind, t, k)))
            actions.append((src, kind, t, k))

    def send(dst, kind, t, k, data, factor):
        if kind in ("up", "down"):
            sends.extend(comm.isend(dst, [Wire(a, factor)], tag=(kind, t, k, i)) for i, a in enumerate(data))
        else:
            sends.append(comm.isend(dst, [Wire(a, factor) for a in data], tag=(kind, t, k)))

    def deliver(t, k, data):
        final[(t, k)] = data
        for child in kids[t]:
            send(child, "down", t, k, data, 1.0)
        for h in peers:
            send(local[h], "ag", t, k, data, f)

    def reduced(t, k):
        if parent[t] is None:
            deliver(t, k, acc[(t, k)])
        else:
            send(parent[t], "up", t, k, acc[(t, k)], 1.0)

    parent, kids = {}, {}
    for t, chans in trees:
        parent[t], kids[t] = plan.trees[chans[0]][r]
        for k in range(K):
            acc[(t, k)] = piece(chans, me, k)
            missing[(t, k)] = len(peers) + len(kids[t])
            for h in peers:            # NVLS scatter: my data of head h's block
                send(local[h], "rs", t, k, piece(chans, h, k), f)
        for h in peers:
            post(local[h], "rs", t, 0)
            post(local[h], "ag", t, 0)
        for child in kids[t]:
            post(child, "up", t, 0)
        if parent[t] is not None:
            post(parent[t], "down", t, 0)
        if missing[(t, 0)] == 0:       # one GPU per node and a leaf: nothing to wait for
            for k in range(K):
                reduced(t, k)
    with comm.phase("nvlstree"):
        while waiting:
            i, payload = yield comm.waitany(waiting)
            del waiting[i]
            src, kind, t, k = actions.pop(i)
            post(src, kind, t, k + 1)   # keep the stream busy while we work on this chunk
            if kind in ("up", "down"):
                payload = [w for one in payload for w in one]
            data = [w.data for w in payload]
            if kind == "down":
                deliver(t, k, data)
            elif kind == "ag":
                got_ag[(t, k, local.index(src))] = data
            else:                       # "rs" (the switch's reduction) or "up" (a child's sum)
                acc[(t, k)] = yield comm.add(acc[(t, k)], data, op=_add)
                missing[(t, k)] -= 1
                if missing[(t, k)] == 0:
                    reduced(t, k)
        if sends:
            yield comm.waitall(sends)
    where = {c: (t, i) for t, chans in trees for i, c in enumerate(chans)}
    out = []
    for c in range(C):
        t, i = where[c]
        for h in range(P):
            for k in range(K):
                out.append(final[(t, k)][i] if h == me else got_ag[(t, k, h)][i])
    return out
