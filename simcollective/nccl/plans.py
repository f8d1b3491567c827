"""NCCL's plan of one call: what every rank of the call runs (algorithm, protocol, channels
and their rings or trees, the latency and pipeline fill to spend), built as NCCL would set
it up, and cached by value (every rank asks for the same plan).

How the ``nccl-*`` algorithms run a plan (their bodies are in ``simcollective/algorithms``):

* the buffer is cut into ``C`` contiguous channel ranges (default: the channels NCCL would
  run for this size on this machine); each channel runs its own ring, tree or NVLS heads on
  its range, all channels at once;
* the protocol (default: what NCCL's cost model picks for the collective, algorithm and
  size; NVLS runs Simple only) is modelled as wire-size inflation of every message
  (:class:`~simcollective.nccl.protocols.Wire`);
* NCCL's latency of the call (its base latency + per-hop latencies along the algorithm, with
  the ``[nccl]`` figures of the profile, see :func:`simcollective.nccl.model.latency`) is
  spent once at the start, in the phase ``latency``; the flows carry only bandwidth (the
  ``nccl`` profile sets the graph's own latencies to zero);
* the pipeline fill that the flows do not carry (NVLS rows,
  :func:`~simcollective.nccl.fill.nvls_fill`; rings, :func:`~simcollective.nccl.fill.ring_fill`,
  but for the multi-node Simple rings whose latency carries NCCL's own plateau factor) is
  spent after them, in the phase ``pipeline-fill``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import UserInputError
from . import coll_model, model
from .constants import NcclConstants
from .fill import FILL, FillRules, nvls_fill, ring_fill
from .nics import network_note, nvlstree_vias, ring_vias, tree_vias
from .plan_keys import constants_key, graph_key
from .protocols import (MAX_CHAIN_CHUNKS, MAX_CHANNELS, MAX_LOOPS, MAX_NVLSTREE_PIECES, MAX_TREE_CHUNKS,
                        NVLSTREE_PIECES, TUNER_ORDER, check_protocol, nvls_chunk_bytes, tree_chunk_bytes)
from .search import nvlstree_links, ring_orders, ring_search, tree_links
from .versions import NEWEST, check_available, tuner_of

__all__ = ["Plan", "make_plan", "make_coll_plan", "plan_for", "plan_for_coll", "nccl_bytes",
           "nccl_table", "clear_plans", "cached_plan", "graph_key", "channel_count",
           "ring_loops", "tree_chunks", "chain_chunks", "nvlstree_pieces", "wide_nvlstree_pieces"]

#: the allreduce algorithms a plan runs (NVLSTree: what ``nvls`` becomes across nodes)
ALGOS = ("ring", "tree", "nvls")
NCCL_NAMES = {"ring": "Ring", "tree": "Tree", "nvls": "NVLS", "nvlstree": "NVLSTree"}


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
    vias: list | None = None           # per channel, the NICs of the sends across nodes (.nics)
    network: str | None = None         # multi-node: what NCCL's model counts of the NICs

    def via(self, channel: int, rank: int):
        """The NICs ``(out, in)`` of ``rank``'s send to its next rank on ring ``channel``, or
        None (same node, or a graph without NICs: the shortest route); see :mod:`.nics`."""
        return None if self.vias is None else self.vias[channel].get(rank)

    def tree_via(self, channel: int, rank: int) -> dict:
        """Tree or NVLSTree channel ``channel``: ``peer -> (NIC out, NIC in)`` of ``rank``'s sends
        across nodes."""
        return {} if self.vias is None else self.vias[channel].get(rank, {})

    @property
    def chosen(self) -> str:
        """The registered algorithm that runs this plan (NVLSTree is ``nccl-nvls``'s)."""
        return "nccl-" + ("nvls" if self.algorithm == "nvlstree" else self.algorithm)

    def fields(self) -> dict:
        out = {"algorithm_chosen": self.chosen, "protocol": self.protocol, "channels": self.channels,
               "nccl_algorithm": NCCL_NAMES[self.algorithm], "nccl_latency_us": self.latency_s * 1e6,
               "nccl_version": getattr(self.machine.tuner, "name", None) or NEWEST}
        if self.predicted_us is not None:
            out["nccl_predicted_us"] = self.predicted_us
        if self.network is not None:
            out["nccl_network"] = self.network
        if self.model_choice is not None:
            a, p, c, _ = self.model_choice
            out["nccl_model_choice"] = {"algorithm": a, "protocol": p, "channels": c}
        return out


# -- the cache, by value -----------------------------------------------------------------------
_PLANS: dict = {}


def nccl_table(profile) -> NcclConstants:
    """The profile's ``[nccl]`` figures (the ``nccl`` profile's when the run's has none)."""
    table = getattr(profile, "nccl", None)
    return NcclConstants.default() if table is None else table


def clear_plans() -> None:
    """Forget every cached plan."""
    _PLANS.clear()


def cached_plan(graph, gpus, profile, what: tuple, build) -> Plan:
    """The plan of ``what`` (collective, algorithm, size, options, fill rules) on ``gpus`` of
    ``graph`` (its line-rate graph when it has one): ``build(graph)`` the first time, cached
    after, since every rank asks for the same plan (at most 256 kept). The key is made of
    values: the graph's digest (:func:`graph_key`), the GPUs, the profile's ``[nccl]`` figures and ``what``."""
    graph = graph.graph.get("line_rate_graph", graph)
    key = (graph_key(graph), tuple(gpus), constants_key(nccl_table(profile))) + what
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) > 256:
            _PLANS.clear()
        plan = _PLANS[key] = build(graph)
    return plan


