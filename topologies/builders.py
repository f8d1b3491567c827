"""Preset topologies: the study's machines, parametric fat-trees, DGX H100 clusters.

Each preset composes a node builder (:mod:`topologies.nodes`) with a fabric
builder (:mod:`topologies.fabrics`) and returns a validated
:class:`networkx.DiGraph` following :mod:`topologies.schema`. Every hardware
figure is a keyword parameter; defaults are the figures of ``platforms.md``
(section 1 for ``abci``, ``dgx1_cluster`` and ``dgx2_cluster``).
"""

from __future__ import annotations

import networkx as nx

from . import fabrics
from .fabrics import check_count, uplinks_for
from .nodes import NODE_TYPES, abci_node, dgx1_node, dgx2_node, dgx_h100_node
from .schema import DUPLEX, TopologyError, validate

__all__ = ["abci", "dgx1_cluster", "dgx2_cluster", "fat_tree", "dgx_h100_cluster"]

#: The study's rank placement on DGX-1 nodes (a ring over double NVLinks).
DGX1_RANK_ORDER = "0,3,2,1,5,6,7,4"


def _duplex(value: str) -> str:
    if value not in DUPLEX:
        raise TopologyError(f"duplex must be one of {', '.join(DUPLEX)}, got {value!r}")
    return value


def _graph(name: str, description: str, gpus_per_node: int, group: int, **extra) -> nx.DiGraph:
    return nx.DiGraph(name=name, description=description, gpus_per_node=gpus_per_node,
                      default_group_size=group, **extra)


