"""NCCL's allreduce algorithms as per-rank generator code (used by ``algorithms/nccl_*.py``).

Every algorithm runs on real data (or size-only symbolic data) through the communicator,
channel by channel as NCCL does (``shared/reference/nccl.md`` 2.1-2.4):

* the buffer is cut into ``C`` contiguous channel ranges; each channel runs its own ring,
  tree or NVLS heads on its range, all channels at once;
* the protocol's wire size is modelled as inflation of every message
  (:class:`~simcollective.nccl.protocols.Wire`);
* NCCL's latency of the call (its base latency + per-hop latencies along the algorithm, with
  the ``[nccl]`` figures of the profile, see :func:`simcollective.nccl.model.latency`) is
  spent once at the start, in the phase ``latency``; the flows carry only bandwidth (the
  ``nccl`` profile sets the graph's own latencies to zero). In this flow model the number
  of pipelined loops does not change the time, so loops beyond ``MAX_LOOPS`` per channel
  are merged to keep the event count down;
* the pipeline fill that the flows do not carry (NVLS rows, :func:`nvls_fill`; rings,
  :func:`ring_fill`, but for the multi-node Simple rings whose latency carries NCCL's own
  plateau factor) is spent after them, in the phase ``pipeline-fill``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..patterns.dense import TreeJob, pipelined_trees, split
from ..data.blocks import block_bounds
from ..data.parts import concat
from ..errors import UserInputError
from . import model, nvls_tree
from .constants import NcclConstants
from .protocols import (PROTOCOLS, Wire, check_protocol, nvls_chunk_bytes, ring_chunk_bytes, step_bytes,
                        tree_chunk_bytes)
from .search import ring_orders, tree_links

__all__ = ["Plan", "make_plan", "run_plan", "check_options", "MAX_CHANNELS", "MAX_LOOPS", "messages_hook",
           "nccl_table", "ring_fill", "nvls_fill", "clear_plans", "RING_FILL_STEPS"]

#: NCCL's MAXCHANNELS for rings and trees; NVLS: NCCL_MAX_NVLS_ARITY heads x channels cap
MAX_CHANNELS = {"ring": 64, "tree": 64, "nvls": 32}
MAX_LOOPS = 2
MAX_TREE_CHUNKS = 8
ALGOS = ("ring", "tree", "nvls")
NCCL_NAMES = {"ring": "Ring", "tree": "Tree", "nvls": "NVLS", "nvlstree": "NVLSTree"}
#: NVLSTree: pieces of the buffer pipelined through NVLS reduce, network exchange, NVLS multicast
NVLSTREE_PIECES = 16
NVLS_CHUNK = 128 * 1024
#: Pipeline fill of NVLS and NVLSTree, in rows of NCCL's chunk (one chunk per head and channel):
#: the rate-limited passes a chunk makes in series, less one (the last is the bandwidth time).
#: NVLS on one node: multimem load-reduce (switch -> GPU) then multimem store (GPU -> switch),
#: 1 row. NVLSTree on 2 nodes: NVLS reduce, network up to the tree root, network down, NVLS
#: multicast, and the root's reduce between the two network passes: 4 rows. Ours (the chain of
#: all_reduce.h's NVLS/NVLS_TREE roles as nccl.md 2.4 describes it), checked against the logs.
#: NVLSTree beyond 2 nodes ("nvlstree-wide", nvls_tree.py): its flows pipeline the tree's network
#: passes chunk by chunk (their fill is simulated) but post the NVLS reduce of every chunk at once
#: and multicast each as it arrives, so only the two NVLS passes' rows are added: 2 rows (checked
#: against the 4- and 8-node logs B, E, C; 6 rows, the whole chain, overshoots: B 64 MiB 0.74).
NVLS_FILL_ROWS = {"nvls": 1, "nvlstree": 4, "nvlstree-wide": 2}
#: Pipeline fill of a ring allreduce, in FIFO steps (:func:`ring_fill`): every channel spends the
#: time of 4 more ring steps (NCCL_STEPS / 2, Simple's chunkSteps: one Simple chunk), each of its
#: per-rank block capped at one FIFO step (Simple 512 KiB, LL128 576,000 B). LL: none (it forwards
#: 8-byte lines as they arrive, and its 1-2 MiB points are not slower than the model).
RING_FILL_STEPS = {"simple": 4, "ll128": 4, "ll": 0}
#: ... except where the ring's latency already counts NCCL's own "plateau effect of ring"
#: (model.ring_plateau_factor: Simple across nodes, x1.4 / x1.9): one allowance, not two.
#: True: the fill there too (to measure what it would do; 2 x 8 H100 G 128-256 MiB -> 0.87)
RING_FILL_WITH_PLATEAU_FACTOR = False


def check_options(nranks: int, protocol=None, channels=None, **_ignored) -> None:
    """Registry ``check=`` hook of the nccl-* algorithms."""
    if protocol is not None:
        check_protocol(protocol)
    if channels is not None and (isinstance(channels, bool) or not isinstance(channels, int) or channels < 1):
        raise UserInputError(f"--channels {channels!r} must be a positive integer (NCCL runs 1 to 64 channels)")


@dataclass
class Plan:
    """What every rank of one call runs: algorithm, protocol, channels and their rings/trees."""

    algorithm: str
    protocol: str
    channels: int
    latency_s: float
    wire: float
    machine: object
    orders: list | None = None       # ring: ranks in ring order per channel
    positions: list | None = None    # ring: rank -> position per channel
    trees: list | None = None        # tree: rank -> (parent, children) per channel
    model_choice: tuple | None = None  # nccl: NCCL's own pick (algorithm, protocol, channels, us)
    predicted_us: float | None = None
    fill: float = 0.0                  # pipeline fill, as a fraction of the call's bandwidth time

    def fields(self) -> dict:
        name = "nvls" if self.algorithm == "nvlstree" else self.algorithm
        out = {"algorithm_chosen": f"nccl-{name}", "protocol": self.protocol, "channels": self.channels,
               "nccl_algorithm": NCCL_NAMES[self.algorithm], "nccl_latency_us": self.latency_s * 1e6}
        if self.predicted_us is not None:
            out["nccl_predicted_us"] = self.predicted_us
        if self.model_choice is not None:
            a, p, c, _ = self.model_choice
            out["nccl_model_choice"] = {"algorithm": a, "protocol": p, "channels": c}
        return out


_PLANS: dict = {}


def nccl_table(profile) -> NcclConstants:
    """The profile's ``[nccl]`` figures (the ``nccl`` profile's when the run's has none)."""
    table = getattr(profile, "nccl", None)
    if table is None:
        from ..profiles import load_profile

        table = load_profile("nccl").nccl
    return table


