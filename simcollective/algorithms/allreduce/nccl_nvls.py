"""nccl-nvls: NCCL's NVLS allreduce: reduction in the NVSwitch (NVLink SHARP, Hopper or newer); NVLSTree across nodes.

One node: NVLS (:func:`nvls_allreduce`). Across nodes: NCCL's NVLSTree, NVLS inside every
node and NCCL's double binary tree across the nodes (two nodes: :func:`nvlstree_two_nodes`;
three or more: :func:`nvlstree_wide`, the shape of NCCL's ``connectNvls`` in
``src/transport/nvls.cc`` and ``runNvlsTree`` in ``src/device/all_reduce.h``).

NVLSTree beyond two nodes, how NCCL runs it and what runs here:

* every GPU of a node is an NVLS **head**: each channel's range of the buffer is cut into
  ``ppn`` blocks, block ``h`` belongs to local GPU ``h`` (NVLS graph: one head per GPU, each
  with its own NIC, so head ``h`` of every node is on rail ``h``);
* channel ``c`` uses tree ``c % 2`` of NCCL's double binary tree over the **nodes**
  (:func:`~simcollective.patterns.trees.btree`, :func:`~simcollective.patterns.trees.dtree`);
  in that tree head ``h`` of node ``v`` talks to head ``h`` of ``v``'s parent and children
  nodes (``treeUp = heads[tree0Parent]``, ...);
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
channels = 16 connections per head, where the ring has 2 per NIC), and a per-connection
goodput (``--topology-opt net_conn_bandwidth``) caps each of them. A head that drives
several NICs spreads its channels over them as the ring and tree plans do: the ``i``-th
channel of each tree leaves through NIC ``i mod k`` of the head's ``k`` and enters the peer
head through the same rail (the plan's ``vias``, :func:`~simcollective.nccl.nics.nvlstree_vias`).
Chunks are NCCL's NVLSTree chunk (128 KiB per channel and head, 64 KiB from 4 nodes), merged
down to at most ``MAX_NVLSTREE_PIECES`` per tree.
Every receive stream (peer, kind, tree) has one receive posted at a time, so the chunks of
a stream travel one after the other (rendezvous messages start when the receive is posted).

Two nodes keep the exchange of :func:`nvlstree_two_nodes` (the same bytes on the one network
link: with two nodes each tree's up and down messages cross the same link in opposite
directions, which the exchange sends as one message each way).
"""

from __future__ import annotations

from functools import lru_cache

from ...data.parts import concat
from ...data.symbolic import cut
from ...nccl.hooks import check_options, messages_hook, report_fields
from ...nccl.plans import nvlstree_pieces, plan_for, wide_nvlstree_pieces
from ...nccl.search import trees_of
from ...patterns.channels import Wire, WireCut, Wires, cut_bytes, run_call
from ...patterns.dense import cached_bounds, split
from ..registry import register


