"""Hardware presets as built: DGX-1, DGX-2, DGX A100, DGX H100, DGX B200, GB200 NVL72.

These presets describe real machines from their datasheets, beside the study's
platform models of :mod:`topologies.builders` (which stay unchanged). Every
hardware figure is a keyword parameter whose docstring names its source:

* **[nccl.md s5]** the hardware table of ``../shared/reference/nccl.md``
  section 5 (datasheets, MLPerf system descriptions, NCCL issue threads);
* **[nccl.md s2.8/s4.1]** NCCL's topology constants and per-hop latencies;
* **[recalled]** a vendor figure that nccl.md marks as not re-read.

Conventions shared by all hardware presets
------------------------------------------
* **Full duplex** everywhere (NVLink, PCIe, InfiniBand/RoCE are full duplex):
  every bandwidth is per direction.
* **Raw line rates**, not NCCL's usable-rate constants: NVLink 2/3/4 carry
  25 GB/s per link and direction, NVLink 5 50 GB/s; NICs their signalling
  rate (400 Gb/s = 50e9 bytes/s). Protocol efficiency is the job of a
  profile (the ``nccl`` profile), not of the graph.
* **NVSwitch chips of one NVLink domain are folded into one node**
  (``n{s}/nvswitch``, or ``nvl{d}/nvswitch`` for a multi-host NVLink domain)
  whose GPU cables carry all of a GPU's links (e.g. 18 x 25 GB/s = 450e9 on
  H100). NVLink hardware stripes every transfer across all links, so one
  folded cable is what a flow sees; separate chips with shortest-path routing
  would put each GPU pair on one chip. The node records ``chips`` (physical
  NVSwitch chips) and ``links_per_gpu``. NCCL also folds them (one NVS node).
* **Latencies as measured**: route latencies equal NCCL's per-hop latencies
  of its LL protocol (nccl.md s4.1: NVLink 0.6 us, PCI 1.0 us, NET 2.7 us),
  the closest of NCCL's figures to the hardware's own (a single store and a
  flag poll per hop; LL128 and Simple add protocol overhead, which belongs
  to the ``nccl`` profile). They are split over the cables of a route:

  - direct NVLink cable GPU - GPU: ``nvlink_latency = 0.6e-6``;
  - GPU - NVSwitch cable: ``nvswitch_latency = 0.3e-6`` (GPU -> switch ->
    GPU = 0.6 us);
  - PCIe cable: ``pcie_latency = 0.5e-6`` (GPU -> PCIe switch -> GPU = 1.0 us);
  - NIC - leaf cable, including the adapter: ``nic_latency = 0.3e-6`` and a
    switch crossing ``switch_latency = 0.1e-6``, so GPU -> PCIe -> NIC ->
    rail leaf -> NIC -> PCIe -> GPU = 4 x 0.5 + 2 x 0.3 + 0.1 = 2.7 us.

* **Rail-optimized fabric** (``--nodes N``): NIC ``i`` of every node of a
  scalable unit (``nodes_per_su`` nodes) plugs into rail leaf
  ``su{u}/leaf{i}``; leaves reach spines ``spine{j}`` with
  ``round(down / oversubscription)`` uplinks each. Options for every
  hardware preset: ``nics_per_node``, ``nic_bandwidth``,
  ``oversubscription``, ``nodes_per_su``, ``spines`` (validated, with the
  allowed range in the error message).
* **Attributes NCCL-style algorithms read**: every GPU node has ``nic`` (the
  id of its nearest NIC: the one on its own PCIe switch, NIC
  ``floor(local * nics / gpus)``); NVSwitch nodes have ``nvls`` (True when
  the switch can reduce: NVLink SHARP on H100, B200, GB200) and the graph
  has ``nvls`` too; ``rank_order`` is a ring over the fastest links when the
  intra-node NVLink graph is not uniform (DGX-1: the double-link cycle);
  ``platform = "hardware"`` tells these presets from the study's models.

CPU sockets and host-memory paths are not modelled: NCCL never moves GPU
data through them on these machines (GPUDirect P2P and RDMA).
"""

from __future__ import annotations

import math

import networkx as nx

from . import fabrics
from .fabrics import add_switch, check_count
from .nodes import DGX1_NVLINK, add_cable, add_gpu
from .schema import DUPLEX, TopologyError, validate

__all__ = [
    "dgx1_v100",
    "dgx2_v100",
    "dgx_a100",
    "dgx_h100",
    "dgx_b200",
    "gb200_nvl72",
    "hgx_node",
    "dgx1_v100_node",
    "dgx2_v100_node",
    "nearest_nic",
    "OPTION_RANGES",
]

#: Ring over the 8 double NVLinks of a DGX-1 (0-3-2-1-5-6-7-4-0), the order
#: NCCL's ring search finds first (nccl.md s2.8) and the study's placement.
DGX1_RING = "0,3,2,1,5,6,7,4"

FULL = "full"

# --------------------------------------------------------------- validation


def _check_nics(nics: object, gpus: int) -> int:
    top = 2 * gpus
    if isinstance(nics, bool) or not isinstance(nics, int) or not 1 <= nics <= top:
        raise TopologyError(
            f"nics_per_node must be an int from 1 to {top} (NICs per node), got {nics!r}"
        )
    return nics


#: The range-checked real options of every hardware preset: key -> (low, high as written,
#: what the value is, whether ``inf`` is also allowed). One table serves the presets' checks
#: and ``simcollective compare --fit`` (its default search range).
OPTION_RANGES = {
    "nic_bandwidth": ("1e8", "1e12", "bytes/s per direction (400 Gb/s = 5e10)", False),
    "net_latency": ("0", "1e-3", "seconds (the network transport's advertised latency per network hop, "
                    "0 = none)", False),
    "net_conn_bandwidth": ("1e8", "1e12", "bytes/s (the most one NCCL network connection carries)", True),
    "oversubscription": ("1", "64", "(leaf down:up bandwidth, 1 = full bisection)", False),
}