def clear_plans() -> None:
    """Forget every cached plan (after changing a module figure such as ``RING_FILL_STEPS``)."""
    _PLANS.clear()


def cached_plan(graph, gpus, profile, what: tuple, build) -> Plan:
    """The plan of ``what`` (collective, algorithm, size, options) on ``gpus`` of ``graph``
    (its line-rate graph when it has one): ``build(graph)`` the first time, cached after,
    since every rank asks for the same plan (at most 256 kept)."""
    graph = graph.graph.get("line_rate_graph", graph)
    key = (id(graph), tuple(gpus), id(profile)) + what
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:
            _PLANS.clear()
        plan = _PLANS[key] = build(graph)
    return plan


def require_nvls(m, instead: str) -> None:
    """A one-line error unless machine ``m`` has NVLink SHARP; ``instead`` names what to use."""
    if not m.nvls:
        raise UserInputError(
            "nccl-nvls needs NVLink SHARP (Hopper or newer GPUs on an NVSwitch); this machine has "
            f"{'no NVSwitch' if not m.nvswitch else 'GPUs of compute capability ' + str(m.cc / 10)}: "
            f"use {instead}")


def set_ring_orders(plan: Plan, m) -> None:
    """The plan's ring per channel as NCCL's search finds them, and each rank's position in it."""
    local = None
    if m.intra == "nvlink" and not m.nvswitch and m.direct:
        _, _, local = model.ring_search(m)
    plan.orders = ring_orders(m, plan.channels, local or None)
    plan.positions = [{r: i for i, r in enumerate(o)} for o in plan.orders]


