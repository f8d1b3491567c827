"""The study's platform models: ABCI, DGX-1 and DGX-2 clusters (2019 machines).

Defaults are the figures of the study's platform models (the 2019 study's
flow-level platform descriptions of these clusters; see the README, "Two
kinds of truth"): NVLink and PCIe with one capacity for both directions, the
study's latencies. Each preset composes a node builder (:mod:`topologies.nodes`)
with a fabric builder (:mod:`topologies.fabrics`).

ABCI's racks: a rack of ``nodes_per_rack`` nodes has 4 leaves
``r{r}/leaf0..3`` and ``fbbs_per_rack`` FBB switches ``r{r}/fbb{j}``; node
``2g`` of a rack plugs plx0 -> leaf0, plx1 -> leaf1, node ``2g+1`` plx0 ->
leaf2, plx1 -> leaf3.
"""

from __future__ import annotations

import networkx as nx

from .. import fabrics
from ..fabrics import check_count
from ..nodes import abci_node, dgx1_node, dgx2_node
from ..schema import DUPLEX, TopologyError, validate

__all__ = ["abci", "dgx1_cluster", "dgx2_cluster", "DGX1_RANK_ORDER", "check_duplex",
           "study_graph"]

#: The study's rank placement on DGX-1 nodes (a ring over double NVLinks).
DGX1_RANK_ORDER = "0,3,2,1,5,6,7,4"


def check_duplex(value: str) -> str:
    """`value` if it is one of :data:`topologies.schema.DUPLEX`, else a TopologyError.

    Examples
    --------
    >>> check_duplex("full")
    'full'
    """
    if value not in DUPLEX:
        raise TopologyError(f"duplex must be one of {', '.join(DUPLEX)}, got {value!r}")
    return value


def study_graph(name: str, description: str, gpus_per_node: int, group: int,
                **extra) -> nx.DiGraph:
    """An empty graph with the graph attributes of a preset (and `extra` ones)."""
    return nx.DiGraph(name=name, description=description, gpus_per_node=gpus_per_node,
                      default_group_size=group, **extra)


def abci(
    nodes: int = 2, *,
    nodes_per_rack: int = 34, fbbs_per_rack: int = 3, spines: int = 2,
    nvlink_bandwidth: float = 50e9, nvlink_units: int = 2, nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9, pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9, ib_latency: float = 2.6e-8,
    leaf_fbb_bandwidth: float = 75e9, fbb_spine_bandwidth: float = 50e9,
    leaf_bandwidth: float = 9e11, leaf_latency: float = 9e-8,
    fbb_bandwidth: float = 9e11, fbb_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13, spine_latency: float = 4e-7,
    duplex: str = "shared",
) -> nx.DiGraph:
    """ABCI: nodes of 4 x V100 (NVLink fully connected, 2 PLX), rack fabric with FBB and spines.

    Parameters
    ----------
    nodes, nodes_per_rack, fbbs_per_rack, spines : int
        ABCI nodes (servers); 34 nodes per rack, whose 4 leaves and
        `fbbs_per_rack` FBB switches are laid out as the module text says;
        spine switches ``spine{j}`` of the whole machine (always built, even
        for one rack, where no shortest route uses them).
    nvlink_bandwidth, nvlink_units, nvlink_latency : float, int, float
        One NVLink unit and the units per GPU pair (2 x 50e9 = 1e11).
    pcie_bandwidth, pcie_latency, ib_bandwidth, ib_latency : float
        GPU <-> PLX; PLX <-> leaf (one EDR port), `ib_latency` also the
        latency of the leaf <-> FBB and FBB <-> spine cables.
    leaf_fbb_bandwidth, fbb_spine_bandwidth : float
        Every leaf to every FBB of its rack (6 x 12.5e9); every FBB to each
        spine (4 x 12.5e9; about 1:3 between racks).
    leaf_bandwidth, leaf_latency, fbb_bandwidth, fbb_latency, spine_bandwidth, spine_latency : float
        Switch crossing figures.
    duplex : {"shared", "full"}

    Returns
    -------
    networkx.DiGraph

    Examples
    --------
    >>> G = abci(2)
    >>> G.graph["gpus_per_node"], G.graph["default_group_size"]
    (4, 4)
    >>> G.edges["n1/plx1", "r0/leaf3"]["bandwidth"]
    12500000000.0
    """
    check_count("nodes", nodes)
    check_duplex(duplex)
    G = study_graph("abci", f"ABCI: {nodes} node(s) x 4 V100, NVLink fully connected, "
               "2 PLX/EDR ports per node, racks of leaf + FBB switches, spines", 4, 4)
    ports = [abci_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_units=nvlink_units,
                       nvlink_latency=nvlink_latency, pcie_bandwidth=pcie_bandwidth,
                       pcie_latency=pcie_latency, duplex=duplex) for s in range(nodes)]
    fabrics.abci_racks(
        G, ports, nodes_per_rack=nodes_per_rack, fbbs_per_rack=fbbs_per_rack, spines=spines,
        port_bandwidth=ib_bandwidth, port_latency=ib_latency,
        leaf_fbb_bandwidth=leaf_fbb_bandwidth, fbb_spine_bandwidth=fbb_spine_bandwidth,
        uplink_latency=ib_latency, leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        fbb_bandwidth=fbb_bandwidth, fbb_latency=fbb_latency, spine_bandwidth=spine_bandwidth,
        spine_latency=spine_latency, duplex=duplex)
    return validate(G)