def abci(
    nodes: int = 2,
    *,
    nodes_per_rack: int = 34,
    fbbs_per_rack: int = 3,
    spines: int = 2,
    nvlink_bandwidth: float = 50e9,
    nvlink_units: int = 2,
    nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9,
    ib_latency: float = 2.6e-8,
    leaf_fbb_bandwidth: float = 75e9,
    fbb_spine_bandwidth: float = 50e9,
    leaf_bandwidth: float = 9e11,
    leaf_latency: float = 9e-8,
    fbb_bandwidth: float = 9e11,
    fbb_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13,
    spine_latency: float = 4e-7,
    duplex: str = "shared",
) -> nx.DiGraph:
    """ABCI: nodes of 4 x V100 (NVLink fully connected, 2 PLX), rack fabric with FBB and spines.

    Parameters
    ----------
    nodes : int
        Number of ABCI nodes (servers).
    nodes_per_rack : int
        34 on ABCI. A rack has 4 leaves ``r{r}/leaf0..3`` and
        `fbbs_per_rack` FBB switches ``r{r}/fbb{j}``; node ``2g`` of a rack
        plugs plx0 -> leaf0, plx1 -> leaf1, node ``2g+1`` plx0 -> leaf2,
        plx1 -> leaf3.
    fbbs_per_rack : int
    spines : int
        Spine switches ``spine{j}`` of the whole machine (always built, even
        for one rack, where no shortest route uses them).
    nvlink_bandwidth, nvlink_units, nvlink_latency : float, int, float
        One NVLink unit and the units per GPU pair (2 x 50e9 = 1e11).
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX.
    ib_bandwidth, ib_latency : float
        PLX <-> leaf (one EDR port); `ib_latency` is also the latency of the
        leaf <-> FBB and FBB <-> spine cables.
    leaf_fbb_bandwidth : float
        Every leaf to every FBB of its rack (6 x 12.5e9).
    fbb_spine_bandwidth : float
        Every FBB to each spine (4 x 12.5e9; about 1:3 between racks).
    leaf_bandwidth, leaf_latency, fbb_bandwidth, fbb_latency, spine_bandwidth, spine_latency : float
        Switch crossing figures.
    duplex : {"shared", "full"}

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node=4``, ``default_group_size=4``.

    Examples
    --------
    >>> from topologies import gpus
    >>> G = abci(2)
    >>> len(gpus(G)), G.graph["default_group_size"]
    (8, 4)
    >>> G.edges["n1/plx1", "r0/leaf3"]["bandwidth"]
    12500000000.0
    """
    check_count("nodes", nodes)
    _duplex(duplex)
    G = _graph("abci", f"ABCI: {nodes} node(s) x 4 V100, NVLink fully connected, "
               "2 PLX/EDR ports per node, racks of leaf + FBB switches, spines", 4, 4)
    ports = [abci_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_units=nvlink_units,
                       nvlink_latency=nvlink_latency, pcie_bandwidth=pcie_bandwidth,
                       pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.abci_racks(
        G, ports, nodes_per_rack=nodes_per_rack, fbbs_per_rack=fbbs_per_rack, spines=spines,
        port_bandwidth=ib_bandwidth, port_latency=ib_latency,
        leaf_fbb_bandwidth=leaf_fbb_bandwidth, fbb_spine_bandwidth=fbb_spine_bandwidth,
        uplink_latency=ib_latency, leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        fbb_bandwidth=fbb_bandwidth, fbb_latency=fbb_latency,
        spine_bandwidth=spine_bandwidth, spine_latency=spine_latency, duplex=duplex,
    )
    return validate(G)


def dgx1_cluster(
    nodes: int = 2,
    *,
    nodes_per_leaf: int = 6,
    nvlink_bandwidth: float = 50e9,
    nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9,
    ib_latency: float = 2.6e-8,
    uplink_bandwidth: float = 1.5e11,
    leaf_bandwidth: float = 9e11,
    leaf_latency: float = 9e-8,
    root_bandwidth: float = 1.625e13,
    root_latency: float = 4e-7,
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
        One NVLink unit; pairs and multiplicities as in ``platforms.md``
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
    _duplex(duplex)
    G = _graph("dgx1", f"DGX-1 cluster: {nodes} node(s) x 8 V100 (hybrid cube-mesh NVLink), "
               f"4 PLX/EDR ports per node, {nodes_per_leaf} nodes per leaf, one root",
               8, 4, rank_order=DGX1_RANK_ORDER)
    ports = [dgx1_node(G, s, nvlink_bandwidth=nvlink_bandwidth, nvlink_latency=nvlink_latency,
                       pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.leaf_root(
        G, ports, nodes_per_leaf=nodes_per_leaf, port_bandwidth=ib_bandwidth,
        port_latency=ib_latency, uplink_bandwidth=uplink_bandwidth, uplink_latency=ib_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        root_bandwidth=root_bandwidth, root_latency=root_latency, duplex=duplex,
    )
    return validate(G)


def dgx2_cluster(
    nodes: int = 2,
    *,
    nodes_per_leaf: int = 3,
    nvswitch_bandwidth: float = 50e9,
    nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 12.5e9,
    ib_latency: float = 2.6e-8,
    uplink_bandwidth: float = 1.5e11,
    leaf_bandwidth: float = 9e11,
    leaf_latency: float = 9e-8,
    root_bandwidth: float = 1.625e13,
    root_latency: float = 4e-7,
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
    _duplex(duplex)
    G = _graph("dgx2", f"DGX-2 cluster: {nodes} node(s) x 16 V100 on NVSwitch, 8 PLX/EDR "
               f"ports per node, {nodes_per_leaf} nodes per leaf, one root", 16, 4)
    ports = [dgx2_node(G, s, nvswitch_bandwidth=nvswitch_bandwidth,
                       nvswitch_latency=nvswitch_latency, pcie_bandwidth=pcie_bandwidth,
                       pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.leaf_root(
        G, ports, nodes_per_leaf=nodes_per_leaf, port_bandwidth=ib_bandwidth,
        port_latency=ib_latency, uplink_bandwidth=uplink_bandwidth, uplink_latency=ib_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        root_bandwidth=root_bandwidth, root_latency=root_latency, duplex=duplex,
    )
    return validate(G)


def fat_tree(
    hosts: int = 16,
    *,
    hosts_per_leaf: int = 16,
    oversubscription: float = 1.0,
    levels: int = 2,
    leaves_per_pod: int = 8,
    spines: int = 0,
    host: str = "gpu",
    link_bandwidth: float = 12.5e9,
    link_latency: float = 2.6e-8,
    pcie_bandwidth: float = 0.0,
    pcie_latency: float = 7.5e-6,
    leaf_bandwidth: float = 9e11,
    leaf_latency: float = 9e-8,
    agg_bandwidth: float = 9e11,
    agg_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13,
    spine_latency: float = 4e-7,
    duplex: str = "full",
) -> nx.DiGraph:
    """Parametric leaf-spine (``levels=2``) or 3-level pod fat-tree (``levels=3``).

    Host ``h`` (a machine of type `host`) plugs all its ports into leaf
    ``h // hosts_per_leaf``. A leaf with ``d`` host ports has
    ``max(1, round(d / oversubscription))`` uplinks of `link_bandwidth`, so
    the host-facing / uplink bandwidth ratio measured at every leaf equals
    `oversubscription` whenever ``d / oversubscription`` is an integer; above
    the leaves the tree is at full bisection. See
    :func:`topologies.fabrics.leaf_spine` for the switch layout (``spine{j}``,
    or ``p{p}/leaf{i}``, ``p{p}/agg{j}``, ``core{k}``).

    Parameters
    ----------
    hosts : int
        Number of host machines.
    hosts_per_leaf : int
    oversubscription : float
        Leaf host-facing : uplink bandwidth (1 = full bisection).
    levels : {2, 3}
    leaves_per_pod : int
        Leaves per pod (``levels=3``).
    spines : int
        Number of spines (``levels=2``); 0 = one per uplink of a full leaf.
    host : {"gpu", "abci", "dgx1", "dgx2", "dgx-h100"}
        ``"gpu"``: single-GPU host (GPU -> NIC over PCIe, NIC -> leaf); the
        others are the node types of the presets, all ports (PLX or NICs)
        attached to the host's leaf.
    link_bandwidth, link_latency : float
        Every network cable (host ports and switch uplinks; EDR by default).
    pcie_bandwidth, pcie_latency : float
        PCIe links inside hosts; ``pcie_bandwidth=0`` keeps the host type's
        own figure (16e9, 64e9 for ``dgx-h100``).
    leaf_bandwidth, leaf_latency, agg_bandwidth, agg_latency, spine_bandwidth, spine_latency : float
        Switch crossing figures (spine figures also for core switches).
    duplex : {"shared", "full"}
        Applies to every cable, inside hosts too.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node`` of the host type; ``default_group_size`` 1 for
        ``"gpu"``, 4 for the study's node types, 8 for ``"dgx-h100"``.

    Examples
    --------
    >>> from topologies import gpus
    >>> G = fat_tree(32, hosts_per_leaf=8, oversubscription=2.0)
    >>> len(gpus(G)), G.out_degree("leaf0")
    (32, 12)
    >>> sorted(n for n in G if n.startswith("spine"))
    ['spine0', 'spine1', 'spine2', 'spine3']
    """
    check_count("hosts", hosts)
    check_count("hosts_per_leaf", hosts_per_leaf)
    _duplex(duplex)
    uplinks_for(1, oversubscription)  # checks the ratio
    if levels not in (2, 3):
        raise TopologyError(f"levels must be 2 or 3, got {levels!r}")
    if host not in NODE_TYPES:
        raise TopologyError(f"unknown host {host!r} (allowed: {', '.join(NODE_TYPES)})")
    node_builder, per_node, group = NODE_TYPES[host]
    kw = {"pcie_latency": pcie_latency, "duplex": duplex}
    if pcie_bandwidth:
        kw["pcie_bandwidth"] = pcie_bandwidth
    extra = {"rank_order": DGX1_RANK_ORDER} if host == "dgx1" else {}
    shape = "leaf-spine" if levels == 2 else "3-level fat-tree"
    G = _graph("fat-tree", f"{shape}: {hosts} host(s) of type {host!r}, {hosts_per_leaf} per "
               f"leaf, oversubscription {oversubscription:g}", per_node, group, **extra)
    ports = [node_builder(G, s, **kw) for s in range(hosts)]
    leaf_ports = [[p for server in ports[i:i + hosts_per_leaf] for p in server]
                  for i in range(0, hosts, hosts_per_leaf)]
    fabrics.leaf_spine(
        G, leaf_ports, oversubscription=oversubscription, levels=levels, spines=spines,
        leaves_per_pod=leaves_per_pod, link_bandwidth=link_bandwidth, link_latency=link_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency, agg_bandwidth=agg_bandwidth,
        agg_latency=agg_latency, spine_bandwidth=spine_bandwidth, spine_latency=spine_latency,
        duplex=duplex,
    )
    return validate(G)


def dgx_h100_cluster(
    nodes: int = 2,
    *,
    nodes_per_su: int = 32,
    spines: int = 0,
    nvswitch_bandwidth: float = 450e9,
    nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 64e9,
    pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 50e9,
    ib_latency: float = 2.6e-8,
    leaf_bandwidth: float = 6.4e12,
    leaf_latency: float = 9e-8,
    spine_bandwidth: float = 6.4e12,
    spine_latency: float = 9e-8,
    duplex: str = "full",
) -> nx.DiGraph:
    """DGX H100 cluster: 8 x H100 on NVSwitch, one PCIe 5.0 switch + NDR NIC per GPU, rail-optimized.

    NIC ``i`` of every node of a scalable unit (SU) of `nodes_per_su` nodes
    goes to rail leaf ``su{s}/leaf{i}``; leaves reach spines ``spine{j}`` at
    full bisection (one uplink per down port).

    Parameters
    ----------
    nodes : int
        Number of DGX H100 nodes.
    nodes_per_su : int
    spines : int
        0 = as many spines as uplinks of a full leaf.
    nvswitch_bandwidth, nvswitch_latency : float
        GPU <-> ``n{s}/nvswitch`` (450e9 per direction).
    pcie_bandwidth, pcie_latency : float
        GPU <-> PCIe switch <-> NIC (PCIe 5.0 x16).
    ib_bandwidth, ib_latency : float
        Every network cable (NDR).
    leaf_bandwidth, leaf_latency, spine_bandwidth, spine_latency : float
        Switch crossing figures (64-port NDR switches: 64 x 50e9 x 2).
    duplex : {"shared", "full"}

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node=8``, ``default_group_size=8``.

    Examples
    --------
    >>> G = dgx_h100_cluster(2)
    >>> sorted(G.successors("su0/leaf3"))
    ['n0/nic3', 'n1/nic3', 'spine0', 'spine1']
    >>> G.edges["n0/nic3", "su0/leaf3"]["duplex"]
    'full'
    """
    check_count("nodes", nodes)
    _duplex(duplex)
    G = _graph("dgx-h100", f"DGX H100 cluster: {nodes} node(s) x 8 H100 on NVSwitch, 8 NDR "
               f"NICs per node, rail-optimized ({nodes_per_su} nodes per SU), full bisection",
               8, 8)
    ports = [dgx_h100_node(G, s, nvswitch_bandwidth=nvswitch_bandwidth,
                           nvswitch_latency=nvswitch_latency, pcie_bandwidth=pcie_bandwidth,
                           pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.rail_optimized(
        G, ports, nodes_per_su=nodes_per_su, spines=spines, link_bandwidth=ib_bandwidth,
        link_latency=ib_latency, leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        spine_bandwidth=spine_bandwidth, spine_latency=spine_latency, duplex=duplex,
    )
    return validate(G)