def make_plan(graph, gpus, profile, algorithm: str, nbytes: int, protocol=None, channels=None) -> Plan:
    """The :class:`Plan` of one allreduce of ``nbytes`` per rank; ``algorithm`` is ``ring``,
    ``tree``, ``nvls`` or ``auto`` (NCCL's cost model picks). Cached: every rank asks."""
    return cached_plan(graph, gpus, profile, ("allreduce", algorithm, nbytes, protocol, channels),
                       lambda g: _build_plan(g, gpus, profile, algorithm, nbytes, protocol, channels))


def _build_plan(graph, gpus, profile, algorithm: str, nbytes: int, protocol, channels) -> Plan:
    m = model.machine_of(graph, gpus)
    graphs = model.graphs_of(m)
    table = nccl_table(profile)
    model_choice = None
    predicted = None
    if algorithm == "nvls" and m.nnodes > 1:
        algorithm = "nvlstree"   # NVLS inside the nodes, a tree across them
    if algorithm == "auto":
        protos = (protocol,) if protocol is not None else model.PROTOCOLS
        model_choice = model.choose(m, nbytes, protos=protos)
        runnable = model.choose(m, nbytes, algos=ALGOS + ("nvlstree",), protos=protos)
        algorithm, proto, nch, predicted = runnable
        protocol = proto
        if channels is None:
            channels = nch
    if protocol is None:   # NCCL picks the protocol of a forced algorithm by its model too
        try:
            protocol = model.choose(m, nbytes, algos=(algorithm,))[1]
        except UserInputError:
            protocol = "simple"
    check_protocol(protocol)
    if algorithm in ("nvls", "nvlstree"):
        require_nvls(m, "nccl-ring or nccl-tree")
        if protocol != "simple":
            raise UserInputError(f"--protocol {protocol} does not apply to nccl-nvls (NVLS runs only simple)")
    if protocol == "ll128" and not model.enabled(m, algorithm, "ll128"):
        raise UserInputError("--protocol ll128 needs NVLink between the GPUs (NCCL disables LL128 otherwise); "
                             "allowed here: simple, ll")
    if channels is None:
        channels = model.channels_for(m, graphs, algorithm, protocol, nbytes)
    cap = MAX_CHANNELS["nvls" if algorithm == "nvlstree" else algorithm]
    if channels > cap:
        name = "nvls" if algorithm == "nvlstree" else algorithm
        raise UserInputError(f"--channels {channels} is more than nccl-{name} supports (1 to {cap})")
    if predicted is None:
        predicted = model.predict(m, graphs, algorithm, protocol, nbytes)
        predicted = None if math.isinf(predicted) else predicted
    lat_us = table.launch_us
    if m.nranks > 1:
        lat_us += (model.latency(m, graphs, algorithm, protocol, table=table.latency_table())
                   * model.ring_plateau_factor(m, graphs, algorithm, protocol, nbytes))
    wire = table.wire_factor[protocol]
    if algorithm in ("nvls", "nvlstree"):
        P = m.ppn
        # every GPU link carries (P + 1)/P x S each way in NVLS (scatter + multimem store up,
        # multimem load-reduce + gather down); the emulation sends 2 (P - 1)/P x S each way
        wire = (P + 1) / (2 * (P - 1)) / table.nvls_efficiency if P > 1 else 1.0
    plan = Plan(algorithm, protocol, channels, lat_us * 1e-6, wire, m, model_choice=model_choice,
                predicted_us=predicted)
    if algorithm in ("nvls", "nvlstree"):
        plan.fill = nvls_fill(nbytes, channels, m.ppn, m.nnodes, algorithm)
    elif algorithm == "ring" and (RING_FILL_WITH_PLATEAU_FACTOR
                                  or model.ring_plateau_factor(m, graphs, "ring", protocol, nbytes) == 1.0):
        plan.fill = ring_fill(nbytes, channels, m.nranks, protocol)
    if algorithm == "ring":
        set_ring_orders(plan, m)
    elif algorithm == "tree":
        plan.trees = [tree_links(m, c) for c in range(channels)]
    elif algorithm == "nvlstree" and m.nnodes > 2:
        plan.trees = [nvls_tree.nvlstree_links(m, c) for c in range(channels)]
    return plan