def _check_range(key: str, value: object) -> float:
    """``value`` as a float if it is a number within ``OPTION_RANGES[key]``, else a one-line
    TopologyError naming it and the range."""
    lo, hi, what, inf_ok = OPTION_RANGES[key]
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isnan(value)
          and ((inf_ok and value == math.inf) or (math.isfinite(value) and float(lo) <= value <= float(hi))))
    if not ok:
        raise TopologyError(f"{key} must be a number from {lo} to {hi} {what}"
                            + (", or inf for no limit (the default)" if inf_ok else "") + f", got {value!r}")
    return float(value)


def _cap_connections(G, net_conn_bandwidth: float) -> None:
    """Give every NIC - fabric cable a per-flow cap (edge attribute ``flow_bandwidth``: the
    most one flow crossing it may carry, see :class:`simcollective.network.routing.Router`);
    nothing when unlimited."""
    if net_conn_bandwidth == math.inf:
        return
    G.graph["net_conn_bandwidth"] = float(net_conn_bandwidth)
    for u, v, d in G.edges(data=True):
        if d.get("link_type") in ("infiniband", "ethernet") and "nic" in (
                G.nodes[u].get("kind"), G.nodes[v].get("kind")):
            d["flow_bandwidth"] = float(net_conn_bandwidth)


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


# -------------------------------------------------------------- node parts


