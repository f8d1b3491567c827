"""NCCL's cost model ("tuner") for allreduce, and what NCCL sees of a machine.

The cost model is that of NCCL's ``src/graph/tuning.cc`` and ``enqueue.cc`` with NCCL 2.30.7's
constants; the channel counts and per-channel speeds come from its topology search
(:mod:`simcollective.nccl.search`). Units as NCCL's tuner uses them: latencies in
microseconds, bandwidths in GB/s (1e9 bytes/s), so ``bytes / (1000 * GB/s) = us``.

The model is used twice: by ``nccl`` to pick (algorithm, protocol, channels) per call as
NCCL does, and by the ``nccl-*`` algorithms for their default channel counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import UserInputError
from ..network.routing import nics_of
from . import nics
from .nodes import NVLINK_TYPES, nccl_nodes
from .protocols import ALGOS, TUNER_ORDER
from .search import GraphInfo, graphs_of
from .versions import (has_algorithm, latency_tables, ll_max_bw, nvls_rule, ring_inter_steps, ring_ll_factor,
                       tuner_arch)
from .transport import ALL_PROTOCOLS, advertised_latency, net_protocols, protocol_allowed

__all__ = [
    "PROTOCOLS", "ALGOS", "Machine", "GraphInfo", "machine_of", "graphs_of", "predict", "choose",
    "channels_for", "compute_capability", "ring_plateau_factor",
]

#: protocols in NCCL's order (index into the constant triples, tie-break order of :func:`choose`)
PROTOCOLS = TUNER_ORDER
#: algorithms in NCCL's tie-break order (CollNet and PAT do not apply: no CollNet plugin,
#: PAT is not an allreduce algorithm)

# -- NCCL 2.30.7 tuner constants -----------------------------------------------------------
#: baseLatencies (us), (LL, LL128, Simple)
BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0),
            "nvlstree": (0.0, 0.0, 0.0)}
#: hwLatencies (us per hop) by link class and algorithm, (LL, LL128, Simple)
HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
               "nvlstree": (0.0, 0.0, 25.0)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0.0, 0.0, 0.0),
            "nvlstree": (0.0, 0.0, 0.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
            "nvlstree": (0.0, 0.0, 20.9)},
}
#: llMaxBws (GB/s) per arch, (1 node, 2 nodes, >= 3 nodes); multi-node rows by CPU vendor
#: (Intel/other row 0 assumed: N2 39.0, N4 20.4)
LL_MAX_BW = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 39.0, 20.4), "hopper": (141.0, 39.0, 20.4),
             "blackwell": (282.0, 39.0, 20.4)}
PER_CH_RING_LL128 = {"volta": 20.0, "ampere": 20.0, "hopper": 36.7, "blackwell": 40.0}
PER_CH_TREE_LL128 = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                     "hopper": (36.7, 36.7, 29.0), "blackwell": (55.6, 31.67, 20.0)}
PER_CH_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
               "blackwell": (70.0, 42.8, 24.0)}
PER_CH_NVLSTREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0.0, 57.7, 45.5),
                   "blackwell": (0.0, 96.0, 80.0)}
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
#: treeCorrectionFactor[protocol][floor(log2(bytes / 64))]
TREE_CORRECTION = {
    "ll": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "ll128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}
#: getNetOverhead (us per ring step, multi-node, Intel x86); x3 for Simple
NET_OVERHEAD_US = 1.0

# -- what NCCL reads of the hardware ------------------------------------------------------------
#: usable NVLink rate per link (GB/s) by compute capability (topo.h *_NVLINK_BW) and the raw
#: per-direction rate of one link (V100/A100/H100 lane 25 GB/s, B200 50 GB/s)
NVLINK_BW = {70: (20.0, 25.0), 80: (20.0, 25.0), 90: (20.6, 25.0), 100: (40.1, 50.0)}
#: NCCL's PCIe rates: raw per-direction x16 (bytes/s) -> NCCL GB/s (Gen3 12, Gen4 24, Gen5 48)
PCIE_FRACTION = 0.75
#: GPU model (the graph's ``model`` attribute) -> compute capability x 10
COMPUTE_CAPABILITY = {"V100": 70, "A100": 80, "H100": 90, "H200": 90, "B200": 100, "GB200": 100, "B300": 100}
#: per-thread byte thresholds and threads per CTA used to reduce channels for small calls
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}
NTHREADS = {"ll": 512, "ll128": 640, "simple": 512}

_NET_TYPES = ("infiniband", "ethernet")


def compute_capability(model: str) -> int:
    try:
        return COMPUTE_CAPABILITY[model]
    except KeyError:
        raise UserInputError(
            f"GPU model {model!r} is not known to NCCL's model (known: {', '.join(COMPUTE_CAPABILITY)})") from None


def arch_of(cc: int) -> str:
    return "volta" if cc < 80 else "ampere" if cc < 90 else "hopper" if cc < 100 else "blackwell"


@dataclass
class Machine:
    """What NCCL sees of the ranks of one communicator on a hardware graph."""

    nranks: int
    nnodes: int
    ppn: int
    cc: int
    nodes: list                      # per node, the ranks on it in rank order
    gpus: list                       # graph GPU id per rank
    intra: str                       # "nvlink" or "pci"
    nvswitch: bool                   # the node's GPUs share an NVSwitch
    nvlink_total: float              # usable NVLink GB/s per GPU (NCCL's figure)
    direct: dict = field(default_factory=dict)  # (local a, local b) -> usable GB/s of direct NVLinks
    nic_bw: float = 0.0              # usable GB/s of one GPU's NIC path
    nics: int = 0                    # NICs per node
    net_latency_us: float = 0.0      # the network transport's advertised latency (graph.latencyInter)
    tuner: object = None             # the NCCL release's tuner (versions.NcclVersion); None: the newest
    net_protocols: tuple = ALL_PROTOCOLS  # the protocols the transport carries across nodes

    @property
    def arch(self) -> str:
        return arch_of(self.cc)

    @cached_property
    def node_of(self) -> list:
        """Per rank, the index of its node in ``nodes``."""
        return [i for _, i in sorted((r, i) for i, ranks in enumerate(self.nodes) for r in ranks)]

    @property
    def nvls(self) -> bool:
        """NVLink SHARP: Hopper or newer on an NVSwitch."""
        return self.nvswitch and self.cc >= 90 and self.intra == "nvlink"


def machine_of(graph, gpus) -> Machine:
    """The :class:`Machine` of ranks placed on ``gpus`` (graph GPU ids, rank order)."""
    gpus = list(gpus)
    nodes_attr = graph.nodes
    models = {nodes_attr[g].get("model", "GPU") for g in gpus}
    ccs = [compute_capability(m) for m in sorted(models)]
    cc = min(ccs)
    nodes = nccl_nodes(graph, gpus)
    ppn = len(nodes[0])
    per_link, raw_lane = NVLINK_BW[cc if cc in NVLINK_BW else min(NVLINK_BW, key=lambda k: abs(k - cc))]
    frac = per_link / raw_lane
    # NVLink figures of the first node's GPUs
    first = [gpus[r] for r in nodes[0]]
    local = {g: i for i, g in enumerate(first)}
    nvlink_total = 0.0
    direct: dict = {}
    nvswitch = False
    for g in first:
        tot = 0.0
        for _, v, d in graph.out_edges(g, data=True):
            lt = d.get("link_type")
            if lt in NVLINK_TYPES:
                bw = d["bandwidth"] / 1e9 * frac
                tot += bw
                if nodes_attr[v].get("kind") == "nvswitch":
                    nvswitch = True
                elif v in local:
                    direct[(local[g], local[v])] = bw
        nvlink_total = tot if nvlink_total == 0 else min(nvlink_total, tot)
    intra = "nvlink" if nvlink_total > 0 else "pci"
    if intra == "pci":
        nvlink_total = min(_pcie_bw(graph, g) for g in first) if first else 0.0
    nic_bw, nics = 0.0, 0
    if len(nodes) > 1:
        nic_bw, nics = _nic_figures(graph, first)
    net_lat = float(graph.graph.get("net_latency", 0.0)) * 1e6 if len(nodes) > 1 else 0.0
    return Machine(nranks=len(gpus), nnodes=len(nodes), ppn=ppn, cc=cc, nodes=nodes, gpus=gpus,
                   intra=intra, nvswitch=nvswitch, nvlink_total=nvlink_total, direct=direct,
                   nic_bw=nic_bw, nics=nics, net_latency_us=net_lat,
                   net_protocols=net_protocols(graph, len(nodes)))


def _nccl_pcie(raw: float) -> float:
    """NCCL's PCIe rate (GB/s) for a x16 link of ``raw`` bytes/s per direction: Gen3 12,
    Gen4 24, Gen5 48, Gen6 96 (topo.cc: width x speed / 80)."""
    for line, nccl_bw in ((120e9, 96.0), (60e9, 48.0), (30e9, 24.0), (15e9, 12.0)):
        if raw >= line:
            return nccl_bw
    return raw / 1e9 * PCIE_FRACTION


def _pcie_bw(graph, g) -> float:
    bws = [d["bandwidth"] for _, _, d in graph.out_edges(g, data=True) if d.get("link_type") == "pcie"]
    return _nccl_pcie(max(bws)) if bws else 12.0


def _nic_figures(graph, gpus) -> tuple:
    """(usable GB/s of the best GPU -> network path, rings the node's NICs carry).

    A GPU's NICs are the ones nearest it over PCIe (several on a GPU that drives several
    NICs, one that neighbours may share). NCCL's search runs one ring per NIC at the
    speed of the best path (:func:`.nics.inter_speed`), each ring taking that speed from
    every link it crosses: a GPU feeds at most as many rings as its own PCIe link carries
    (two 400 Gb/s NICs behind one PCIe Gen5 x16 link: one ring at 48 GB/s; two 200 Gb/s
    NICs: two at 24), and a NIC as many as it carries (one 400 Gb/s NIC shared by two
    GPUs: one ring). The rings are the smaller of the two sums (:func:`.nics.rings_fed`)."""
    per_gpu = [_nearest_nics(graph, g) for g in gpus]
    found = [p for p in per_gpu if p[0] is not None]
    if not found:
        return 0.0, 0
    best = max(p[0] for p in found)
    cc = min(compute_capability(graph.nodes[g].get("model", "GPU")) for g in gpus)
    speed = nics.inter_speed(cc, best)
    gpu_rings = sum(nics.rings_fed(own, speed, len(mine)) for _, own, mine in found)
    nic_bw = {v: bw for _, _, mine in found for v, bw in mine.items()}
    nic_rings = sum(nics.rings_fed(bw, speed) for bw in nic_bw.values())
    return best, min(gpu_rings, nic_rings)


def _nearest_nics(graph, g) -> tuple:
    """(best path GB/s or None, the GPU's own PCIe GB/s, {nearest NIC: its network GB/s}):
    breadth-first over PCIe from GPU ``g`` to the first NICs, those the GPU drives (all of
    them, or the ``devices_per_gpu`` its transport keeps: :func:`_driven`). A NIC's rate is
    its cables' line rate (``line_rate`` where the transport's goodput lowered their
    ``bandwidth``): NCCL reads the device's speed."""
    driven = _driven(graph, g)
    seen, frontier, paths, mine = {g}, [(g, float("inf"))], {}, {}
    own = _pcie_bw(graph, g)
    while frontier and not paths:
        nxt = []
        for u, bw in frontier:
            for _, v, d in graph.out_edges(u, data=True):
                if v in seen or d.get("link_type") not in ("pcie",):
                    continue
                seen.add(v)
                b = min(bw, _nccl_pcie(d["bandwidth"]))
                net = [dd.get("line_rate", dd["bandwidth"]) / 1e9 for _, _, dd in graph.out_edges(v, data=True)
                       if dd.get("link_type") in _NET_TYPES]
                if graph.nodes[v].get("kind") == "nic" or net:  # a NIC, or a port with network cables
                    if driven is None or v in driven:
                        mine[v] = max(net) if net else b
                        paths[v] = min(b, max(net)) if net else b
                else:
                    nxt.append((v, b))
        frontier = nxt
    return (max(paths.values()) if paths else None), own, mine