def nvls_allreduce(comm, x, plan):
    """NVLS emulated with point-to-point messages: per channel, every rank sends block h
    of its range to head h (rank h), which reduces it ("in the switch"), then every head
    sends its reduced block to all ranks; message sizes are scaled so that each GPU link
    carries what NVLS carries (see :func:`~simcollective.nccl.plans.make_plan`). Returns the result parts in order."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = plan.channels
    chans = [split(rng, P) for rng in split(x, C)]
    others = [h for h in range(P) if h != r]

    def exchange(send_block, tag):
        """Every channel: ``send_block(blocks, h)`` to each other rank h, one block from each."""
        sends, recvs = [], []
        for c, blocks in enumerate(chans):
            for h in others:
                sends.append(comm.isend(h, Wire(send_block(blocks, h), f), tag=(c, tag)))
            for h in others:
                recvs.append(comm.irecv(h, tag=(c, tag)))
        return comm.waitall(recvs + sends)

    with comm.phase("nvls-reduce"):
        got = yield exchange(lambda blocks, h: blocks[h], "rs")     # block h to its head h
        i = 0
        for c, blocks in enumerate(chans):
            acc = blocks[r]
            for _h in others:
                acc = yield comm.add(acc, got[i].data)
                i += 1
            blocks[r] = acc
    with comm.phase("nvls-multicast"):
        got = yield exchange(lambda blocks, h: blocks[r], "ag")     # this head's reduced block to all
        i = 0
        for c, blocks in enumerate(chans):
            for h in others:
                blocks[h] = got[i].data
                i += 1
    return [b for blocks in chans for b in blocks]


def nvlstree_two_nodes(comm, x, plan):
    """NVLSTree on 2 nodes (3 or more: :func:`nvlstree_wide`): NVLS inside each node
    (local GPU h is the head of block h), the heads of the two nodes (same local index:
    same rail) exchange and add their reduced blocks over the network, then NVLS
    multicasts the result inside each node.

    The buffer is cut into pieces run as a three-stage software pipeline: at tick t this
    rank reduces piece t, exchanges piece t - 1 and multicasts piece t - 2 (all posted at
    once), as NCCL overlaps the three with its chunks. Inside a node the channels are not
    simulated separately (the same links, the same shares); the network exchange goes one
    message per channel, NCCL's connections (each capped by a per-connection goodput,
    ``--topology-opt net_conn_bandwidth``).
    """
    r, f = comm.rank, plan.wire
    m = plan.machine
    node = m.node_of[r]
    local = m.nodes[node]
    me = local.index(r)
    peer = m.nodes[1 - node][me]
    vias = [plan.tree_via(j, r).get(peer) for j in range(plan.channels)]   # channel j's NICs
    ppn = len(local)
    others = [h for h in range(ppn) if h != me]
    nbytes = int(x.nbytes)
    K = nvlstree_pieces(nbytes, ppn)
    blocks = [split(piece, ppn) for piece in split(x, K)]
    with comm.phase("nvlstree"):
        for t in range(K + 2):
            sends, recvs, kinds = [], [], []
            if t < K:                      # NVLS reduce of piece t to its heads
                for h in others:
                    sends.append(comm.isend(local[h], Wire(blocks[t][h], f), tag=("rs", t)))
                for h in others:
                    recvs.append(comm.irecv(local[h], tag=("rs", t)))
                    kinds.append(("rs", t, h))
            if 0 <= t - 1 < K:             # network exchange of piece t - 1: one message per channel
                for j, part in enumerate(split(blocks[t - 1][me], plan.channels)):
                    sends.append(comm.isend(peer, Wire(part, 1.0), tag=("x", t - 1, j), via=vias[j]))
                    recvs.append(comm.irecv(peer, tag=("x", t - 1, j)))
                    kinds.append(("xp", t - 1, me))
            if 0 <= t - 2 < K:             # NVLS multicast of piece t - 2
                for h in others:
                    sends.append(comm.isend(local[h], Wire(blocks[t - 2][me], f), tag=("ag", t - 2)))
                for h in others:
                    recvs.append(comm.irecv(local[h], tag=("ag", t - 2)))
                    kinds.append(("ag", t - 2, h))
            got = yield comm.waitall(recvs + sends)
            parts = [g.data for (kind, _, _), g in zip(kinds, got) if kind == "xp"]
            for (kind, i, h), g in zip(kinds, got):
                if kind == "ag":
                    blocks[i][h] = g.data
                elif kind != "xp":
                    blocks[i][me] = yield comm.add(blocks[i][me], g.data)
            if parts:
                blocks[t - 1][me] = yield comm.add(blocks[t - 1][me], concat(parts))
    return [b for piece in blocks for b in piece]


def _add(a, b):
    """Sum of two chunks of a tree's channels (lists of pieces, or size-only pieces as one
    :class:`~simcollective.data.symbolic.SymbolicPieces`: one sum for all of them)."""
    if a.__class__ is not list and b.__class__ is not list:
        return a + b
    return [x + y for x, y in zip(a, b)]


@lru_cache(maxsize=8)
def _cuts(n: int, C: int, P: int, K: int) -> dict:
    """``{tree: [[bounds of chunk k of head h's block, per channel of the tree] per k] per h}``:
    the ranges of an ``n``-element input that ``split`` cuts into ``C`` channel ranges, ``P``
    head blocks each and ``K`` chunks each (every rank cuts the same places: computed once)."""
    per_channel = []
    for c0, c1 in cached_bounds(n, C):
        heads = []
        for b0, b1 in cached_bounds(c1 - c0, P):
            heads.append([(c0 + b0 + a, c0 + b0 + b) for a, b in cached_bounds(b1 - b0, K)])
        per_channel.append(heads)
    return {t: [[tuple(per_channel[c][h][k] for c in chans) for k in range(K)] for h in range(P)]
            for t, chans in trees_of(C)}


@lru_cache(maxsize=8)
def _cut_bytes(n: int, C: int, P: int, K: int, itemsize: int, factor: float) -> dict:
    """The wire bytes of each chunk of :func:`_cuts` (``{tree: [[bytes per k] per h]}``)."""
    return {t: [[cut_bytes(b, itemsize, factor) for b in per_head] for per_head in heads]
            for t, heads in _cuts(n, C, P, K).items()}


#: the kinds of message of :class:`_WideNvlsTree` (NVLS scatter to the heads, NVLS multicast,
#: up the tree, down the tree); a message's tag is ``(8 k + 2 kind + t) W + i`` for chunk ``k``
#: of tree ``t``, channel ``i`` of the tree (0 but up and down), ``W`` channels per tree at most
_RS, _AG, _UP, _DOWN = range(4)


@lru_cache(maxsize=8)
def _tags(K: int, W: int) -> list:
    """``[kind][t][k]``: the tags of chunk ``k`` of tree ``t``'s messages of ``kind``, one per
    channel of the tree (tag ``(8 k + 2 kind + t) W + i`` for channel ``i``): made once, every
    rank's mailbox keys share their int objects."""
    return [[[tuple(range((8 * k + 2 * kind + t) * W, (8 * k + 2 * kind + t + 1) * W)) for k in range(K)]
             for t in range(2)] for kind in range(4)]


class _WideNvlsTree:
    """One rank's state in an NVLSTree allreduce on 3 or more nodes (see :func:`nvlstree_wide`)."""

    def __init__(self, comm, x, plan):
        r = comm.rank
        m = plan.machine
        node = m.node_of[r]
        self.comm, self.f = comm, plan.wire
        self.local = m.nodes[node]
        self.me = self.local.index(r)
        self.head = {g: h for h, g in enumerate(self.local)}   # rank -> its place in the node
        self.P = P = len(self.local)
        self.C = C = plan.channels
        self.K = K = wide_nvlstree_pieces(int(x.nbytes), C, P, m.nnodes)
        self.x = x
        self.trees = trees_of(C)
        # cuts[t][h][k]: where chunk k of head h's block of every channel of tree t lies in x
        self.cuts = _cuts(len(x), C, P, K)
        self.cut_bytes = _cut_bytes(len(x), C, P, K, x.dtype.itemsize, self.f)   # their wire bytes, by the same keys
        self.peers = [h for h in range(P) if h != self.me]
        # [t][k]: my block's partial sum, until sent on (a piece per channel of the tree: a list,
        # or one SymbolicPieces for size-only data, see _add); the contributions still to add;
        # my block, fully reduced; [t][k][h]: head h's block, fully reduced
        self.acc = [[None] * K for _ in range(2)]
        self.missing = [[0] * K for _ in range(2)]
        self.final = [[None] * K for _ in range(2)]
        self.got_ag = [[[None] * P for _ in range(K)] for _ in range(2)]
        # the posted receive of every stream, keyed (src, kind, t, k); and every send (only
        # counted: nothing waits for one send in particular)
        self.inbox = comm.completions()
        self.width = [0, 0]
        self.parent, self.kids = [None, None], [(), ()]
        for t, chans in self.trees:
            self.width[t] = len(chans)
            self.parent[t], self.kids[t] = plan.trees[chans[0]][r]
        self.W = max(self.width)   # (the tags' stride)
        self.tags = _tags(K, self.W)
        # vias[t][i]: peer -> the NICs (out, in) of the tree's i-th channel's sends across nodes
        self.vias = [[plan.tree_via(c, r) for c in chans] for _, chans in self.trees]

    def piece(self, t, h, k):
        """Chunk k of head h's block of every channel of tree t, of this rank's input."""
        return cut(self.x, self.cuts[t][h][k])

    def post(self, src, kind, t, k):
        if k < self.K:
            tags = self.tags[kind][t][k]
            if kind >= _UP:   # one message per channel (NCCL connection)
                self.inbox.recv_all(src, tags[:self.width[t]], (src, kind, t, k))
            else:
                self.inbox.recv(src, tags[0], (src, kind, t, k))

    def send_wires(self, dst, kind, t, k, wires):
        """Send a chunk up or down the tree: one Wire per channel, each its own message
        through the channel's NICs."""
        send, vias = self.inbox.send, self.vias[t]
        for tag, w, via in zip(self.tags[kind][t][k], wires, vias):
            send(dst, w, tag, via.get(dst))

    def deliver(self, t, k, data):
        self.final[t][k] = data
        kids = self.kids[t]
        if kids:
            wires = [Wire(a, 1.0) for a in data]   # (payloads are immutable: every child gets the same)
            for child in kids:
                self.send_wires(child, _DOWN, t, k, wires)
        ag, send, local = Wires(data, self.f), self.inbox.send, self.local
        tag = self.tags[_AG][t][k][0]
        for h in self.peers:
            send(local[h], ag, tag)

    def reduced(self, t, k):
        acc, self.acc[t][k] = self.acc[t][k], None
        if self.parent[t] is None:
            self.deliver(t, k, acc)
        else:
            self.send_wires(self.parent[t], _UP, t, k, [Wire(a, 1.0) for a in acc])

    def start(self):
        """Send this rank's data of every chunk to its heads; post the first receive of every stream."""
        send, local = self.inbox.send, self.local
        for t, _ in self.trees:
            kids, parent = self.kids[t], self.parent[t]
            cuts, cut_bytes = self.cuts[t], self.cut_bytes[t]
            for k in range(self.K):
                self.acc[t][k] = self.piece(t, self.me, k)
                self.missing[t][k] = len(self.peers) + len(kids)
                tag = self.tags[_RS][t][k][0]
                for h in self.peers:            # NVLS scatter: my data of head h's block (cut when received)
                    send(local[h], WireCut(self.x, cuts[h][k], self.f, cut_bytes[h][k]), tag)
            for h in self.peers:
                self.post(local[h], _RS, t, 0)
                self.post(local[h], _AG, t, 0)
            for child in kids:
                self.post(child, _UP, t, 0)
            if parent is not None:
                self.post(parent, _DOWN, t, 0)
            if self.missing[t][0] == 0:       # one GPU per node and a leaf: nothing to wait for
                for k in range(self.K):
                    self.reduced(t, k)

    def run(self):
        """This rank's generator: send its data to its heads, then react to every message as
        it arrives until every stream is done; returns the result parts in order."""
        comm, inbox, acc, missing = self.comm, self.inbox, self.acc, self.missing
        self.start()
        with comm.phase("nvlstree"):
            while inbox:
                (src, kind, t, k), payload = yield inbox.next()
                self.post(src, kind, t, k + 1)   # keep the stream busy while we work on this chunk
                if kind == _DOWN:                # one Wire per channel
                    self.deliver(t, k, [w.data for w in payload])
                elif kind == _AG:                # one message of the tree's channels (Wires)
                    self.got_ag[t][k][self.head[src]] = payload.data
                else:                            # the switch's reduction (WireCut) or a child's sum (Wires)
                    data = payload.data if kind == _RS else [w.data for w in payload]
                    acc[t][k] = yield comm.add(acc[t][k], data, op=_add)
                    missing[t][k] -= 1
                    if not missing[t][k]:
                        self.reduced(t, k)
            yield inbox.sent()
        return self.result()

    def result(self) -> list:
        where = {c: (t, i) for t, chans in self.trees for i, c in enumerate(chans)}
        out, chunks = [], range(self.K)
        for c in range(self.C):
            t, i = where[c]
            final, got = self.final[t], self.got_ag[t]
            for h in range(self.P):
                out += [final[k][i] for k in chunks] if h == self.me else [got[k][h][i] for k in chunks]
        return out


def nvlstree_wide(comm, x, plan):
    """This rank's part of one NVLSTree allreduce on 3 or more nodes (``plan``: a
    :class:`~simcollective.nccl.plans.Plan` with ``trees`` from
    :func:`~simcollective.nccl.search.nvlstree_links`); returns the result parts in order."""
    return _WideNvlsTree(comm, x, plan).run()   # (the generator itself: one frame less on every resume)


def nvls_body(comm, x, plan):
    """NVLS on one node, NVLSTree across nodes (two, or three and more)."""
    if plan.algorithm == "nvls":
        return nvls_allreduce(comm, x, plan)
    return nvlstree_wide(comm, x, plan) if plan.machine.nnodes > 2 else nvlstree_two_nodes(comm, x, plan)


@register("nccl-nvls", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("nvls"))
def nccl_nvls(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's NVLS allreduce: reduction in the NVSwitch (NVLink SHARP, Hopper or newer); NVLSTree across nodes.

    On one node the switch reduces and multicasts; across nodes it is NCCL's NVLSTree: NVLS
    inside every node, and between the nodes, per channel, NCCL's double binary tree over the
    nodes (channel c uses tree c % 2), head GPU h of a node talking to head h of the others
    (same rail); see the module docstring.
    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start. ``plan``: the plan to run
    (default: the one NCCL would make).
    """
    if plan is None:
        plan = plan_for(comm, x, "nvls", protocol, channels)
    return run_call(comm, x, plan, nvls_body)   # (the generator itself: one frame less on every resume)


nccl_nvls.report_fields = report_fields("nvls")