def _pcie(G, server, gpu_ids, *, switches, nics, pcie_bandwidth, pcie_latency, nic_model,
          direct=False, duplex=FULL) -> list[str]:
    """PCIe switches with their GPUs and NICs; return the NIC ids (NIC j is rail j).

    The server has `switches` PCIe switch complexes: GPU ``i`` sits in complex
    ``floor(i * P / G)`` and NIC ``j`` in complex ``floor(j * P / n)``. A
    complex is one switch ``plx{k}``, except when it holds several GPUs and
    at least as many NICs (DGX A100: 2 GPUs + 2 NICs): then each GPU gets
    its own switch with its share of the NICs, and the switches of the
    complex are cabled to its first one, so that a GPU's nearest NIC is its
    unique shortest route (rail alignment, as NCCL's NIC selection). Every
    GPU records its nearest NIC (:func:`nearest_nic`). With `direct` each
    GPU is cabled to its NICs without a switch.
    """
    g = len(gpu_ids)
    nic_ids = [f"n{server}/nic{j}" for j in range(nics)]

    def add_nic(nid, where):
        G.add_node(nid, kind="nic", model=nic_model)
        add_cable(G, where, nid, pcie_bandwidth, pcie_latency, "pcie", duplex)

    if direct:
        for j, nid in enumerate(nic_ids):
            add_nic(nid, gpu_ids[j * g // nics])
    else:
        count = 0
        for k in range(switches):
            c_gpus = [gid for i, gid in enumerate(gpu_ids) if i * switches // g == k]
            c_nics = [nid for j, nid in enumerate(nic_ids) if j * switches // nics == k]
            split = len(c_gpus) > 1 and len(c_nics) >= len(c_gpus)
            groups = ([([gid], c_nics[m * len(c_nics) // len(c_gpus):
                                      (m + 1) * len(c_nics) // len(c_gpus)])
                       for m, gid in enumerate(c_gpus)] if split else [(c_gpus, c_nics)])
            first = None
            for members, their_nics in groups:
                pid = f"n{server}/plx{count}"
                count += 1
                G.add_node(pid, kind="pcie_switch")
                if first is None:
                    first = pid
                else:
                    add_cable(G, first, pid, pcie_bandwidth, pcie_latency, "pcie", duplex)
                for gid in members:
                    add_cable(G, gid, pid, pcie_bandwidth, pcie_latency, "pcie", duplex)
                for nid in their_nics:
                    add_nic(nid, pid)
    for i, gid in enumerate(gpu_ids):
        G.nodes[gid]["nic"] = nic_ids[nearest_nic(i, g, nics)]
    return nic_ids


def _switch_node(G, sid, *, chips, links_per_gpu, nvls) -> str:
    G.add_node(sid, kind="nvswitch", chips=int(chips), links_per_gpu=int(links_per_gpu),
               nvls=bool(nvls))
    return sid


def hgx_node(
    G: nx.DiGraph,
    server: int,
    *,
    model: str,
    gpus: int,
    nvlink_bandwidth: float,
    nvswitch_latency: float,
    links_per_gpu: int,
    chips: int,
    nvls: bool,
    pcie_switches: int,
    nics: int,
    pcie_bandwidth: float,
    pcie_latency: float,
    nic_model: str = "",
    switch: str | None = None,
    first_local: int = 0,
    direct_nics: bool = False,
    duplex: str = FULL,
) -> list[str]:
    """Add one NVSwitch server (HGX-style baseboard); return its NIC ids (NIC j = rail j).

    Adds GPUs ``n{server}/gpu{i}``, the folded NVSwitch ``n{server}/nvswitch``
    (or cables to an existing NVLink-domain switch `switch`), one cable per
    GPU of ``links_per_gpu * nvlink_bandwidth`` per direction, and the PCIe
    tree of :func:`_pcie`.

    Parameters
    ----------
    G : networkx.DiGraph
    server : int
    model : str
        GPU model (informational, node attribute ``model``).
    gpus : int
        GPUs of the server.
    nvlink_bandwidth : float
        One NVLink, per direction (bytes/s).
    nvswitch_latency : float
        Each GPU <-> NVSwitch cable (s).
    links_per_gpu, chips : int
        NVLinks per GPU, NVSwitch chips folded into the node.
    nvls : bool
        The NVSwitch can reduce (NVLink SHARP).
    pcie_switches, nics : int
        PCIe switches and NICs of the server.
    pcie_bandwidth, pcie_latency : float
        Every PCIe cable (GPU - switch, switch - NIC).
    nic_model : str
    switch : str, optional
        An NVLink-domain switch shared by several servers (GB200 NVL72).
    direct_nics : bool
        Cable GPU and NIC directly (no PCIe switch).
    duplex : {"full", "shared"}
        ``"full"`` as built; ``"shared"`` only to compare with the study's convention.

    Returns
    -------
    list of str

    Examples
    --------
    >>> G = nx.DiGraph()
    >>> hgx_node(G, 0, model="H100", gpus=8, nvlink_bandwidth=25e9, nvswitch_latency=3e-7,
    ...          links_per_gpu=18, chips=4, nvls=True, pcie_switches=8, nics=8,
    ...          pcie_bandwidth=63e9, pcie_latency=5e-7)[:2]
    ['n0/nic0', 'n0/nic1']
    >>> G.edges["n0/gpu0", "n0/nvswitch"]["bandwidth"], G.nodes["n0/gpu5"]["nic"]
    (450000000000.0, 'n0/nic5')
    """
    gpu_ids = [add_gpu(G, server, i, model) for i in range(gpus)]
    sid = switch or _switch_node(G, f"n{server}/nvswitch", chips=chips,
                                 links_per_gpu=links_per_gpu, nvls=nvls)
    for gid in gpu_ids:
        add_cable(G, gid, sid, links_per_gpu * nvlink_bandwidth, nvswitch_latency,
                  "nvswitch", duplex)
    return _pcie(G, server, gpu_ids, switches=pcie_switches, nics=nics,
                 pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency, nic_model=nic_model,
                 direct=direct_nics, duplex=duplex)


def dgx1_v100_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvlink_bandwidth: float = 25e9,
    nvlink_latency: float = 0.6e-6,
    pcie_bandwidth: float = 15.75e9,
    pcie_latency: float = 0.5e-6,
    nics: int = 4,
    duplex: str = FULL,
) -> list[str]:
    """Add one DGX-1 (V100) server: hybrid cube-mesh NVLink 2, 4 PCIe switches; return its NICs.

    The NVLink pairs and their link counts are :data:`topologies.nodes.DGX1_NVLINK`
    (double links 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7; single links
    0-1, 0-2, 1-3, 2-6, 3-7, 4-5, 4-6, 5-7; 6 links per GPU), one full-duplex
    cable per pair of ``links * nvlink_bandwidth``. GPUs 2k and 2k+1 share
    PCIe switch ``plx{k}`` with NIC k (``nics=4``).

    Examples
    --------
    >>> G = nx.DiGraph()
    >>> dgx1_v100_node(G, 0)
    ['n0/nic0', 'n0/nic1', 'n0/nic2', 'n0/nic3']
    >>> G.edges["n0/gpu0", "n0/gpu3"]["bandwidth"], G.edges["n0/gpu0", "n0/gpu1"]["bandwidth"]
    (50000000000.0, 25000000000.0)
    >>> sorted(G.successors("n0/plx1"))
    ['n0/gpu2', 'n0/gpu3', 'n0/nic1']
    """
    gpu_ids = [add_gpu(G, server, i, "V100") for i in range(8)]
    for a, b, units in DGX1_NVLINK:
        add_cable(G, gpu_ids[a], gpu_ids[b], nvlink_bandwidth * units, nvlink_latency,
                  "nvlink", duplex)
    return _pcie(G, server, gpu_ids, switches=4, nics=nics, pcie_bandwidth=pcie_bandwidth,
                 pcie_latency=pcie_latency, nic_model="ConnectX-4 EDR", duplex=duplex)


def dgx2_v100_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvlink_bandwidth: float = 25e9,
    nvswitch_latency: float = 0.3e-6,
    board_links: int = 48,
    pcie_bandwidth: float = 15.75e9,
    pcie_latency: float = 0.5e-6,
    nics: int = 8,
    duplex: str = FULL,
) -> list[str]:
    """Add one DGX-2 server: 16 V100 on two baseboards of 6 NVSwitch planes each; return its NICs.

    Each baseboard's 6 NVSwitch chips (one plane per GPU link) are folded into
    ``n{s}/nvswitch{b}`` (``b`` = 0, 1; GPUs 8b..8b+7): every GPU has
    6 x `nvlink_bandwidth` to its board's switch; the boards are joined plane
    by plane with 8 links per plane (``board_links = 48`` in all, 1.2e12 per
    direction: non-blocking for the 8 x 150e9 of a board). GPUs 2k and 2k+1
    share PCIe switch ``plx{k}`` with NIC k (8 EDR NICs).

    Examples
    --------
    >>> G = nx.DiGraph()
    >>> len(dgx2_v100_node(G, 0))
    8
    >>> G.edges["n0/gpu9", "n0/nvswitch1"]["bandwidth"]
    150000000000.0
    >>> G.edges["n0/nvswitch0", "n0/nvswitch1"]["bandwidth"]
    1200000000000.0
    """
    gpu_ids = [add_gpu(G, server, i, "V100") for i in range(16)]
    boards = [_switch_node(G, f"n{server}/nvswitch{b}", chips=6, links_per_gpu=6, nvls=False)
              for b in range(2)]
    for i, gid in enumerate(gpu_ids):
        add_cable(G, gid, boards[i // 8], 6 * nvlink_bandwidth, nvswitch_latency, "nvswitch",
                  duplex)
    add_cable(G, boards[0], boards[1], board_links * nvlink_bandwidth, nvswitch_latency,
              "nvswitch", duplex)
    return _pcie(G, server, gpu_ids, switches=8, nics=nics, pcie_bandwidth=pcie_bandwidth,
                 pcie_latency=pcie_latency, nic_model="ConnectX-5 EDR", duplex=duplex)


# -------------------------------------------------------------- the fabric


def _rails(G, ports, *, nodes_per_su, spines, oversubscription, nic_bandwidth, nic_latency,
           uplink_latency, switch_bandwidth, switch_latency, duplex, net_latency,
           net_conn_bandwidth) -> None:
    """The rail-optimized fabric, and the network transport's figures NCCL sees on it
    (``net_latency`` as a graph attribute when not 0, ``net_conn_bandwidth`` on the NIC
    cables); both checked by :func:`_common_checks`."""
    fabrics.rail_optimized(
        G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
        link_bandwidth=nic_bandwidth, link_latency=nic_latency, uplink_latency=uplink_latency,
        leaf_bandwidth=switch_bandwidth, leaf_latency=switch_latency,
        spine_bandwidth=switch_bandwidth, spine_latency=switch_latency, duplex=duplex,
    )
    if net_latency:
        G.graph["net_latency"] = float(net_latency)
    _cap_connections(G, float(net_conn_bandwidth))


def _graph(name, description, gpus_per_node, *, nvls, rank_order=None) -> nx.DiGraph:
    G = nx.DiGraph(name=name, description=description, gpus_per_node=gpus_per_node,
                   default_group_size=gpus_per_node, platform="hardware", nvls=bool(nvls))
    if rank_order:
        G.graph["rank_order"] = rank_order
    return G


def _common_checks(nodes, gpus, nics, nic_bandwidth, oversubscription, nodes_per_su, spines,
                   duplex, net_latency, net_conn_bandwidth):
    if duplex not in DUPLEX:
        raise TopologyError(f"duplex must be one of {', '.join(DUPLEX)}, got {duplex!r}")
    check_count("nodes", nodes)
    _check_nics(nics, gpus)
    _check_range("nic_bandwidth", nic_bandwidth)
    _check_range("oversubscription", oversubscription)
    check_count("nodes_per_su", nodes_per_su)
    check_count("spines", spines, 0)
    _check_range("net_latency", net_latency)
    _check_range("net_conn_bandwidth", net_conn_bandwidth)


def _fabric_text(nodes, nics, nic_bandwidth, oversubscription) -> str:
    return (f"{nics} x {nic_bandwidth * 8 / 1e9:g} Gb/s NICs per node on rails, "
            f"oversubscription {oversubscription:g}")


# ------------------------------------------------------------------ presets


def dgx1_v100(
    nodes: int = 1,
    *,
    nics_per_node: int = 4,
    nic_bandwidth: float = 12.5e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 18,
    spines: int = 0,
    nvlink_bandwidth: float = 25e9,
    nvlink_latency: float = 0.6e-6,
    pcie_bandwidth: float = 15.75e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 9e11,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX-1 with V100 (DGX-1V) as built: hybrid cube-mesh NVLink 2, 4 EDR NICs, rail fabric.

    Parameters
    ----------
    nodes : int
        DGX-1 servers (8 GPUs each).
    nics_per_node : int
        4 ConnectX-4 EDR adapters, NIC k on the PCIe switch of GPUs 2k, 2k+1
        [nccl.md s5 "DGX-1V hybrid cube mesh", from ``nvidia-smi topo -m``];
        1 to 16.
    nic_bandwidth : float
        EDR InfiniBand 100 Gb/s = 12.5e9 bytes/s per direction [nccl.md s5,
        "NIC rates in NCCL"].
    oversubscription : float
        Rail leaf down : up bandwidth, 1 to 64 (1 = full bisection).
    nodes_per_su : int
        Nodes per rail leaf: 18 (an EDR switch of 36 ports: 18 down, 18 up
        [recalled, SB7800]).
    spines : int
        0 = as many spines as uplinks of a full leaf.
    nvlink_bandwidth : float
        One NVLink 2 link, 25e9 per direction (50 GB/s bidirectional); double
        pairs get 50e9 [nccl.md s5 "NVLink2 (V100) per link"].
    nvlink_latency : float
        0.6e-6 per GPU - GPU hop: NCCL's NVLink LL hop latency [nccl.md s4.1].
    pcie_bandwidth : float
        PCIe Gen3 x16: 15.75e9 per direction (128b/130b) [nccl.md s5 "PCIe
        achievable", theoretical x16].
    pcie_latency : float
        0.5e-6 per PCIe cable: NCCL's PCI LL hop (1.0 us, GPU -> switch ->
        GPU) split over two cables [nccl.md s4.1].
    nic_latency, switch_latency : float
        NIC - leaf cable (adapter included) 0.3e-6 and switch crossing 0.1e-6:
        with the PCIe cables a cross-node hop is 2.7 us, NCCL's NET ring LL
        hop [nccl.md s4.1, s5 "latencies"].
    uplink_latency : float
        Leaf - spine cable, 5e-8 (about 10 m of fibre) [recalled].
    switch_bandwidth : float
        Crossing capacity of a leaf or spine: 36 EDR ports x 12.5e9 x 2
        = 9e11 [recalled, SB7800 7.2 Tb/s].
    net_latency : float
        The network transport's advertised latency per network hop (NCCL's
        ``graph.latencyInter``), seconds; 0 by default. As :func:`dgx_a100`.
    net_conn_bandwidth : float
        The most one NCCL network connection carries (bytes/s, default inf:
        no limit). As :func:`dgx_h100`.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``rank_order =
        "0,3,2,1,5,6,7,4"`` (the ring over the double links), ``nvls = False``.

    Examples
    --------
    >>> G = dgx1_v100(2)
    >>> G.edges["n0/gpu0", "n0/gpu4"]["bandwidth"], G.edges["n0/gpu4", "n0/gpu0"]["duplex"]
    (50000000000.0, 'full')
    >>> G.nodes["n1/gpu5"]["nic"], sorted(G.predecessors("su0/leaf2"))
    ('n1/nic2', ['n0/nic2', 'n1/nic2', 'spine0', 'spine1'])
    >>> G.graph["rank_order"], G.graph["platform"]
    ('0,3,2,1,5,6,7,4', 'hardware')
    """
    _common_checks(nodes, 8, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su,
                   spines, duplex, net_latency, net_conn_bandwidth)
    G = _graph("dgx1-v100", f"DGX-1V: {nodes} node(s) x 8 V100, hybrid cube-mesh NVLink 2 "
               f"(25 GB/s/dir per link), "
               f"{_fabric_text(nodes, nics_per_node, nic_bandwidth, oversubscription)}",
               8, nvls=False, rank_order=DGX1_RING)
    ports = [dgx1_v100_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_latency=nvlink_latency,
                            pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                            nics=nics_per_node, duplex=duplex)
             for s in range(nodes)]
    _rails(G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
           nic_bandwidth=nic_bandwidth, nic_latency=nic_latency, uplink_latency=uplink_latency,
           switch_bandwidth=switch_bandwidth, switch_latency=switch_latency, duplex=duplex,
           net_latency=net_latency, net_conn_bandwidth=net_conn_bandwidth)
    return validate(G)


def dgx2_v100(
    nodes: int = 1,
    *,
    nics_per_node: int = 8,
    nic_bandwidth: float = 12.5e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 18,
    spines: int = 0,
    nvlink_bandwidth: float = 25e9,
    nvswitch_latency: float = 0.3e-6,
    board_links: int = 48,
    pcie_bandwidth: float = 15.75e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 9e11,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX-2 as built: 16 V100, 12 NVSwitches in 6 planes on 2 baseboards, 8 EDR NICs.

    Parameters
    ----------
    nodes : int
        DGX-2 servers (16 GPUs each).
    nics_per_node : int
        8 EDR adapters, NIC k on the PCIe switch of GPUs 2k, 2k+1
        [recalled, DGX-2 datasheet "8 x 100Gb/sec InfiniBand"]; 1 to 32.
    nic_bandwidth : float
        EDR 12.5e9 per direction [nccl.md s5].
    oversubscription, nodes_per_su, spines : float, int, int
        Rail fabric (as :func:`dgx1_v100`).
    nvlink_bandwidth : float
        One NVLink 2 link, 25e9 per direction; each V100 has 6 links, one to
        each NVSwitch of its baseboard (150e9 per GPU) [nccl.md s5 "DGX-2 /
        HGX-2"].
    nvswitch_latency : float
        0.3e-6 per GPU - switch cable (two make NCCL's 0.6 us NVLink LL hop)
        [nccl.md s4.1]; also the board - board cable.
    board_links : int
        Links between the baseboards: 6 planes x 8 (each 18-port NVSwitch
        has 8 GPU ports and 8 ports to the other board) [nccl.md s5].
    pcie_bandwidth, pcie_latency, nic_latency, uplink_latency : float
        As :func:`dgx1_v100` (PCIe Gen3).
    switch_bandwidth, switch_latency : float
        As :func:`dgx1_v100` (EDR switches).
    net_latency : float
        The network transport's advertised latency per network hop (NCCL's
        ``graph.latencyInter``), seconds; 0 by default. As :func:`dgx_a100`.
    net_conn_bandwidth : float
        The most one NCCL network connection carries (bytes/s, default inf:
        no limit). As :func:`dgx_h100`.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 16``, ``default_group_size = 16``, ``nvls = False``.

    Examples
    --------
    >>> G = dgx2_v100(2)
    >>> sum(1 for n, d in G.nodes(data=True) if d["kind"] == "nvswitch")
    4
    >>> G.nodes["n0/nvswitch1"]["chips"], G.nodes["n0/gpu15"]["nic"]
    (6, 'n0/nic7')
    """
    _common_checks(nodes, 16, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su,
                   spines, duplex, net_latency, net_conn_bandwidth)
    G = _graph("dgx2-v100", f"DGX-2: {nodes} node(s) x 16 V100, 2 baseboards x 6 NVSwitch "
               f"planes (6 x 25 GB/s/dir per GPU), "
               f"{_fabric_text(nodes, nics_per_node, nic_bandwidth, oversubscription)}",
               16, nvls=False)
    ports = [dgx2_v100_node(G, s, nvlink_bandwidth=nvlink_bandwidth,
                            nvswitch_latency=nvswitch_latency, board_links=board_links,
                            pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                            nics=nics_per_node, duplex=duplex)
             for s in range(nodes)]
    _rails(G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
           nic_bandwidth=nic_bandwidth, nic_latency=nic_latency, uplink_latency=uplink_latency,
           switch_bandwidth=switch_bandwidth, switch_latency=switch_latency, duplex=duplex,
           net_latency=net_latency, net_conn_bandwidth=net_conn_bandwidth)
    return validate(G)


def _hgx_cluster(name, text, nodes, *, model, gpus, links_per_gpu, chips, nvls, pcie_switches,
                 nic_model, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su, spines,
                 nvlink_bandwidth, nvswitch_latency, pcie_bandwidth, pcie_latency, nic_latency,
                 uplink_latency, switch_bandwidth, switch_latency, duplex,
                 net_latency=0.0, net_conn_bandwidth=math.inf) -> nx.DiGraph:
    _common_checks(nodes, gpus, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su,
                   spines, duplex, net_latency, net_conn_bandwidth)
    per_gpu = links_per_gpu * nvlink_bandwidth
    G = _graph(name, f"{text}: {nodes} node(s) x {gpus} {model} on NVSwitch "
               f"({links_per_gpu} x {nvlink_bandwidth / 1e9:g} GB/s/dir = "
               f"{per_gpu / 1e9:g} GB/s/dir "
               f"per GPU{', NVLS' if nvls else ''}), "
               f"{_fabric_text(nodes, nics_per_node, nic_bandwidth, oversubscription)}",
               gpus, nvls=nvls)
    ports = [hgx_node(G, s, model=model, gpus=gpus, nvlink_bandwidth=nvlink_bandwidth,
                      nvswitch_latency=nvswitch_latency, links_per_gpu=links_per_gpu,
                      chips=chips, nvls=nvls, pcie_switches=pcie_switches, nics=nics_per_node,
                      pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                      nic_model=nic_model, duplex=duplex)
             for s in range(nodes)]
    _rails(G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
           nic_bandwidth=nic_bandwidth, nic_latency=nic_latency, uplink_latency=uplink_latency,
           switch_bandwidth=switch_bandwidth, switch_latency=switch_latency, duplex=duplex,
           net_latency=net_latency, net_conn_bandwidth=net_conn_bandwidth)
    return validate(G)


def dgx_a100(
    nodes: int = 1,
    *,
    nics_per_node: int = 8,
    nic_bandwidth: float = 25e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 20,
    spines: int = 0,
    nvlink_bandwidth: float = 25e9,
    links_per_gpu: int = 12,
    nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 31.5e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 2e12,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX A100 as built: 8 A100, 12 NVLink 3 links to 6 NVSwitches, 8 HDR NICs, rail fabric.

    Parameters
    ----------
    nodes : int
        DGX A100 servers.
    nics_per_node : int
        8 ConnectX-6 HDR compute adapters; 4 PCIe Gen4 switch complexes each
        with 2 GPUs and 2 NICs [nccl.md s5 "DGX A100", recalled from the DGX
        A100 User Guide], modelled as one switch per GPU and its NIC (GPU i,
        NIC i on ``plx{i}``) with the two switches of a complex cabled
        together, so that GPU i's shortest route out is NIC i (rail i);
        1 to 16 (p4d: 4, OCI: 16).
    nic_bandwidth : float
        HDR 200 Gb/s = 25e9 per direction [nccl.md s5 "NIC rates in NCCL"].
    oversubscription : float
        1 to 64.
    nodes_per_su : int
        20 (a 40-port HDR switch: 20 down, 20 up) [recalled, QM8700].
    spines : int
    nvlink_bandwidth, links_per_gpu : float, int
        12 NVLink 3 links of 25e9 per direction = 300e9 per GPU ("600GB/s
        bi-directional (300GB/s TX & 300GB/s RX)"); 6 NVSwitch chips, no NVLS
        [nccl.md s5 "DGX A100 / HGX A100"].
    nvswitch_latency : float
        0.3e-6 per GPU - switch cable (NCCL NVLink LL hop 0.6 us over two) [nccl.md s4.1].
    pcie_bandwidth : float
        PCIe Gen4 x16: 31.5e9 per direction [nccl.md s5 "PCIe achievable"].
    pcie_latency, nic_latency, uplink_latency, switch_latency : float
        As :func:`dgx1_v100`.
    switch_bandwidth : float
        40 HDR ports x 25e9 x 2 = 2e12 [recalled, QM8700 16 Tb/s].
    net_latency : float
        The latency the network transport advertises to NCCL (its plugin's
        ``ncclNetProperties.latency``, NCCL's ``graph.latencyInter``), seconds
        per network hop; NCCL adds it to every network hop of its latency
        model, twice for Simple (the receive's GPUDirect flush) [nccl.md
        s4.3]. 0 (default): NCCL's own IB/RoCE transport advertises none. The
        ``nccl-*`` algorithms and ``nccl`` spend it as NCCL's model does.
        AWS EFA through aws-ofi-nccl (p4d, 2020): ``net_latency=70e-6``,
        FITTED to the p4d log of ``experiments/nccl-tests`` (its 158-270 us
        small-message floor), not a published figure.
    net_conn_bandwidth : float
        The most one NCCL network connection carries (bytes/s, default inf:
        no limit). As :func:`dgx_h100`.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = False``.

    Examples
    --------
    >>> G = dgx_a100(2)
    >>> G.edges["n0/gpu2", "n0/nvswitch"]["bandwidth"], G.nodes["n0/nvswitch"]["nvls"]
    (300000000000.0, False)
    >>> sorted(G.successors("n1/plx3"))
    ['n1/gpu3', 'n1/nic3', 'n1/plx2']
    """
    return _hgx_cluster(
        "dgx-a100", "DGX A100", nodes, model="A100", gpus=8, links_per_gpu=links_per_gpu,
        chips=6, nvls=False, pcie_switches=4, nic_model="ConnectX-6 HDR",
        nics_per_node=nics_per_node, nic_bandwidth=nic_bandwidth,
        oversubscription=oversubscription, nodes_per_su=nodes_per_su, spines=spines,
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency, nic_latency=nic_latency,
        uplink_latency=uplink_latency, switch_bandwidth=switch_bandwidth,
        switch_latency=switch_latency, duplex=duplex, net_latency=net_latency,
        net_conn_bandwidth=net_conn_bandwidth)


def dgx_h100(
    nodes: int = 1,
    *,
    nics_per_node: int = 8,
    nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 32,
    spines: int = 0,
    nvlink_bandwidth: float = 25e9,
    links_per_gpu: int = 18,
    nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 6.4e12,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX H100 as built: 8 H100, 18 NVLink 4 links to 4 NVSwitches (NVLS), 8 NDR NICs, rails.

    Parameters
    ----------
    nodes : int
        DGX H100 servers.
    nics_per_node : int
        8 ConnectX-7 400 Gb/s, one per GPU on its PCIe Gen5 switch
        (rail-optimized) [nccl.md s5 "DGX/HGX H100"]; 1 to 16 (OCI: 16 x 200G).
    nic_bandwidth : float
        NDR 400 Gb/s = 50e9 per direction [nccl.md s5 "NIC rates in NCCL"].
    oversubscription : float
        1 to 64.
    nodes_per_su : int
        32 (a 64-port NDR switch: 32 down, 32 up) [recalled, QM9700].
    spines : int
    nvlink_bandwidth, links_per_gpu : float, int
        18 NVLink 4 links of 25e9 per direction = 450e9 per GPU ("900GB/s"
        bidirectional; "450GB/s is the line rate"); 4 NVSwitch chips with
        NVLink SHARP (``nvls=True``) [nccl.md s5 "DGX/HGX H100"].
    nvswitch_latency : float
        0.3e-6 per GPU - switch cable (NCCL NVLink LL hop 0.6 us over two) [nccl.md s4.1].
    pcie_bandwidth : float
        PCIe Gen5 x16: 63e9 per direction [nccl.md s5 "PCIe achievable"].
    pcie_latency, nic_latency, uplink_latency, switch_latency : float
        As :func:`dgx1_v100`.
    switch_bandwidth : float
        64 NDR ports x 50e9 x 2 = 6.4e12 [recalled, QM9700 51.2 Tb/s].
    net_latency : float
        As :func:`dgx_a100`.
    net_conn_bandwidth : float
        The most one NCCL network connection carries, bytes/s (default
        ``inf``: no limit, the NIC alone bounds the flows). NCCL opens one
        connection per channel and peer over one NIC (a ring channel: one
        send and one receive per node; NVLSTree: one per channel and head, so
        16-24 per NIC), and a connection's goodput can be below the NIC's:
        with ``NCCL_IB_QPS_PER_CONNECTION`` QPs the connection's data is
        spread over its QPs, which share this figure (it is per connection,
        not per QP). Every flow crossing a NIC cable is capped at it (edge
        attribute ``flow_bandwidth``, graph attribute ``net_conn_bandwidth``),
        so 16 ring channels (2 per NIC) leave the NIC partly idle where 24 (3
        per NIC, ``NCCL_MIN_CTAS=24``) fill it. ``net_conn_bandwidth=20.44e9``
        is FITTED to the plateau of one cluster's log (section E of
        ``experiments/nccl-tests/h100x8-2to8node-ib400_allreduce_ncclt309.txt``,
        4 x 8 H100, 8 GiB ring busbw 324.5 GB/s = 16 x 20.28) and validated
        on that cluster's other runs (C, D, F, G); not a published figure, and
        not the same on every cluster (section B's VMs reach 366 GB/s with 16
        channels). 1e8 to 1e12, or inf.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = True``.

    Examples
    --------
    >>> G = dgx_h100(2)
    >>> G.edges["n0/gpu3", "n0/nvswitch"]["bandwidth"], G.nodes["n0/nvswitch"]["nvls"]
    (450000000000.0, True)
    >>> G.nodes["n1/gpu3"]["nic"], sorted(G.successors("su0/leaf3"))
    ('n1/nic3', ['n0/nic3', 'n1/nic3', 'spine0', 'spine1'])
    """
    return _hgx_cluster(
        "dgx-h100", "DGX H100", nodes, model="H100", gpus=8, links_per_gpu=links_per_gpu,
        chips=4, nvls=True, pcie_switches=8, nic_model="ConnectX-7 NDR",
        nics_per_node=nics_per_node, nic_bandwidth=nic_bandwidth,
        oversubscription=oversubscription, nodes_per_su=nodes_per_su, spines=spines,
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency, nic_latency=nic_latency,
        uplink_latency=uplink_latency, switch_bandwidth=switch_bandwidth,
        switch_latency=switch_latency, duplex=duplex, net_latency=net_latency,
        net_conn_bandwidth=net_conn_bandwidth)


def dgx_b200(
    nodes: int = 1,
    *,
    nics_per_node: int = 8,
    nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 32,
    spines: int = 0,
    nvlink_bandwidth: float = 50e9,
    links_per_gpu: int = 18,
    nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 6.4e12,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX B200 as built: 8 B200, 18 NVLink 5 links to 2 NVSwitches (NVLS), 8 x 400G NICs, rails.

    Parameters
    ----------
    nodes : int
        DGX B200 servers.
    nics_per_node : int
        8 ConnectX-7 400 Gb/s, one per GPU ("8x ConnectX-7 IB NDR 400Gb/s")
        [nccl.md s5 "DGX/HGX B200"]; 1 to 16.
    nic_bandwidth : float
        400 Gb/s = 50e9 per direction [nccl.md s5].
    oversubscription, nodes_per_su, spines : float, int, int
        As :func:`dgx_h100` (NDR fabric).
    nvlink_bandwidth, links_per_gpu : float, int
        18 NVLink 5 links of 50e9 per direction = 900e9 per GPU ("1.8 TB/s
        bidirectional", "14.4 TB/s aggregated" per 8 GPUs); 2 NVSwitch chips
        [recalled] with NVLink SHARP [nccl.md s5 "DGX/HGX B200"].
    nvswitch_latency, pcie_bandwidth, pcie_latency, nic_latency : float
        As :func:`dgx_h100` (PCIe Gen5).
    uplink_latency, switch_bandwidth, switch_latency : float
        As :func:`dgx_h100` (NDR switches).
    net_latency : float
        As :func:`dgx_a100`.
    net_conn_bandwidth : float
        The most one NCCL network connection carries (bytes/s, default inf:
        no limit). As :func:`dgx_h100`.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = True``.

    Examples
    --------
    >>> G = dgx_b200(2)
    >>> G.edges["n1/nvswitch", "n1/gpu7"]["bandwidth"], G.nodes["n1/nvswitch"]["chips"]
    (900000000000.0, 2)
    """
    return _hgx_cluster(
        "dgx-b200", "DGX B200", nodes, model="B200", gpus=8, links_per_gpu=links_per_gpu,
        chips=2, nvls=True, pcie_switches=8, nic_model="ConnectX-7 NDR",
        nics_per_node=nics_per_node, nic_bandwidth=nic_bandwidth,
        oversubscription=oversubscription, nodes_per_su=nodes_per_su, spines=spines,
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency, nic_latency=nic_latency,
        uplink_latency=uplink_latency, switch_bandwidth=switch_bandwidth,
        switch_latency=switch_latency, duplex=duplex, net_latency=net_latency,
        net_conn_bandwidth=net_conn_bandwidth)


def gb200_nvl72(
    nodes: int = 18,
    *,
    hosts_per_domain: int = 18,
    nics_per_node: int = 4,
    nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0,
    nodes_per_su: int = 32,
    spines: int = 0,
    nvlink_bandwidth: float = 50e9,
    links_per_gpu: int = 18,
    nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9,
    pcie_latency: float = 0.5e-6,
    nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8,
    switch_bandwidth: float = 6.4e12,
    switch_latency: float = 0.1e-6,
    net_latency: float = 0.0,
    net_conn_bandwidth: float = math.inf,
    duplex: str = "full",
) -> nx.DiGraph:
    """GB200 NVL72 as built: hosts of 4 B200 in NVLink domains of 72 GPUs, 4 x 400G NICs per host.

    `nodes` counts hosts (compute trays, one OS node each: 2 Grace + 4 B200).
    Hosts ``d * hosts_per_domain .. (d+1) * hosts_per_domain - 1`` share the
    NVLink domain ``nvl{d}/nvswitch`` (the 9 switch trays, 18 NVSwitch chips,
    folded into one node with NVLS); every GPU has 18 NVLink 5 links to it.
    Each GPU has its own NIC (``n{s}/nic{i}``), NIC i of every host on rail
    i across domains. The GPU - NIC path is one PCIe Gen5 x16 cable: the
    tray's real path (NIC on the Grace CPU's PCIe, Grace - B200 over
    NVLink-C2C at about 200 GB/s measured, nccl.md s5) is faster than the
    NIC, so it never binds and is not modelled hop by hop.

    Parameters
    ----------
    nodes : int
        Hosts (4 GPUs each); 18 = one NVL72 rack.
    hosts_per_domain : int
        18 compute trays per NVL72 rack ("72 GPUs in one NVLink domain",
        "18 compute trays x (2 Grace + 4 B200)", "9 NVLink switch trays")
        [nccl.md s5 "GB200 NVL72"]; 1 to 18.
    nics_per_node : int
        4 x 400 Gb/s RoCE/IB per host (OCI GB200 shape) [nccl.md s5]; 1 to 8.
    nic_bandwidth : float
        400 Gb/s = 50e9 per direction.
    oversubscription, nodes_per_su, spines : float, int, int
        Rail fabric across domains (as :func:`dgx_h100`).
    nvlink_bandwidth, links_per_gpu : float, int
        NVLink 5: 18 x 50e9 = 900e9 per direction per GPU [nccl.md s5].
    nvswitch_latency, pcie_bandwidth, pcie_latency, nic_latency : float
        As :func:`dgx_h100` (PCIe Gen5; the NIC hangs off its GPU without a switch).
    uplink_latency, switch_bandwidth, switch_latency : float
        As :func:`dgx_h100`.
    net_latency : float
        The network transport's advertised latency per network hop (NCCL's
        ``graph.latencyInter``), seconds; 0 by default. As :func:`dgx_a100`.
    net_conn_bandwidth : float
        The most one NCCL network connection carries (bytes/s, default inf:
        no limit). As :func:`dgx_h100`.
    duplex : {"full", "shared"}
        ``"full"`` as built (every figure per direction); ``"shared"`` applies
        the study's convention (one capacity for both directions) to every
        cable, for comparisons only.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 4``, ``default_group_size = 4``, ``nvls = True``,
        graph attribute ``hosts_per_domain``.

    Examples
    --------
    >>> G = gb200_nvl72(18)
    >>> G.out_degree("nvl0/nvswitch"), G.edges["n17/gpu3", "nvl0/nvswitch"]["bandwidth"]
    (72, 900000000000.0)
    >>> H = gb200_nvl72(20)
    >>> H.has_edge("n18/gpu0", "nvl1/nvswitch"), H.nodes["n19/gpu2"]["nic"]
    (True, 'n19/nic2')
    """
    _common_checks(nodes, 4, nics_per_node, nic_bandwidth, oversubscription, nodes_per_su,
                   spines, duplex, net_latency, net_conn_bandwidth)
    if (isinstance(hosts_per_domain, bool) or not isinstance(hosts_per_domain, int)
            or not 1 <= hosts_per_domain <= 18):
        raise TopologyError(f"hosts_per_domain must be an int from 1 to 18 (4-GPU hosts per "
                            f"NVLink domain of up to 72 GPUs), got {hosts_per_domain!r}")
    domains = -(-nodes // hosts_per_domain)
    G = _graph("gb200-nvl72", f"GB200 NVL72: {nodes} host(s) x 4 B200 in {domains} NVLink "
               f"domain(s) of up to {4 * hosts_per_domain} GPUs ({links_per_gpu} x "
               f"{nvlink_bandwidth / 1e9:g} GB/s/dir per GPU, NVLS), "
               f"{_fabric_text(nodes, nics_per_node, nic_bandwidth, oversubscription)}",
               4, nvls=True)
    G.graph["hosts_per_domain"] = hosts_per_domain
    ports = []
    for s in range(nodes):
        d = s // hosts_per_domain
        sid = f"nvl{d}/nvswitch"
        if sid not in G:
            sid = _switch_node(G, sid, chips=18, links_per_gpu=links_per_gpu, nvls=True)
        ports.append(hgx_node(
            G, s, model="B200", gpus=4, nvlink_bandwidth=nvlink_bandwidth,
            nvswitch_latency=nvswitch_latency, links_per_gpu=links_per_gpu, chips=18, nvls=True,
            pcie_switches=4, nics=nics_per_node, pcie_bandwidth=pcie_bandwidth,
            pcie_latency=pcie_latency, nic_model="ConnectX-7", switch=sid, direct_nics=True,
            duplex=duplex))
    _rails(G, ports, nodes_per_su=nodes_per_su, spines=spines, oversubscription=oversubscription,
           nic_bandwidth=nic_bandwidth, nic_latency=nic_latency, uplink_latency=uplink_latency,
           switch_bandwidth=switch_bandwidth, switch_latency=switch_latency, duplex=duplex,
           net_latency=net_latency, net_conn_bandwidth=net_conn_bandwidth)
    return validate(G)