def _driven(graph, g) -> set | None:
    """The NICs GPU ``g`` drives when its transport keeps fewer than it is nearest to (graph
    ``devices_per_gpu``: its ``nics`` list, trimmed by :func:`topologies.transports.apply_transport`);
    None: every nearest NIC."""
    return set(nics_of(graph, g)) if "devices_per_gpu" in graph.graph else None


def _node_index(nnodes: int) -> int:
    return 0 if nnodes == 1 else 1 if nnodes == 2 else 2


def enabled(m: Machine, algo: str, proto: str) -> bool:
    """Whether NCCL would consider (algo, proto) for allreduce on ``m``."""
    if not has_algorithm(m, algo):
        return False
    if algo in ("nvls", "nvlstree"):
        if proto != "simple" or not m.nvls:
            return False
        if algo == "nvls" and m.nnodes > 1:   # multi-node NVLS needs CollNet
            return False
        if algo == "nvlstree" and m.nnodes == 1:
            return False
    if proto == "ll128" and (m.intra != "nvlink" or m.cc < 70):
        return False
    return m.nranks > 1 and protocol_allowed(m, proto)


def bandwidth(m: Machine, graphs: dict, algo: str, proto: str) -> float:
    """NCCL's algorithm bandwidth BW (GB/s) for allreduce; 0 = disabled."""
    if not enabled(m, algo, proto) or algo not in graphs:
        return 0.0
    g = graphs[algo]
    n, nn = m.nranks, m.nnodes
    ni = _node_index(nn)
    arch = tuner_arch(m)    # the tables' row: Hopper's for Blackwell before NCCL 2.27
    nsteps = 2 * (n - 1)
    bw = g.bw_intra if nn <= 2 else g.bw_inter
    nch = g.nchannels
    ratio = 0.5 if algo == "tree" else n / nsteps
    old_nvls = nvls_rule(m, algo, g.bw_intra, g.bw_inter) if algo in ("nvls", "nvlstree") else None
    if old_nvls is not None:     # a release before nvlsEfficiency (2.28)
        bw, ratio = old_nvls
    elif algo in ("nvls", "nvlstree"):
        inter = g.bw_inter * (2 if algo == "nvlstree" and nn <= 2 else 1)
        # (nCh - 1) / nCh with nCh the NVLS graph's channels (one per head)
        intra = g.bw_intra * NVLS_EFFICIENCY[arch] * (nch - 1) / nch * 2
        bw = min(intra, inter, PER_CH_NVLSTREE[arch][ni] if algo == "nvlstree" else float("inf"))
    bus = nch * bw
    ll_max = ll_max_bw(m, LL_MAX_BW[arch][ni])
    if algo == "ring" and proto == "ll":
        bus = min(ll_max, ring_ll_factor(m, True) * bus)
    elif algo == "ring" and proto == "ll128":
        bus = min(0.92 * bus, nch * PER_CH_RING_LL128[arch])
    elif algo == "tree":
        bus = min(0.92 * bus, nch * PER_CH_TREE[arch][ni])
        if proto == "ll":
            bus = min(bus / 3.8, ll_max)
        elif proto == "ll128":
            bus = min(bus * (7 / 9 if nn == 1 else 120 / 128), nch * PER_CH_TREE_LL128[arch][ni])
    return bus * ratio