def nvls_fill(nbytes: int, channels: int, heads: int, nnodes: int, algorithm: str) -> float:
    """Pipeline fill of an NVLS / NVLSTree call as a fraction of its bandwidth time.

    NCCL moves each channel's range in rows of one chunk per head (:func:`nvls_chunk_bytes`);
    a row passes through ``NVLS_FILL_ROWS`` rate-limited stages before the last one starts, each
    at the channel's rate, so the call takes ``NVLS_FILL_ROWS`` more row times than its bandwidth
    time: ``rows x min(1, channels x heads x chunk / nbytes)`` of it (a call smaller than one row
    per channel pays one full bandwidth time per stage)."""
    row = channels * heads * nvls_chunk_bytes(nbytes, channels, heads, nnodes)
    rows = NVLS_FILL_ROWS["nvlstree-wide" if algorithm == "nvlstree" and nnodes > 2 else algorithm]
    return rows * min(1.0, row / max(1, nbytes))


def ring_fill(nbytes: int, channels: int, nranks: int, protocol: str, steps: float | None = None) -> float:
    """Pipeline fill of a ring allreduce as a fraction of its bandwidth time.

    Each channel moves its range through ``2 (P - 1)`` ring steps of one per-rank block of
    ``S / (C P)`` bytes at its link rate ``b``: a bandwidth time of ``2 (P - 1) x S / (C P b)``.
    The fill is ``steps`` more ring steps whose block is capped at one FIFO step
    (:func:`~simcollective.nccl.protocols.step_bytes`): ``steps x min(S / (C P), step) / b``, i.e.
    ``steps / (2 (P - 1)) x min(1, row / S)`` of the bandwidth time with the row
    ``C x P x step`` (channels x ranks x one FIFO step). It grows with the call up to the row
    (8 x A100: 24 x 8 x 512 KiB = 96 MiB; 8 x V100: 12 x 8 x 512 KiB = 48 MiB) and is one Simple
    chunk time (4 x 512 KiB over one link) above it: the shape of the single-node logs'
    intercepts (t - S / B grows from ~70 us at 4 MiB to ~200 us from 32-64 MiB on 8 x A100,
    95 -> 167 us on 8 x V100). ``steps`` defaults to ``RING_FILL_STEPS[protocol]`` (LL: 0).

    Not spent where the ring's latency already counts NCCL's "plateau effect of ring" (Simple
    across nodes, :func:`~simcollective.nccl.model.ring_plateau_factor`): NCCL's model has that
    allowance for the slow climb there and none elsewhere; both together overshoot the 2 x 8
    H100 forced ring at 128-256 MiB (0.96 / 0.93 -> 0.87 / 0.87)."""
    if steps is None:
        steps = RING_FILL_STEPS[protocol]
    if not steps or nranks < 2 or nbytes <= 0:
        return 0.0
    row = channels * nranks * step_bytes(protocol)
    return steps / (2 * (nranks - 1)) * min(1.0, row / nbytes)


def plan_for(comm, x, algorithm, protocol=None, channels=None) -> Plan:
    gpus = [comm.gpu(r) for r in range(comm.size)]
    return make_plan(comm.graph, gpus, comm.profile, algorithm, int(x.nbytes), protocol, channels)