# -- shared by the plans of every collective ---------------------------------------------------
def require_nvls(m, instead: str) -> None:
    """A one-line error unless machine ``m`` has NVLink SHARP; ``instead`` names what to use."""
    if not m.nvls:
        raise UserInputError(
            "nccl-nvls needs NVLink SHARP (Hopper or newer GPUs on an NVSwitch); this machine has "
            f"{'no NVSwitch' if not m.nvswitch else 'GPUs of compute capability ' + str(m.cc / 10)}: "
            f"use {instead}")


def set_ring_orders(plan: Plan, m, graph) -> None:
    """The plan's ring per channel as NCCL's search finds them, each rank's position in it, and
    the NICs of each channel's sends across nodes (:func:`.nics.ring_vias`)."""
    local = None
    if m.intra == "nvlink" and not m.nvswitch and m.direct:
        _, _, local = ring_search(m)
    plan.orders = ring_orders(m, plan.channels, local or None)
    plan.positions = [{r: i for i, r in enumerate(o)} for o in plan.orders]
    if m.nnodes > 1:
        plan.vias = ring_vias(graph, m, plan.orders)


def _check_channels(channels: int, algorithm: str) -> None:
    name = "nvls" if algorithm == "nvlstree" else algorithm
    cap = MAX_CHANNELS[name]
    if channels > cap:
        raise UserInputError(f"--channels {channels} is more than nccl-{name} supports (1 to {cap})")


def _ll128_refused() -> UserInputError:
    return UserInputError("--protocol ll128 needs NVLink between the GPUs (NCCL disables LL128 otherwise); "
                          "allowed here: simple, ll")


def _nvls_simple_only(protocol) -> None:
    if protocol not in (None, "simple"):
        raise UserInputError(f"--protocol {protocol} does not apply to nccl-nvls (NVLS runs only simple)")


def _latency_us(table: NcclConstants, m, latency) -> float:
    """The launch time plus, with more than one rank, ``latency(figures)`` (NCCL's L, us)."""
    lat_us = table.launch_us
    if m.nranks > 1:
        lat_us += latency(table.latency_table())
    return lat_us


