"""Parametric fabrics: fat-trees of any host type, and rail-optimized DGX H100 clusters.

Unlike the study's models (:mod:`topologies.builders.study`) these are free
in their shape; unlike the hardware presets (:mod:`topologies.hardware`) their
figures are the study's conventions unless given.
"""

from __future__ import annotations

import networkx as nx

from .. import fabrics
from ..fabrics import check_count, uplinks_for
from ..nodes import NODE_TYPES, dgx_h100_node
from ..schema import TopologyError, validate
from .study import DGX1_RANK_ORDER, check_duplex, study_graph

__all__ = ["fat_tree", "dgx_h100_cluster"]


def _check_options(hosts, hosts_per_leaf, duplex, oversubscription, levels, host) -> None:
    """The options of :func:`fat_tree`, in a fixed order (the first bad one is reported)."""
    check_count("hosts", hosts)
    check_count("hosts_per_leaf", hosts_per_leaf)
    check_duplex(duplex)
    uplinks_for(1, oversubscription)  # checks the ratio
    if levels not in (2, 3):
        raise TopologyError(f"levels must be 2 or 3, got {levels!r}")
    if host not in NODE_TYPES:
        raise TopologyError(f"unknown host {host!r} (allowed: {', '.join(NODE_TYPES)})")


def _fat_tree_graph(host, hosts, hosts_per_leaf, levels, oversubscription) -> nx.DiGraph:
    shape = "leaf-spine" if levels == 2 else "3-level fat-tree"
    _, per_node, group = NODE_TYPES[host]
    extra = {"rank_order": DGX1_RANK_ORDER} if host == "dgx1" else {}
    return study_graph("fat-tree", f"{shape}: {hosts} host(s) of type {host!r}, {hosts_per_leaf} "
                       f"per leaf, oversubscription {oversubscription:g}", per_node, group, **extra)


def _hosts(G, host, hosts, hosts_per_leaf, pcie_bandwidth, pcie_latency, duplex):
    """Add `hosts` machines of type `host`; return the ports of each leaf."""
    kw = {"pcie_latency": pcie_latency, "duplex": duplex}
    if pcie_bandwidth:
        kw["pcie_bandwidth"] = pcie_bandwidth
    ports = [NODE_TYPES[host][0](G, s, **kw) for s in range(hosts)]
    return [[p for server in ports[i:i + hosts_per_leaf] for p in server]
            for i in range(0, hosts, hosts_per_leaf)]


def fat_tree(
    hosts: int = 16, *,
    hosts_per_leaf: int = 16, oversubscription: float = 1.0, levels: int = 2,
    leaves_per_pod: int = 8, spines: int = 0, host: str = "gpu",
    link_bandwidth: float = 12.5e9, link_latency: float = 2.6e-8,
    pcie_bandwidth: float = 0.0, pcie_latency: float = 7.5e-6,
    leaf_bandwidth: float = 9e11, leaf_latency: float = 9e-8,
    agg_bandwidth: float = 9e11, agg_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13, spine_latency: float = 4e-7,
    duplex: str = "full",
) -> nx.DiGraph:
    """Parametric leaf-spine (``levels=2``) or 3-level pod fat-tree (``levels=3``).

    Parameters
    ----------
    hosts, hosts_per_leaf : int
        Host machines and hosts per leaf: host ``h`` plugs all its ports into
        leaf ``h // hosts_per_leaf``; the tree above the leaves is laid out as
        :mod:`topologies.fabrics.trees` says (``spine{j}``, or
        ``p{p}/leaf{i}``, ``p{p}/agg{j}``, ``core{k}``).
    oversubscription, levels, leaves_per_pod, spines : float, {2, 3}, int, int
        Leaf host-facing : uplink bandwidth (1 = full bisection); the tree's
        levels; leaves per pod (``levels=3``); spines (``levels=2``, 0 = one
        per uplink of a full leaf).
    host : {"gpu", "abci", "dgx1", "dgx2", "dgx-h100"}
        ``"gpu"``: single-GPU host (GPU -> NIC over PCIe, NIC -> leaf); the
        others: the node types of the presets, all ports (PLX or NICs) on the leaf.
    link_bandwidth, link_latency, pcie_bandwidth, pcie_latency : float
        Every network cable (host ports and switch uplinks; EDR by default);
        PCIe links inside hosts, ``pcie_bandwidth=0`` keeping the host type's
        own figure (16e9, 64e9 for ``dgx-h100``).
    leaf_bandwidth, leaf_latency, agg_bandwidth, agg_latency, spine_bandwidth, spine_latency : float
        Switch crossing figures (spine figures also for core switches).
    duplex : {"shared", "full"}
        Applies to every cable, inside hosts too.

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node`` of the host type, ``default_group_size`` 1 (``"gpu"``),
        8 (``"dgx-h100"``) or 4 (the study's node types).

    Examples
    --------
    >>> G = fat_tree(32, hosts_per_leaf=8, oversubscription=2.0)
    >>> sum(d["kind"] == "gpu" for _, d in G.nodes(data=True)), G.out_degree("leaf0")
    (32, 12)
    >>> sorted(n for n in G if n.startswith("spine"))
    ['spine0', 'spine1', 'spine2', 'spine3']
    """
    _check_options(hosts, hosts_per_leaf, duplex, oversubscription, levels, host)
    G = _fat_tree_graph(host, hosts, hosts_per_leaf, levels, oversubscription)
    leaf_ports = _hosts(G, host, hosts, hosts_per_leaf, pcie_bandwidth, pcie_latency, duplex)
    fabrics.leaf_spine(
        G, leaf_ports, oversubscription=oversubscription, levels=levels, spines=spines,
        leaves_per_pod=leaves_per_pod, link_bandwidth=link_bandwidth, link_latency=link_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency, agg_bandwidth=agg_bandwidth,
        agg_latency=agg_latency, spine_bandwidth=spine_bandwidth, spine_latency=spine_latency,
        duplex=duplex)
    return validate(G)


def dgx_h100_cluster(
    nodes: int = 2, *,
    nodes_per_su: int = 32, spines: int = 0,
    nvswitch_bandwidth: float = 450e9, nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 64e9, pcie_latency: float = 7.5e-6,
    ib_bandwidth: float = 50e9, ib_latency: float = 2.6e-8,
    leaf_bandwidth: float = 6.4e12, leaf_latency: float = 9e-8,
    spine_bandwidth: float = 6.4e12, spine_latency: float = 9e-8,
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
    check_duplex(duplex)
    G = study_graph("dgx-h100", f"DGX H100 cluster: {nodes} node(s) x 8 H100 on NVSwitch, 8 NDR "
               f"NICs per node, rail-optimized ({nodes_per_su} nodes per SU), full bisection",
               8, 8)
    ports = [dgx_h100_node(G, s, nvswitch_bandwidth=nvswitch_bandwidth,
                           nvswitch_latency=nvswitch_latency, pcie_bandwidth=pcie_bandwidth,
                           pcie_latency=pcie_latency, duplex=duplex)
             for s in range(nodes)]
    fabrics.rail_optimized(
        G, ports, nodes_per_su=nodes_per_su, spines=spines, link_bandwidth=ib_bandwidth,
        link_latency=ib_latency, leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        spine_bandwidth=spine_bandwidth, spine_latency=spine_latency, duplex=duplex)
    return validate(G)