def latency(m: Machine, graphs: dict, algo: str, proto: str, table: dict | None = None) -> float:
    """NCCL's latency L (us) for allreduce. ``table`` may replace the constants:
    ``{"base": BASE_LAT-like, "hop": HW_LAT-like}`` (the ``nccl`` profile's figures)."""
    base_t, hop_t = latency_tables(m, table)
    base_t, hop_t = base_t or BASE_LAT, hop_t or HW_LAT
    p = PROTOCOLS.index(proto)
    n, nn, ppn = m.nranks, m.nnodes, m.ppn
    L = base_t[algo][p]
    intra_lat = hop_t["nvlink" if m.intra == "nvlink" else "pci"][algo][p]
    inter_lat = hop_t["net"]["tree" if ppn == 1 else algo][p]
    inter_lat += advertised_latency(m, proto)
    if algo == "ring":
        nsteps = 2 * (n - 1)
        n_inter = ring_inter_steps(m)     # 2 (nNodes - 1); 2 nNodes under NCCL 2.18
        if nn > 1:
            intra_lat = max(intra_lat, NET_OVERHEAD_US * (3 if proto == "simple" else 1))
        L += (nsteps - n_inter) * intra_lat + n_inter * inter_lat
    elif algo == "tree":
        L += 2 * ((ppn - 1) * intra_lat + int(math.log2(nn)) * inter_lat)
    elif algo == "nvls":
        L = intra_lat + (inter_lat if nn > 1 else 0.0)
    elif algo == "nvlstree":
        L += intra_lat + 2 * int(math.log2(nn)) * inter_lat
    return L


