"""The V100 machines as built: DGX-1 (hybrid cube-mesh NVLink 2) and DGX-2 (NVSwitch).

One node builder per machine (:func:`dgx1_v100_node`, :func:`dgx2_v100_node`)
and one preset per machine that puts such nodes on a rail fabric
(:func:`dgx1_v100`, :func:`dgx2_v100`). Conventions and sources:
:mod:`topologies.hardware`.
"""

from __future__ import annotations

import math

import networkx as nx

from ..nodes import DGX1_NVLINK, add_cable, add_gpu
from ..schema import validate
from .common import (FULL, common_checks, fabric_options, fabric_text, hardware_graph, pcie_tree,
                     rails, switch_node)

__all__ = ["dgx1_v100", "dgx2_v100", "dgx1_v100_node", "dgx2_v100_node", "DGX1_RING"]

#: Ring over the 8 double NVLinks of a DGX-1 (0-3-2-1-5-6-7-4-0), the order
#: NCCL's ring search finds first ([NCCL] ``src/graph/search.cc``: the double
#: links form this Hamiltonian cycle) and the study's placement.
DGX1_RING = "0,3,2,1,5,6,7,4"


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
    return pcie_tree(G, server, gpu_ids, switches=4, nics=nics, pcie_bandwidth=pcie_bandwidth,
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
    boards = [switch_node(G, f"n{server}/nvswitch{b}", chips=6, links_per_gpu=6, nvls=False)
              for b in range(2)]
    for i, gid in enumerate(gpu_ids):
        add_cable(G, gid, boards[i // 8], 6 * nvlink_bandwidth, nvswitch_latency, "nvswitch",
                  duplex)
    add_cable(G, boards[0], boards[1], board_links * nvlink_bandwidth, nvswitch_latency,
              "nvswitch", duplex)
    return pcie_tree(G, server, gpu_ids, switches=8, nics=nics, pcie_bandwidth=pcie_bandwidth,
                     pcie_latency=pcie_latency, nic_model="ConnectX-5 EDR", duplex=duplex)


def dgx1_v100(
    nodes: int = 1, *,
    nics_per_node: int = 4, nic_bandwidth: float = 12.5e9,
    oversubscription: float = 1.0, nodes_per_su: int = 18, spines: int = 0,
    nvlink_bandwidth: float = 25e9, nvlink_latency: float = 0.6e-6,
    pcie_bandwidth: float = 15.75e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 9e11, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """DGX-1 with V100 (DGX-1V) as built: hybrid cube-mesh NVLink 2, 4 EDR NICs, rail fabric.

    Parameters
    ----------
    nodes : int
        DGX-1 servers (8 GPUs each).
    nics_per_node, nic_bandwidth : int, float
        4 ConnectX-4 EDR adapters, NIC k on the PCIe switch of GPUs 2k, 2k+1
        (``nvidia-smi topo -m`` of a DGX-1; 1 to 16), EDR InfiniBand 100 Gb/s
        = 12.5e9 bytes/s per direction ([NCCL] ``topo.cc``: Mb/s / 8000).
    nodes_per_su, switch_bandwidth : int, float
        18 nodes per rail leaf, and a crossing capacity of 9e11 per leaf or
        spine: an EDR switch of 36 ports, 18 down and 18 up, 36 x 12.5e9 x 2
        [recalled, SB7800 7.2 Tb/s].
    nvlink_bandwidth : float
        One NVLink 2 link, 25e9 per direction (50 GB/s bidirectional); double
        pairs get 50e9 [recalled, NVIDIA Tesla V100 whitepaper].
    pcie_bandwidth : float
        PCIe Gen3 x16: 15.75e9 per direction [recalled, PCI-SIG, 128b/130b].

    Other Parameters
    ----------------
    oversubscription, spines, nvlink_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`).

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = default_group_size = 8``, ``nvls = False``,
        ``rank_order = "0,3,2,1,5,6,7,4"`` (:data:`DGX1_RING`).

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
    net = fabric_options(locals())
    common_checks(nodes, 8, **net)
    G = hardware_graph("dgx1-v100", f"DGX-1V: {nodes} node(s) x 8 V100, hybrid cube-mesh NVLink 2 "
                       f"(25 GB/s/dir per link), {fabric_text(**net)}", 8, nvls=False, rank_order=DGX1_RING)
    ports = [dgx1_v100_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_latency=nvlink_latency,
                            pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                            nics=nics_per_node, duplex=duplex) for s in range(nodes)]
    rails(G, ports, **net)
    return validate(G)


def dgx2_v100(
    nodes: int = 1, *,
    nics_per_node: int = 8, nic_bandwidth: float = 12.5e9,
    oversubscription: float = 1.0, nodes_per_su: int = 18, spines: int = 0,
    nvlink_bandwidth: float = 25e9, nvswitch_latency: float = 0.3e-6, board_links: int = 48,
    pcie_bandwidth: float = 15.75e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 9e11, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """DGX-2 as built: 16 V100, 12 NVSwitches in 6 planes on 2 baseboards, 8 EDR NICs.

    Parameters
    ----------
    nodes, nics_per_node : int
        DGX-2 servers (16 GPUs each); 8 EDR adapters, NIC k on the PCIe switch
        of GPUs 2k, 2k+1 [recalled, DGX-2 datasheet "8 x 100Gb/sec
        InfiniBand"], 1 to 32.
    nvlink_bandwidth : float
        One NVLink 2 link, 25e9 per direction; each V100 has 6 links, one to
        each NVSwitch of its baseboard (150e9 per GPU) (Li et al., "Evaluating
        Modern GPU Interconnect", IEEE TPDS 2020, arXiv 1903.04611).
    board_links : int
        Links between the baseboards: 6 planes x 8 (each 18-port NVSwitch
        has 8 GPU ports and 8 ports to the other board) (Li et al., as above;
        NVIDIA Fabric Manager User Guide, "The HGX-2 GPU Baseboard").

    Other Parameters
    ----------------
    nic_bandwidth, nodes_per_su, pcie_bandwidth, switch_bandwidth
        As :func:`dgx1_v100` (EDR, PCIe Gen3).
    oversubscription, spines, nvswitch_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`).

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
    net = fabric_options(locals())
    common_checks(nodes, 16, **net)
    G = hardware_graph("dgx2-v100", f"DGX-2: {nodes} node(s) x 16 V100, 2 baseboards x 6 "
                       f"NVSwitch planes (6 x 25 GB/s/dir per GPU), {fabric_text(**net)}",
                       16, nvls=False)
    ports = [dgx2_v100_node(G, s, nvlink_bandwidth=nvlink_bandwidth,
                            nvswitch_latency=nvswitch_latency, board_links=board_links,
                            pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                            nics=nics_per_node, duplex=duplex)
             for s in range(nodes)]
    rails(G, ports, **net)
    return validate(G)
