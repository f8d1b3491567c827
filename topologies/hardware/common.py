"""What every hardware preset shares: option checks, the PCIe tree, the rail fabric.

A preset (:mod:`topologies.hardware.v100`, :mod:`~topologies.hardware.hgx`,
:mod:`~topologies.hardware.nvl72`) builds a graph in five steps: check its
options (:func:`common_checks`), start the graph (:func:`hardware_graph`), add
one server at a time (each ends in :func:`pcie_tree`), plug the servers'
NICs into the rail fabric (:func:`rails`) and validate.

Options of every hardware preset
--------------------------------
Each preset documents its machine's figures; these options mean the same on
all of them (the defaults that differ per machine are in its docstring):

oversubscription : float
    Rail leaf down : up bandwidth, 1 to 64 (1 = full bisection).
spines : int
    0 = as many spines as uplinks of a full leaf.
nvlink_latency, nvswitch_latency : float
    0.6e-6 per direct GPU - GPU NVLink cable (DGX-1), 0.3e-6 per GPU - NVSwitch
    cable and per DGX-2 board - board cable (GPU -> switch -> GPU = 0.6 us):
    NCCL's NVLink LL hop [NCCL ``tuning.cc``].
pcie_latency : float
    0.5e-6 per PCIe cable: NCCL's PCI LL hop (1.0 us, GPU -> switch -> GPU)
    split over two cables [NCCL ``tuning.cc``].
nic_latency, switch_latency : float
    NIC - leaf cable (adapter included) 0.3e-6 and switch crossing 0.1e-6:
    with the PCIe cables a cross-node hop is 2.7 us, NCCL's NET ring LL hop
    [NCCL ``tuning.cc``].
uplink_latency : float
    Leaf - spine cable, 5e-8 (about 10 m of fibre) [recalled].
net_latency : float
    The latency the network transport advertises to NCCL (its plugin's
    ``ncclNetProperties.latency``, NCCL's ``graph.latencyInter``), seconds per
    network hop; NCCL adds it to every network hop of its latency model, twice
    for Simple (the receive's GPUDirect flush) [NCCL ``tuning.cc``]. 0
    (default): NCCL's own IB/RoCE transport advertises none. The ``nccl-*``
    algorithms and ``nccl`` spend it as NCCL's model does. AWS EFA through
    aws-ofi-nccl: 150 us on p3dn, 75 us on p4d, p4de and p5, 35 us on p5en and
    later, as the plugin advertises them (aws/aws-ofi-nccl
    ``src/platform-aws.cpp``); the cloud presets set them from their transport
    (``topologies/transports.toml``). 0 to 1e-3.
net_conn_bandwidth : float
    The most one stream of an NCCL network connection carries, bytes/s: one
    IB queue pair, socket or plugin stream (default ``inf``: no limit, the NIC
    alone bounds the flows). NCCL opens one connection per channel and peer
    over one NIC (a ring channel: one send and one receive per node;
    NVLSTree: one per channel and head, so 16-24 per NIC), and a
    connection's goodput can be below the NIC's. Every flow crossing a NIC
    cable is capped at ``net_conn_bandwidth x net_connections`` (edge
    attribute ``flow_bandwidth``, graph attribute ``net_conn_bandwidth``), so
    16 ring channels (2 per NIC) leave the NIC partly idle where 24 (3 per
    NIC, ``NCCL_MIN_CTAS=24``) fill it. On ``dgx_h100``,
    ``net_conn_bandwidth=20.44e9`` is FITTED to the plateau of one cluster's
    log (section E of
    ``experiments/nccl-tests/h100x8-2to8node-ib400_allreduce_ncclt309.txt``,
    4 x 8 H100, 8 GiB ring busbw 324.5 GB/s = 16 x 20.28, NCCL's default of
    one QP per connection) and validated on that cluster's other runs (C, D,
    F, G); not a published figure, and not the same on every cluster
    (section B's VMs reach 366 GB/s with 16 channels). 1e8 to 1e12, or inf.
net_connections : int
    The streams one NCCL network connection spreads its data over: NCCL's IB
    transport opens ``NCCL_IB_QPS_PER_CONNECTION`` queue pairs per
    connection (default 1, NVIDIA/nccl ``src/transport/net_ib/connect.cc``),
    a socket transport several sockets; each carries at most
    ``net_conn_bandwidth``. ``simcollective compare`` sets it from a log's
    ``NCCL_IB_QPS_PER_CONNECTION`` on NCCL's IB transport. 1 to 128.
net_goodput : float
    The payload share of the network cables' rate: every scale-out cable
    carries ``goodput`` x its rate in the simulation and keeps the rate as
    ``line_rate``, which NCCL's model reads (NCCL sees the device's speed).
    1 (default); 0.01 to 1.
net_devices_per_gpu : int
    The most NICs one GPU spreads its NCCL channels over, its nearest ones
    (its ``nics`` list trimmed; NCCL's model counts their rings); 0
    (default): all the NICs nearest it.
duplex : {"full", "shared"}
    ``"full"`` as built (every figure per direction); ``"shared"`` applies the
    study's convention (one capacity for both directions) to every cable, for
    comparisons only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import networkx as nx

from .. import fabrics
from ..fabrics import check_count
from ..nodes import add_cable
from ..schema import DUPLEX, TopologyError
from ..transports import apply_figures

__all__ = [
    "FULL",
    "OPTION_RANGES",
    "FABRIC_OPTIONS",
    "fabric_options",
    "check_range",
    "common_checks",
    "MAX_NICS_PER_GPU",
    "nearest_nic",
    "gpu_nics",
    "pcie_tree",
    "switch_node",
    "hardware_graph",
    "fabric_text",
    "rails",
]

FULL = "full"

#: The range-checked real options of every hardware preset: key -> (low, high as written,
#: what the value is, whether ``inf`` is also allowed). One table serves the presets' checks
#: and ``simcollective compare --fit`` (its default search range).
OPTION_RANGES = {
    "nic_bandwidth": ("1e8", "1e12", "bytes/s per direction (400 Gb/s = 5e10)", False),
    "net_latency": ("0", "1e-3", "seconds (the network transport's advertised latency per network hop, "
                    "0 = none)", False),
    "net_conn_bandwidth": ("1e8", "1e12", "bytes/s (the most one stream of an NCCL network connection carries)", True),
    "net_goodput": ("0.01", "1", "(the payload share of the network cables' rate, 1 = all of it)", False),
    "oversubscription": ("1", "64", "(leaf down:up bandwidth, 1 = full bisection)", False),
}

#: The options of the NICs, the rail fabric and the network transport that every preset has.
FABRIC_OPTIONS = ("nics_per_node", "nic_bandwidth", "oversubscription", "nodes_per_su", "spines",
                  "nic_latency", "uplink_latency", "switch_bandwidth", "switch_latency", "duplex",
                  "net_latency", "net_conn_bandwidth", "net_connections", "net_goodput",
                  "net_devices_per_gpu")


def fabric_options(options) -> dict:
    """The :data:`FABRIC_OPTIONS` of a preset's `options` (its ``locals()`` on entry), the
    keywords of :func:`common_checks`, :func:`fabric_text` and :func:`rails`.

    Examples
    --------
    >>> import inspect
    >>> from topologies.hardware import dgx_h100
    >>> params = inspect.signature(dgx_h100).parameters
    >>> sorted(fabric_options({k: p.default for k, p in params.items()})) == sorted(FABRIC_OPTIONS)
    True
    """
    return {key: options[key] for key in FABRIC_OPTIONS}


# --------------------------------------------------------------- validation


def check_range(key: str, value: object) -> float:
    """``value`` as a float if it is a number within ``OPTION_RANGES[key]``, else a one-line
    TopologyError naming it and the range.

    Examples
    --------
    >>> check_range("oversubscription", 2)
    2.0
    >>> check_range("net_latency", -1)
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: net_latency must be a number from 0 to 1e-3 seconds (the network transport's advertised latency per network hop, 0 = none), got -1
    """
    lo, hi, what, inf_ok = OPTION_RANGES[key]
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isnan(value)
          and ((inf_ok and value == math.inf) or (math.isfinite(value) and float(lo) <= value <= float(hi))))
    if not ok:
        raise TopologyError(f"{key} must be a number from {lo} to {hi} {what}"
                            + (", or inf for no limit (the default)" if inf_ok else "") + f", got {value!r}")
    return float(value)


#: The most streams (QPs, sockets) per NCCL network connection the presets take: NCCL caps
#: NCCL_IB_QPS_PER_CONNECTION at 128 (NCCL_IB_MAX_QPS, NVIDIA/nccl src/transport/net_ib) [recalled].
MAX_CONNECTIONS = 128


#: The most NICs one GPU drives: AWS p5.48xlarge has 32 EFA devices for 8 H100 ("up to 32
#: network cards", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html).
MAX_NICS_PER_GPU = 4


def _check_nics(nics: object, gpus: int) -> int:
    top = MAX_NICS_PER_GPU * gpus
    if isinstance(nics, bool) or not isinstance(nics, int) or not 1 <= nics <= top:
        raise TopologyError(
            f"nics_per_node must be an int from 1 to {top} (NICs per node, at most "
            f"{MAX_NICS_PER_GPU} per GPU), got {nics!r}"
        )
    return nics


def common_checks(nodes, gpus, *, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su,
                  spines, duplex, net_latency, net_conn_bandwidth, net_connections, net_goodput,
                  net_devices_per_gpu, **_fabric) -> None:
    """Check the options every preset has, in a fixed order (the first bad one is reported);
    `gpus` per node bounds ``nics_per_node``. Other keywords (the rest of the fabric's
    figures, checked by :func:`topologies.schema.validate`) are ignored."""
    if duplex not in DUPLEX:
        raise TopologyError(f"duplex must be one of {', '.join(DUPLEX)}, got {duplex!r}")
    check_count("nodes", nodes)
    _check_nics(nics_per_node, gpus)
    check_range("nic_bandwidth", nic_bandwidth)
    check_range("oversubscription", oversubscription)
    check_count("nodes_per_su", nodes_per_su)
    check_count("spines", spines, 0)
    check_range("net_latency", net_latency)
    check_range("net_conn_bandwidth", net_conn_bandwidth)
    if check_count("net_connections", net_connections) > MAX_CONNECTIONS:
        raise TopologyError(f"net_connections must be an int from 1 to {MAX_CONNECTIONS} (streams per "
                            f"NCCL network connection), got {net_connections!r}")
    check_range("net_goodput", net_goodput)
    check_count("net_devices_per_gpu", net_devices_per_gpu, 0)


# -------------------------------------------------------------- node parts


def nearest_nic(local: int, gpus: int, nics: int) -> int:
    """Index of the NIC nearest to GPU `local` of a node with `gpus` GPUs and `nics` NICs.

    NIC ``floor(local * nics / gpus)``: with as many NICs as GPUs, GPU i uses
    NIC i (rail i); with half as many, GPUs 2k and 2k+1 share NIC k; with
    twice as many, GPU i uses NIC 2i.

    Examples
    --------
    >>> [nearest_nic(i, 8, 4) for i in range(8)]
    [0, 0, 1, 1, 2, 2, 3, 3]
    >>> nearest_nic(3, 8, 16), nearest_nic(7, 8, 8)
    (6, 7)
    """
    return local * nics // gpus


def gpu_nics(local: int, gpus: int, nics: int) -> list[int]:
    """Indices of the NICs GPU `local` drives, nearest first (its :func:`nearest_nic` first).

    With more NICs than GPUs, GPU i drives NICs ``floor(i * nics / gpus)`` up to
    ``floor((i + 1) * nics / gpus)`` (excluded): 2 per GPU with 16 NICs on 8 GPUs
    (OCI BM.GPU.H100.8), 4 with 32 (AWS p5.48xlarge); otherwise the one NIC it
    may share with its neighbours.

    Examples
    --------
    >>> gpu_nics(3, 8, 16), gpu_nics(1, 8, 32), gpu_nics(5, 8, 4), gpu_nics(1, 8, 12)
    ([6, 7], [4, 5, 6, 7], [2], [1, 2])
    """
    first = nearest_nic(local, gpus, nics)
    return list(range(first, max(first + 1, nearest_nic(local + 1, gpus, nics))))


def _driver(j: int, g: int, nics: int) -> int:
    """The first of the `g` GPUs that drives NIC `j` (:func:`gpu_nics`)."""
    return min(i for i in range(g) if j in gpu_nics(i, g, nics))


@lru_cache(maxsize=64)   # the same for every server of a machine
def _complexes(g: int, nics: int, switches: int) -> tuple:
    """Per PCIe switch complex, ``(GPU indices, NIC indices, one switch per GPU)``.

    GPU ``i`` sits in complex ``floor(i * P / g)`` with ``P`` the switches, or the
    NICs when there are fewer NICs than switches (so that every complex has a NIC:
    2 GPUs + 1 NIC per switch with 4 NICs on 8 GPUs, as the p4d.24xlarge of
    aws-ofi-nccl's ``topology/p4d-24xl-topo.xml``). A NIC sits with the first GPU
    that drives it (:func:`gpu_nics`). A complex of several GPUs that each drive
    their own NICs (DGX A100: 2 GPUs + 2 NICs) gets one switch per GPU."""
    P = min(switches, nics)
    out = []
    for k in range(P):
        members = tuple(i for i in range(g) if i * P // g == k)
        their = tuple(sorted({j for i in members for j in gpu_nics(i, g, nics) if _driver(j, g, nics) in members}))
        out.append((members, their, len(members) > 1 and nics >= g))
    return tuple(out)


def pcie_tree(G, server, gpu_ids, *, switches, nics, pcie_bandwidth, pcie_latency, nic_model,
              direct=False, duplex=FULL) -> list[str]:
    """PCIe switches with their GPUs and NICs; return the NIC ids (NIC j is rail j).

    GPUs and NICs are grouped in PCIe switch complexes (:func:`_complexes`: each
    NIC with the GPU that drives it), one switch ``plx{k}`` each, or one switch per
    GPU with its NICs, cabled to the complex's first switch, when its GPUs drive
    NICs of their own (DGX A100: 2 GPUs + 2 NICs): a GPU's NICs are its unique
    shortest routes out (rail alignment, as NCCL's NIC selection). Every GPU records ``nics``, the ids of the NICs it
    drives, comma-separated (:func:`gpu_nics`, nearest first; a string, so that
    the graph saves as GraphML; the ``nccl-*`` algorithms spread their channels
    over them), and ``nic``, the first (the route of every other algorithm). With `direct` each GPU is cabled to its NICs without a switch.

    Examples
    --------
    >>> G = nx.DiGraph()
    >>> ids = [G.add_node(f"n0/gpu{i}", kind="gpu") or f"n0/gpu{i}" for i in range(4)]
    >>> pcie_tree(G, 0, ids, switches=2, nics=2, pcie_bandwidth=1e9, pcie_latency=1e-6,
    ...           nic_model="")
    ['n0/nic0', 'n0/nic1']
    >>> sorted(G.successors("n0/plx1")), G.nodes["n0/gpu3"]["nic"], G.nodes["n0/gpu3"]["nics"]
    (['n0/gpu2', 'n0/gpu3', 'n0/nic1'], 'n0/nic1', 'n0/nic1')
    """
    g = len(gpu_ids)
    nic_ids = [f"n{server}/nic{j}" for j in range(nics)]

    def add_nic(j, where):
        G.add_node(nic_ids[j], kind="nic", model=nic_model)
        add_cable(G, where, nic_ids[j], pcie_bandwidth, pcie_latency, "pcie", duplex)

    def add_pcie(u, v):
        add_cable(G, u, v, pcie_bandwidth, pcie_latency, "pcie", duplex)

    if direct:
        for j in range(nics):
            add_nic(j, gpu_ids[_driver(j, g, nics)])
    else:
        count = 0
        for members, their_nics, per_gpu in _complexes(g, nics, switches):
            groups = [([i], [j for j in their_nics if j in gpu_nics(i, g, nics)]) for i in members] \
                if per_gpu else [(members, their_nics)]
            first = None
            for group, group_nics in groups:
                pid = f"n{server}/plx{count}"
                count += 1
                G.add_node(pid, kind="pcie_switch")
                if first is None:
                    first = pid
                else:
                    add_pcie(first, pid)
                for i in group:
                    add_pcie(gpu_ids[i], pid)
                for j in group_nics:
                    add_nic(j, pid)
    for i, gid in enumerate(gpu_ids):
        mine = [nic_ids[j] for j in gpu_nics(i, g, nics)]
        G.nodes[gid]["nics"] = ",".join(mine)
        G.nodes[gid]["nic"] = mine[0]
    return nic_ids


def switch_node(G, sid, *, chips, links_per_gpu, nvls) -> str:
    """Add the folded NVSwitch `sid` (``chips`` physical chips, NVLS when `nvls`); return it."""
    G.add_node(sid, kind="nvswitch", chips=int(chips), links_per_gpu=int(links_per_gpu),
               nvls=bool(nvls))
    return sid


# -------------------------------------------------------------- the fabric


def hardware_graph(name, description, gpus_per_node, *, nvls, rank_order=None) -> nx.DiGraph:
    """An empty graph with the graph attributes of a hardware preset."""
    G = nx.DiGraph(name=name, description=description, gpus_per_node=gpus_per_node,
                   default_group_size=gpus_per_node, platform="hardware", nvls=bool(nvls))
    if rank_order:
        G.graph["rank_order"] = rank_order
    return G


def fabric_text(*, nics_per_node, nic_bandwidth, oversubscription, **_fabric) -> str:
    """The fabric's part of a preset's description."""
    return (f"{nics_per_node} x {nic_bandwidth * 8 / 1e9:g} Gb/s NICs per node on rails, "
            f"oversubscription {oversubscription:g}")


def rails(G, ports, *, nodes_per_su, spines, oversubscription, nic_bandwidth, nic_latency,
          uplink_latency, switch_bandwidth, switch_latency, duplex, net_latency,
          net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, **_fabric) -> None:
    """The rail-optimized fabric over the servers' NIC lists `ports`, and the network
    transport's figures on it (``net_latency`` as a graph attribute when not 0, the others by
    :func:`topologies.transports.apply_figures`); all checked by :func:`common_checks`.

    The graph's ``routing`` (what ``--routing auto`` takes): ``dest`` when the servers span
    more than one scalable unit, where InfiniBand's fat-tree routing gives each destination
    its own spine (D-mod-k, :mod:`simcollective.network.dmodk`) and a static first choice
    would send every flow between the units through spine 0 (an Ethernet transport makes it
    ``hash``, ECMP: :func:`topologies.transports.apply_transport`); ``first`` on one unit, where
    every validated comparison was made with it (a rail's flows have one shortest path there;
    cross-rail and GPU-forwarded flows have several, which ``dest`` would spread)."""
    G.graph["routing"] = "dest" if len(ports) > nodes_per_su else "first"
    fabrics.rail_optimized(
        G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
        link_bandwidth=nic_bandwidth, link_latency=nic_latency, uplink_latency=uplink_latency,
        leaf_bandwidth=switch_bandwidth, leaf_latency=switch_latency,
        spine_bandwidth=switch_bandwidth, spine_latency=switch_latency, duplex=duplex,
    )
    if net_latency:
        G.graph["net_latency"] = float(net_latency)
    apply_figures(G, conn_bandwidth=float(net_conn_bandwidth), connections=int(net_connections),
                  goodput=float(net_goodput), devices_per_gpu=int(net_devices_per_gpu))