def predict(m: Machine, graphs: dict, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's predicted time (us) of one allreduce of ``nbytes`` (ncclTopoGetAlgoTime), inf
    when disabled."""
    bw = bandwidth(m, graphs, algo, proto)
    if bw <= 0:
        return float("inf")
    lat = latency(m, graphs, algo, proto)
    log_size = int(math.floor(math.log2(nbytes / 64))) if nbytes >= 64 else -1
    if algo == "tree" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[proto][log_size]
    lat *= ring_plateau_factor(m, graphs, algo, proto, nbytes)
    return lat + nbytes / (1000.0 * bw)


def ring_plateau_factor(m: Machine, graphs: dict, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's "plateau effect of ring" (tuning.cc ncclTopoGetAlgoTime): the latency
    of a multi-node ring allreduce with the Simple protocol counts 1.4 times (1.9 before SM80)
    once every rank of every channel has at least 64 bytes; 1 otherwise. The simulated ring
    spends the same factor on its latency (each Simple step also flushes its network receive)."""
    nch = graphs[algo].comm_channels if algo in graphs else 1
    if algo == "ring" and proto == "simple" and m.nnodes > 1 and nbytes / (nch * m.nranks) >= 64:
        return 1.9 if m.cc < 80 else 1.4
    return 1.0


def channels_for(m: Machine, graphs: dict, algo: str, proto: str, nbytes: int) -> int:
    """Channels NCCL runs for one call: the communicator's, reduced for small messages while
    ``nbytes < nc * nthreads * threshold`` (enqueue.cc topoGetAlgoInfo)."""
    nc = graphs[algo].comm_channels
    nt = 640 if algo == "tree" else NTHREADS[proto]
    thr = THREAD_THRESHOLD[proto] * (m.nranks if (algo == "ring" and proto == "ll") else 1)
    while nc > 1 and nbytes < nc * nt * thr:
        nc -= 1
    return nc


def choose(m: Machine, nbytes: int, algos=ALGOS, protos=PROTOCOLS) -> tuple:
    """NCCL's pick for one allreduce of ``nbytes``: ``(algorithm, protocol, channels, time_us)``
    with the minimum predicted time (ties: NCCL's order)."""
    graphs = graphs_of(m)
    best = None
    for algo in (a for a in ALGOS if a in algos):
        for proto in (p for p in PROTOCOLS if p in protos):
            t = predict(m, graphs, algo, proto, nbytes)
            if best is None or t < best[3]:
                best = (algo, proto, 0, t)
    if best is None or math.isinf(best[3]):
        raise UserInputError("NCCL's model has no algorithm/protocol available on this machine")
    algo, proto, _, t = best
    return algo, proto, channels_for(m, graphs, algo, proto, nbytes), t
