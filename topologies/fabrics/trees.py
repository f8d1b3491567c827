"""Fat-trees: leaf-spine or 3-level pods (:func:`leaf_spine`), and rails on it.

How :func:`leaf_spine` builds a tree over given leaves: leaf ``i`` gets the
ports ``leaf_ports[i]`` (one cable of ``link_bandwidth`` each) and ``U_i =
uplinks_for(len(leaf_ports[i]), oversubscription)`` uplink cables of the same
bandwidth, so its host-facing / uplink bandwidth ratio is the
oversubscription (exactly when it divides evenly).

* ``levels=2``: ``S = spines or max(U_i)`` switches ``spine{j}``; uplink
  ``j`` of every leaf goes to ``spine{j % S}`` (parallel cables folded).
* ``levels=3``: leaves form pods of ``leaves_per_pod``; pod ``p`` has
  ``A = max(U_i)`` aggregation switches ``p{p}/agg{j}`` (uplink ``j`` of a
  leaf to agg ``j % A``). Above the pods the tree is at full bisection:
  aggregation switch ``j`` of every pod has as many uplinks as downlinks,
  spread over its own group of ``M`` core switches ``core{j*M + m}``
  (``M`` = the largest downlink count of an aggregation switch).

Upper levels are always built, even for a single leaf (or pod).
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from ..schema import TopologyError
from .parts import add_switch, attach_ports, check_count, connect_up, uplinks_for

__all__ = ["leaf_spine", "rail_optimized"]


def leaf_spine(
    G: nx.DiGraph, leaf_ports: Sequence[Sequence[str]], *, leaf_ids: Sequence[str] | None = None,
    oversubscription: float = 1.0, levels: int = 2, spines: int = 0, leaves_per_pod: int = 8,
    link_bandwidth: float = 12.5e9, link_latency: float = 2.6e-8,
    leaf_bandwidth: float = 9e11, leaf_latency: float = 9e-8,
    agg_bandwidth: float = 9e11, agg_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13, spine_latency: float = 4e-7,
    duplex: str = "full", uplink_latency: float | None = None,
) -> list[str]:
    """Leaf-spine (``levels=2``) or 3-level pod fat-tree (``levels=3``) over given leaves.

    Parameters
    ----------
    leaf_ports : sequence of sequence of str
        The host ports of each leaf (the layout: :mod:`topologies.fabrics.trees`).
    leaf_ids : sequence of str, optional
        Leaf node ids; default ``leaf{i}``, or ``p{p}/leaf{i}`` with ``levels=3``.
    oversubscription, levels, spines, leaves_per_pod : float, {2, 3}, int, int
        Host-facing to uplink bandwidth ratio at the leaves; the tree's levels;
        spines (``levels=2`` only, 0 = as many as uplinks per full leaf);
        leaves per pod (``levels=3`` only).
    link_bandwidth, link_latency, uplink_latency : float
        Figures of every cable (host ports and switch uplinks); the
        switch-to-switch cables' latency, default `link_latency`.
    leaf_bandwidth, leaf_latency, agg_bandwidth, agg_latency, spine_bandwidth, spine_latency : float
        Crossing figures; the spine figures apply to core switches of a
        3-level tree.
    duplex : {"shared", "full"}

    Returns
    -------
    list of str
        The leaf ids.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> leaf_spine(G, [["a", "b"], ["c", "d"]], oversubscription=2.0)
    ['leaf0', 'leaf1']
    >>> sorted(G.successors("spine0"))
    ['leaf0', 'leaf1']
    """
    _check_shape(levels, spines, leaves_per_pod)
    ids = _default_leaf_ids(len(leaf_ports), levels, leaves_per_pod) if leaf_ids is None else leaf_ids
    leaves = [add_switch(G, sid, "leaf", leaf_bandwidth, leaf_latency) for sid in ids]
    for leaf, ports in zip(leaves, leaf_ports):
        attach_ports(G, ports, leaf, link_bandwidth, link_latency, duplex)
    up = [uplinks_for(len(p), oversubscription) for p in leaf_ports]
    up_lat = link_latency if uplink_latency is None else uplink_latency
    if leaves and levels == 2:
        spine_ids = [add_switch(G, f"spine{j}", "spine", spine_bandwidth, spine_latency)
                     for j in range(spines or max(up))]
        connect_up(G, leaves, spine_ids, up, link_bandwidth, up_lat, duplex)
    elif leaves:
        _pods_and_cores(G, leaves, up, leaves_per_pod=leaves_per_pod, bandwidth=link_bandwidth,
                        latency=up_lat, agg=(agg_bandwidth, agg_latency),
                        core=(spine_bandwidth, spine_latency), duplex=duplex)
    return leaves


def _check_shape(levels, spines, leaves_per_pod) -> None:
    if levels not in (2, 3):
        raise TopologyError(f"levels must be 2 or 3, got {levels!r}")
    check_count("spines", spines, 0)
    if levels == 3 and spines:
        raise TopologyError("spines applies to levels=2 only (a 3-level tree sizes its core itself)")
    check_count("leaves_per_pod", leaves_per_pod)


def _default_leaf_ids(n, levels, leaves_per_pod) -> list[str]:
    """``leaf{i}`` (``levels=2``) or ``p{p}/leaf{i}`` (``levels=3``, ``i`` within the pod)."""
    if levels == 2:
        return [f"leaf{i}" for i in range(n)]
    return [f"p{i // leaves_per_pod}/leaf{i % leaves_per_pod}" for i in range(n)]


def _pods_and_cores(G, leaves, up, *, leaves_per_pod, bandwidth, latency, agg, core, duplex):
    """The upper levels of a 3-level tree: ``max(up)`` aggregation switches per pod, each with
    as many uplinks as downlinks over its own group of core switches (full bisection)."""
    width = max(up)
    pods = []
    for p, start in enumerate(range(0, len(up), leaves_per_pod)):
        aggs = [add_switch(G, f"p{p}/agg{j}", "agg", *agg) for j in range(width)]
        down = connect_up(G, leaves[start:start + leaves_per_pod], aggs,
                          up[start:start + leaves_per_pod], bandwidth, latency, duplex)
        pods.append((aggs, down))
    m = max(max(down.values()) for _, down in pods)
    cores = [add_switch(G, f"core{i}", "core", *core) for i in range(width * m)]
    for aggs, down in pods:
        for j, agg in enumerate(aggs):
            if down[agg]:
                connect_up(G, [agg], cores[j * m:(j + 1) * m], down[agg], bandwidth, latency, duplex)


def rail_optimized(
    G: nx.DiGraph,
    server_ports: Sequence[Sequence[str]],
    *,
    nodes_per_su: int = 32,
    spines: int = 0,
    link_bandwidth: float = 50e9,
    link_latency: float = 2.6e-8,
    leaf_bandwidth: float = 6.4e12,
    leaf_latency: float = 9e-8,
    spine_bandwidth: float = 6.4e12,
    spine_latency: float = 9e-8,
    duplex: str = "full",
    oversubscription: float = 1.0,
    uplink_latency: float | None = None,
) -> list[str]:
    """Rail-optimized fabric: port ``i`` of every server of a scalable unit on rail leaf ``i``.

    Servers are grouped in scalable units (SU) of `nodes_per_su`; leaf
    ``su{s}/leaf{i}`` takes port ``i`` of every server of SU ``s``. Leaves go
    to spines through :func:`leaf_spine` (`oversubscription` 1 = full
    bisection; `uplink_latency` defaults to `link_latency`).

    Returns
    -------
    list of str
        The leaf ids.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> rail_optimized(G, [["a0", "a1"], ["b0", "b1"]])
    ['su0/leaf0', 'su0/leaf1']
    >>> sorted(G.successors("su0/leaf1"))
    ['a1', 'b1', 'spine0', 'spine1']
    """
    check_count("nodes_per_su", nodes_per_su)
    if not server_ports:
        return []
    rails = len(server_ports[0])
    ports, ids = [], []
    for s, start in enumerate(range(0, len(server_ports), nodes_per_su)):
        unit = server_ports[start:start + nodes_per_su]
        for i in range(rails):
            ports.append([p[i] for p in unit])
            ids.append(f"su{s}/leaf{i}")
    return leaf_spine(
        G, ports, leaf_ids=ids, oversubscription=oversubscription, levels=2, spines=spines,
        link_bandwidth=link_bandwidth, link_latency=link_latency,
        leaf_bandwidth=leaf_bandwidth, leaf_latency=leaf_latency,
        spine_bandwidth=spine_bandwidth, spine_latency=spine_latency, duplex=duplex,
        uplink_latency=uplink_latency,
    )