# -- allreduce -------------------------------------------------------------------------------
def nvls_efficiency(table: NcclConstants, m) -> float:
    """NVLS's share of the NVLink rate: the profile's (Hopper-fitted) x NCCL's nvlsEfficiency ratio."""
    return table.nvls_efficiency * model.NVLS_EFFICIENCY[m.arch] / model.NVLS_EFFICIENCY["hopper"]


def make_plan(graph, gpus, profile, algorithm: str, nbytes: int, protocol=None, channels=None,
              fill: FillRules = FILL) -> Plan:
    """The :class:`Plan` of one allreduce of ``nbytes`` per rank; ``algorithm`` is ``ring``,
    ``tree``, ``nvls`` or ``auto`` (NCCL's cost model picks); ``fill``: the ring's pipeline-fill
    rules (:class:`FillRules`). Cached: every rank asks."""
    return cached_plan(graph, gpus, profile, ("allreduce", algorithm, nbytes, protocol, channels, fill),
                       lambda g: _build_plan(g, gpus, profile, algorithm, nbytes, protocol, channels, fill))


def _pick(m, nbytes: int, algorithm: str, protocol, channels) -> tuple:
    """``(algorithm, protocol, channels, NCCL's own pick or None, predicted us or None)``."""
    model_choice = predicted = None
    if algorithm == "nvls" and m.nnodes > 1:
        algorithm = "nvlstree"   # NVLS inside the nodes, a tree across them
    if algorithm == "auto":
        protos = (protocol,) if protocol is not None else TUNER_ORDER
        model_choice = model.choose(m, nbytes, protos=protos)
        algorithm, protocol, nch, predicted = model.choose(m, nbytes, algos=ALGOS + ("nvlstree",), protos=protos)
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
        check_available(m, algorithm)
        _nvls_simple_only(protocol)
    if protocol == "ll128" and not model.enabled(m, algorithm, "ll128"):
        raise _ll128_refused()
    return algorithm, protocol, channels, model_choice, predicted


def _build_plan(graph, gpus, profile, algorithm: str, nbytes: int, protocol, channels, fill: FillRules) -> Plan:
    m = model.machine_of(graph, gpus)
    graphs = model.graphs_of(m)
    table = nccl_table(profile)
    m.tuner = tuner_of(table)
    algorithm, protocol, channels, model_choice, predicted = _pick(m, nbytes, algorithm, protocol, channels)
    if channels is None:
        channels = model.channels_for(m, graphs, algorithm, protocol, nbytes)
    _check_channels(channels, algorithm)
    if predicted is None:
        predicted = model.predict(m, graphs, algorithm, protocol, nbytes)
        predicted = None if math.isinf(predicted) else predicted
    plateau = model.ring_plateau_factor(m, graphs, algorithm, protocol, nbytes)
    lat_us = _latency_us(table, m, lambda t: model.latency(m, graphs, algorithm, protocol, table=t) * plateau)
    wire = table.wire_factor[protocol]
    if algorithm in ("nvls", "nvlstree"):
        P = m.ppn
        # every GPU link carries (P + 1)/P x S each way in NVLS (scatter + multimem store up,
        # multimem load-reduce + gather down); the emulation sends 2 (P - 1)/P x S each way
        wire = (P + 1) / (2 * (P - 1)) / nvls_efficiency(table, m) if P > 1 else 1.0
    plan = Plan(algorithm, protocol, channels, lat_us * 1e-6, wire, m, model_choice=model_choice,
                predicted_us=predicted, network=network_note(graph, m, graphs, algorithm))
    if algorithm in ("nvls", "nvlstree"):
        plan.fill = nvls_fill(nbytes, channels, m.ppn, m.nnodes, algorithm)
    elif algorithm == "ring" and (fill.with_plateau_factor
                                  or model.ring_plateau_factor(m, graphs, "ring", protocol, nbytes) == 1.0):
        plan.fill = ring_fill(nbytes, channels, m.nranks, protocol, steps=fill.steps(protocol))
    if algorithm == "ring":
        set_ring_orders(plan, m, graph)
    elif algorithm == "tree":
        plan.trees = [tree_links(m, c) for c in range(channels)]
        plan.vias = tree_vias(graph, m, plan.trees) if m.nnodes > 1 else None
    elif algorithm == "nvlstree":
        # channel c runs tree c % 2: the two trees' links, each shared by its channels
        trees = [nvlstree_links(m, t) for t in range(min(2, channels))]
        links = [trees[c % 2] for c in range(channels)]
        plan.trees = links if m.nnodes > 2 else None
        plan.vias = nvlstree_vias(graph, m, links)
    return plan