def dgx1_cluster(
    nodes: int = 2, *,
    nodes_per_leaf: int = 6,
    nvlink_bandwidth: float = 50e9, nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9, pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9, ib_latency: float = 2.6e-8, uplink_bandwidth: float = 1.5e11,
    leaf_bandwidth: float = 9e11, leaf_latency: float = 9e-8,
    root_bandwidth: float = 1.625e13, root_latency: float = 4e-7,
    duplex: str = "shared",
) -> nx.DiGraph:
    """DGX-1 cluster: nodes of 8 x V100 (hybrid cube-mesh, 4 PLX), leaves under one root.

    Parameters
    ----------
    nodes : int
        Number of DGX-1 nodes.
    nodes_per_leaf : int
        6 (24 ports down); node ``n`` is on ``leaf{n // nodes_per_leaf}``.
    nvlink_bandwidth, nvlink_latency : float
        One NVLink unit; pairs and multiplicities of the study's model
        (:data:`topologies.nodes.DGX1_NVLINK`).
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX (GPU 2i, 2i+1 on plx i).
    ib_bandwidth, ib_latency : float
        PLX <-> leaf; `ib_latency` also for leaf <-> root.
    uplink_bandwidth : float
        Leaf <-> root, 12 x 12.5e9 folded (2:1 oversubscription).
    leaf_bandwidth, leaf_latency, root_bandwidth, root_latency : float
        Switch crossing figures (root = director class).
    duplex : {"shared", "full"}

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node=8``, ``default_group_size=4``,
        ``rank_order="0,3,2,1,5,6,7,4"``.

    Examples
    --------
    >>> G = dgx1_cluster(7)
    >>> sorted(G.predecessors("root"))
    ['leaf0', 'leaf1']
    >>> G.graph["rank_order"]
    '0,3,2,1,5,6,7,4'
    """
    check_count("nodes", nodes)
    check_duplex(duplex)
    G = study_graph("dgx1", f"DGX-1 cluster: {nodes} node(s) x 8 V100 (hybrid cube-mesh NVLink), "
               f"4 PLX/EDR ports per node, {nodes_per_leaf} nodes per leaf, one root",
               8, 4, rank_order=DGX1_RANK_ORDER)
    ports = [dgx1_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_latency=nvlink_latency,
                       pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                       duplex=duplex) for s in range(nodes)]
    fabrics.leaf_root(
        G, ports, nodes_per_leaf=nodes_per_leaf, port_bandwidth=ib_bandwidth,
        port_latency=ib_latency, uplink_bandwidth=uplink_bandwidth, uplink_latency=ib_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        root_bandwidth=root_bandwidth, root_latency=root_latency, duplex=duplex)
    return validate(G)


def dgx2_cluster(
    nodes: int = 2, *,
    nodes_per_leaf: int = 3,
    nvswitch_bandwidth: float = 50e9, nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 16e9, pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9, ib_latency: float = 2.6e-8, uplink_bandwidth: float = 1.5e11,
    leaf_bandwidth: float = 9e11, leaf_latency: float = 9e-8,
    root_bandwidth: float = 1.625e13, root_latency: float = 4e-7,
    duplex: str = "shared",
) -> nx.DiGraph:
    """DGX-2 cluster: nodes of 16 x V100 on one NVSwitch, 8 PLX, leaves under one root.

    Parameters
    ----------
    nodes : int
        Number of DGX-2 nodes.
    nodes_per_leaf : int
        3 (24 ports down).
    nvswitch_bandwidth, nvswitch_latency : float
        Each GPU <-> ``n{s}/nvswitch`` hop.
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX (GPU 2i, 2i+1 on plx i).
    ib_bandwidth, ib_latency : float
        PLX <-> leaf; `ib_latency` also for leaf <-> root.
    uplink_bandwidth : float
        Leaf <-> root (12 x 12.5e9 folded).
    leaf_bandwidth, leaf_latency, root_bandwidth, root_latency : float
        Switch crossing figures.
    duplex : {"shared", "full"}

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node=16``, ``default_group_size=4``.

    Examples
    --------
    >>> from topologies import gpus
    >>> G = dgx2_cluster(4)
    >>> len(gpus(G)), sorted(G.predecessors("root"))
    (64, ['leaf0', 'leaf1'])
    """
    check_count("nodes", nodes)
    check_duplex(duplex)
    G = study_graph("dgx2", f"DGX-2 cluster: {nodes} node(s) x 16 V100 on NVSwitch, 8 PLX/EDR "
               f"ports per node, {nodes_per_leaf} nodes per leaf, one root", 16, 4)
    ports = [dgx2_node(G, s, nvswitch_bandwidth=nvswitch_bandwidth,
                       nvswitch_latency=nvswitch_latency, pcie_bandwidth=pcie_bandwidth,
                       pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.leaf_root(
        G, ports, nodes_per_leaf=nodes_per_leaf, port_bandwidth=ib_bandwidth,
        port_latency=ib_latency, uplink_bandwidth=uplink_bandwidth, uplink_latency=ib_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        root_bandwidth=root_bandwidth, root_latency=root_latency, duplex=duplex)
    return validate(G)