def run_plan(comm, x, plan: Plan):
    """Run ``plan`` on this rank; returns the list of result parts in order."""
    if comm.size == 1:
        return [x]
    with comm.phase("latency"):
        yield comm.delay(plan.latency_s)
    if plan.algorithm == "ring":
        start = comm.now
        out = yield from _ring(comm, x, plan)
        if plan.fill:
            with comm.phase("pipeline-fill"):   # see ring_fill: 4 more ring steps of at most one FIFO step
                yield comm.delay(plan.fill * (comm.now - start))
        return out
    if plan.algorithm == "tree":
        return (yield from _tree(comm, x, plan))
    start = comm.now
    if plan.algorithm == "nvlstree":
        if plan.machine.nnodes > 2:
            out = yield from nvls_tree.run(comm, x, plan)
        else:
            out = yield from _nvlstree(comm, x, plan)
    else:
        out = yield from _nvls(comm, x, plan)
    if plan.fill:
        with comm.phase("pipeline-fill"):     # see nvls_fill: rows of NCCL's chunk before the pipe is full
            yield comm.delay(plan.fill * (comm.now - start))
    return out


def _ring(comm, x, plan):
    """C rings at once, each on its channel range: reduce-scatter then allgather, P - 1
    steps each, in up to MAX_LOOPS loops of P chunks (NCCL's chunk: the protocol's)."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = plan.channels
    ranges = split(x, C)
    chunk = ring_chunk_bytes(plan.protocol)
    item = x.dtype.itemsize
    pieces = []
    for rng in ranges:
        loops = max(1, min(MAX_LOOPS, math.ceil(len(rng) * item / (P * chunk))))
        pieces.append(split(rng, loops))
    links = []
    for c in range(C):
        pos = plan.positions[c][r]
        order = plan.orders[c]
        links.append((pos, order[(pos + 1) % P], order[(pos - 1) % P]))
    results = [[None] * len(p) for p in pieces]
    for loop in range(max(len(p) for p in pieces)):
        jobs = [(c, split(pieces[c][loop], P)) for c in range(C) if loop < len(pieces[c])]
        with comm.phase("reduce-scatter"):
            for s in range(P - 1):
                sends, recvs = [], []
                for c, blocks in jobs:
                    pos, nxt, prv = links[c]
                    sends.append(comm.isend(nxt, Wire(blocks[(pos - s) % P], f), tag=(c, loop, s)))
                    recvs.append(comm.irecv(prv, tag=(c, loop, s)))
                got = yield comm.waitall(recvs + sends)
                for (c, blocks), g in zip(jobs, got):
                    b = (links[c][0] - s - 1) % P
                    blocks[b] = yield comm.add(blocks[b], g.data)
        with comm.phase("allgather"):
            for s in range(P - 1):
                sends, recvs = [], []
                for c, blocks in jobs:
                    pos, nxt, prv = links[c]
                    sends.append(comm.isend(nxt, Wire(blocks[(pos + 1 - s) % P], f), tag=(c, loop, "ag", s)))
                    recvs.append(comm.irecv(prv, tag=(c, loop, "ag", s)))
                got = yield comm.waitall(recvs + sends)
                for (c, blocks), g in zip(jobs, got):
                    blocks[(links[c][0] - s) % P] = g.data
        for c, blocks in jobs:
            results[c][loop] = blocks
    return [b for per_channel in results for blocks in per_channel for b in blocks]


def _tree(comm, x, plan):
    """Per channel, reduce up and broadcast down its tree at once, chunk by chunk."""
    r, f = comm.rank, plan.wire
    C = plan.channels
    chunk = tree_chunk_bytes(plan.protocol)
    item = x.dtype.itemsize
    jobs = []
    for c, rng in enumerate(split(x, C)):
        k = max(1, min(MAX_TREE_CHUNKS, math.ceil(len(rng) * item / chunk)))
        parent, kids = plan.trees[c][r]
        jobs.append(TreeJob(chunks=[Wire(p, f) for p in split(rng, k)], parent=parent, children=list(kids), tag=c))
    with comm.phase("tree"):
        yield from pipelined_trees(comm, jobs)
    return [w.data for job in jobs for w in job.out]


def _nvls(comm, x, plan):
    """NVLS emulated with point-to-point messages: per channel, every rank sends block h
    of its range to head h (rank h), which reduces it ("in the switch"), then every head
    sends its reduced block to all ranks; message sizes are scaled so that each GPU link
    carries what NVLS carries (see :func:`make_plan`)."""
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


def _nvlstree(comm, x, plan):
    """NVLSTree on 2 nodes (3 or more: :mod:`simcollective.nccl.nvls_tree`): NVLS inside
    each node (local GPU h is the head of block h), the
    heads of the two nodes (same local index: same rail) exchange and add their reduced
    blocks over the network, then NVLS multicasts the result inside each node.

    The buffer is cut into pieces run as a three-stage software pipeline: at tick t this
    rank reduces piece t, exchanges piece t - 1 and multicasts piece t - 2 (all posted at
    once), as NCCL overlaps the three with its chunks. Inside a node the channels are not
    simulated separately (the same links, the same shares); the network exchange goes one
    message per channel, NCCL's connections (each capped by a per-connection goodput,
    ``--topology-opt net_conn_bandwidth``).
    """
    r, f = comm.rank, plan.wire
    m = plan.machine
    node = next(i for i, ranks in enumerate(m.nodes) if r in ranks)
    local = m.nodes[node]
    me = local.index(r)
    peer = m.nodes[1 - node][me]
    ppn = len(local)
    others = [h for h in range(ppn) if h != me]
    nbytes = int(x.nbytes)
    K = max(1, min(NVLSTREE_PIECES, math.ceil(nbytes / (ppn * NVLS_CHUNK))))
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
                    sends.append(comm.isend(peer, Wire(part, 1.0), tag=("x", t - 1, j)))
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


def messages_hook(algorithm):
    """The registry ``messages`` hook of an nccl-* allreduce: the messages its plan sends
    (the plan is the one :func:`report_fields` reports, made once per call and cached)."""

    def messages(P, *, n, dtype, graph, placement, profile, protocol=None, channels=None, **_):
        if P < 2:
            return 0
        item = dtype.itemsize
        plan = make_plan(graph, list(placement), profile, algorithm, int(n * item), protocol, channels)
        sizes = [(b - a) * item for a, b in block_bounds(n, plan.channels)]   # channel ranges
        if plan.algorithm == "ring":       # per loop: 2 (P - 1) steps, every rank one message
            chunk = ring_chunk_bytes(plan.protocol)
            return 2 * (P - 1) * P * sum(max(1, min(MAX_LOOPS, math.ceil(b / (P * chunk)))) for b in sizes)
        if plan.algorithm == "tree":       # every tree edge: the channel's chunks up and down
            chunk = tree_chunk_bytes(plan.protocol)
            return 2 * (P - 1) * sum(max(1, min(MAX_TREE_CHUNKS, math.ceil(b / chunk))) for b in sizes)
        if plan.algorithm == "nvls":       # per channel every rank to every other, twice
            return 2 * plan.channels * P * (P - 1)
        if plan.machine.nnodes > 2:        # nvlstree beyond 2 nodes: NVLS + double binary tree
            return nvls_tree.messages(plan.machine, n * item, plan.channels)
        total = 0                          # nvlstree on 2 nodes: K pieces, reduce + exchange + multicast
        for ranks in plan.machine.nodes:
            ppn = len(ranks)
            K = max(1, min(NVLSTREE_PIECES, math.ceil(n * item / (ppn * NVLS_CHUNK))))
            total += ppn * K * (2 * (ppn - 1) + plan.channels)
        return total

    return messages


def report_fields(algorithm):
    """The ``report_fields(graph, placement, nbytes, options, profile)`` hook of an nccl-* algorithm."""

    def fields(graph, placement, nbytes, options, profile):
        plan = make_plan(graph, list(placement), profile, algorithm, int(nbytes), options.get("protocol"),
                         options.get("channels"))
        return plan.fields()

    return fields


def protocols_help() -> str:
    return ", ".join(PROTOCOLS)