# -- allgather, reduce-scatter, broadcast, reduce ------------------------------------------------
def make_coll_plan(graph, gpus, profile, coll: str, algorithm: str, nbytes: int, protocol=None,
                   channels=None) -> Plan:
    """The :class:`Plan` of one ``coll`` of ``nbytes`` (NCCL's ``bytes``: allgather the output,
    reduce-scatter the input buffer); ``algorithm`` is ``ring``, ``nvls`` or ``auto``. Cached:
    every rank asks."""
    return cached_plan(graph, gpus, profile, (coll, algorithm, nbytes, protocol, channels),
                       lambda g: _build_coll_plan(g, gpus, profile, coll, algorithm, nbytes, protocol, channels))


def _pick_coll(m, coll: str, nbytes: int, algorithm: str, protocol, channels) -> tuple:
    """``(algorithm, protocol, channels, predicted us or None)`` of one ``coll``."""
    predicted = None
    if protocol is not None:
        check_protocol(protocol)
    if algorithm == "nvls":
        require_nvls(m, "nccl-ring")
        check_available(m, algorithm, coll)
        if m.nnodes > 1:
            raise UserInputError(
                f"nccl-nvls for {coll} runs inside one node (NCCL needs CollNet for multi-node NVLS); these "
                f"ranks span {m.nnodes} nodes: use nccl-ring")
        _nvls_simple_only(protocol)
    if algorithm == "auto" and m.nranks == 1:   # nothing to move: a copy, NCCL runs no algorithm
        algorithm = "ring"
    if algorithm == "auto":
        protos = (protocol,) if protocol is not None else TUNER_ORDER
        algorithm, protocol, nch, predicted = coll_model.coll_choose(m, coll, nbytes, protos=protos)
        if channels is None:
            channels = nch
    if protocol is None:
        protocol = coll_model.coll_choose(m, coll, nbytes, algos=(algorithm,))[1] if m.nranks > 1 else "simple"
    if protocol == "ll128" and not coll_model.coll_enabled(m, coll, algorithm, "ll128") and m.nranks > 1:
        raise _ll128_refused()
    return algorithm, protocol, channels, predicted


def _build_coll_plan(graph, gpus, profile, coll: str, algorithm: str, nbytes: int, protocol, channels) -> Plan:
    m = model.machine_of(graph, gpus)
    graphs = model.graphs_of(m)
    table = nccl_table(profile)
    m.tuner = tuner_of(table)
    algorithm, protocol, channels, predicted = _pick_coll(m, coll, nbytes, algorithm, protocol, channels)
    if channels is None:
        channels = model.channels_for(m, graphs, algorithm, protocol, nbytes) if algorithm in graphs else 1
    _check_channels(channels, algorithm)
    if predicted is None and m.nranks > 1:
        predicted = coll_model.coll_predict(m, graphs, coll, algorithm, protocol, nbytes)
        predicted = None if math.isinf(predicted) else predicted
    lat_us = _latency_us(table, m, lambda t: coll_model.coll_latency(m, coll, algorithm, protocol, table=t))
    wire = table.wire_factor[protocol]
    if algorithm == "nvls":
        # NVLS allgather: each GPU link carries its block once up and the P - 1 others down;
        # reduce-scatter: its P - 1 blocks up (the switch reads them) and its result down.
        # The emulation sends P - 1 blocks each way, so only the NVLS efficiency scales it.
        wire = 1.0 / nvls_efficiency(table, m)
    plan = Plan(algorithm, protocol, channels, lat_us * 1e-6, wire, m, predicted_us=predicted,
                network=network_note(graph, m, graphs, algorithm))
    if algorithm == "ring" and m.nranks > 1:
        set_ring_orders(plan, m, graph)
    return plan


def nccl_bytes(coll: str, x, nranks: int) -> int:
    """NCCL's ``bytes`` of a call whose per-rank input is ``x``."""
    return int(x.nbytes) * (nranks if coll == "allgather" else 1)


# -- a rank's plan, and the counts its body and message count share ------------------------------
def plan_for(comm, x, algorithm, protocol=None, channels=None) -> Plan:
    """The plan of this rank's allreduce of ``x`` (see :func:`make_plan`), made once per simulation."""
    nbytes = int(x.nbytes)
    return comm.memo(("nccl plan", comm.cid, "allreduce", algorithm, nbytes, protocol, channels),
                     lambda: make_plan(comm.graph, comm.gpus(), comm.profile, algorithm, nbytes, protocol, channels))


def plan_for_coll(comm, x, coll: str, algorithm: str, protocol=None, channels=None) -> Plan:
    """The plan of this rank's ``coll`` of ``x`` (see :func:`make_coll_plan`), made once per simulation."""
    n, opts = nccl_bytes(coll, x, comm.size), (protocol, channels)
    return comm.memo(("nccl plan", comm.cid, coll, algorithm, n, opts),
                     lambda: make_coll_plan(comm.graph, comm.gpus(), comm.profile, coll, algorithm, n, *opts))


def channel_count(plan: Plan, elements: int) -> int:
    """Channels that get data: no more than the elements of a rank's block."""
    return max(1, min(plan.channels, elements))


def ring_loops(nbytes: int, chunk: int) -> int:
    """Pipelined loops of a channel range of ``nbytes`` in chunks of ``chunk`` (1 to MAX_LOOPS)."""
    return max(1, min(MAX_LOOPS, math.ceil(nbytes / chunk)))


def nvlstree_pieces(nbytes: int, ppn: int) -> int:
    """NVLSTree on 2 nodes: pieces of the buffer, one NVLS chunk per GPU each (1 to NVLSTREE_PIECES)."""
    return max(1, min(NVLSTREE_PIECES, math.ceil(nbytes / (ppn * nvls_chunk_bytes(nnodes=2)))))


def wide_nvlstree_pieces(nbytes: int, channels: int, ppn: int, nnodes: int) -> int:
    """NVLSTree beyond 2 nodes: chunks per tree, NCCL's chunk count of one channel's block
    (``nbytes / (C x ppn)`` bytes), 1 to MAX_NVLSTREE_PIECES."""
    per_block = nbytes / (max(1, channels) * max(1, ppn))
    return max(1, min(MAX_NVLSTREE_PIECES, math.ceil(per_block / nvls_chunk_bytes(nnodes=nnodes))))



def tree_chunks(nbytes: int, protocol: str) -> int:
    """Chunks of a tree allreduce's channel range of ``nbytes`` (1 to MAX_TREE_CHUNKS)."""
    return max(1, min(MAX_TREE_CHUNKS, math.ceil(nbytes / tree_chunk_bytes(protocol))))


def chain_chunks(nbytes: int, protocol: str) -> int:
    """Chunks of a broadcast/reduce chain's channel range of ``nbytes``: one FIFO step of the
    protocol each (1 to MAX_CHAIN_CHUNKS)."""
    return max(1, min(MAX_CHAIN_CHUNKS, math.ceil(nbytes / tree_chunk_bytes(protocol))))
