"""Fabric builders: switches and cables that connect the uplink ports of servers.

A fabric builder takes the port lists returned by the node builders of
:mod:`topologies.nodes` (one list per server, or one list per leaf) and adds
switches (``kind="switch"``, with a ``level`` and optional crossing
``bandwidth``/``latency``) and the cables between them. Multiple parallel
cables between the same two switches are folded into one cable whose
bandwidth is the sum.

All cables added here are ``link_type="infiniband"``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import networkx as nx

from .nodes import add_cable
from .schema import TopologyError

__all__ = [
    "add_switch",
    "attach_ports",
    "connect_up",
    "leaf_root",
    "abci_racks",
    "leaf_spine",
    "rail_optimized",
    "uplinks_for",
    "check_count",
]

IB = "infiniband"


def check_count(name: str, value: object, minimum: int = 1) -> int:
    """Return `value` if it is an int >= `minimum`, else raise TopologyError naming `name`.

    Examples
    --------
    >>> check_count("nodes", 3)
    3
    >>> check_count("nodes", 0)
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: nodes must be an int >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TopologyError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def add_switch(
    G: nx.DiGraph,
    sid: str,
    level: str,
    bandwidth: float | None = None,
    latency: float | None = None,
) -> str:
    """Add a network switch with crossing figures; return its id.

    Parameters
    ----------
    G : networkx.DiGraph
    sid : str
        Node id, e.g. ``"r0/leaf2"``.
    level : str
        Informational level (``"leaf"``, ``"fbb"``, ``"agg"``, ``"spine"``,
        ``"core"``, ``"root"``).
    bandwidth, latency : float, optional
        Crossing capacity (bytes/s) and latency (s); omitted when None.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> add_switch(G, "leaf0", "leaf", 9e11, 9e-8)
    'leaf0'
    >>> G.nodes["leaf0"]
    {'kind': 'switch', 'level': 'leaf', 'bandwidth': 900000000000.0, 'latency': 9e-08}
    """
    attrs: dict[str, object] = {"kind": "switch", "level": level}
    if bandwidth is not None:
        attrs["bandwidth"] = float(bandwidth)
    if latency is not None:
        attrs["latency"] = float(latency)
    G.add_node(sid, **attrs)
    return sid


def attach_ports(
    G: nx.DiGraph,
    ports: Sequence[str],
    switch: str,
    bandwidth: float,
    latency: float,
    duplex: str,
) -> None:
    """Cable every port of `ports` to `switch` (one cable each).

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> attach_ports(G, ["n0/plx0", "n1/plx0"], "leaf0", 12.5e9, 2.6e-8, "shared")
    >>> G.in_degree("leaf0")
    2
    """
    for p in ports:
        add_cable(G, p, switch, bandwidth, latency, IB, duplex)


def connect_up(
    G: nx.DiGraph,
    lower: Sequence[str],
    upper: Sequence[str],
    cables: int | Sequence[int],
    bandwidth: float,
    latency: float,
    duplex: str,
) -> Counter[str]:
    """Connect each lower switch to the upper switches with `cables` cables each.

    Cable ``j`` of a lower switch goes to ``upper[j % len(upper)]``; parallel
    cables to the same upper switch are folded into one cable of
    ``k * bandwidth``.

    Parameters
    ----------
    G : networkx.DiGraph
    lower, upper : sequence of str
        Switch ids (must already be in `G`).
    cables : int or sequence of int
        Number of cables per lower switch (one value for all, or one each).
    bandwidth, latency : float
        Figures of ONE cable.
    duplex : {"shared", "full"}

    Returns
    -------
    collections.Counter
        Number of cables that arrive at each upper switch.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> down = connect_up(G, ["leaf0"], ["spine0", "spine1"], 3, 12.5e9, 0.0, "full")
    >>> G.edges["leaf0", "spine0"]["bandwidth"], G.edges["leaf0", "spine1"]["bandwidth"]
    (25000000000.0, 12500000000.0)
    >>> dict(down)
    {'spine0': 2, 'spine1': 1}
    """
    if not upper:
        raise TopologyError("connect_up: no upper switch to connect to")
    counts = [cables] * len(lower) if isinstance(cables, int) else list(cables)
    arriving: Counter[str] = Counter()
    n_up = len(upper)
    for sw, k in zip(lower, counts):
        base, extra = divmod(k, n_up)
        for j in range(min(k, n_up)):
            mult = base + (1 if j < extra else 0)
            add_cable(G, sw, upper[j], bandwidth * mult, latency, IB, duplex)
            arriving[upper[j]] += mult
    return arriving


def uplinks_for(down_ports: int, oversubscription: float) -> int:
    """Uplink count for a leaf with `down_ports` host ports: ``round(down / ratio)``, at least 1.

    Examples
    --------
    >>> uplinks_for(16, 1.0), uplinks_for(24, 3.0), uplinks_for(16, 3.0), uplinks_for(1, 4.0)
    (16, 8, 5, 1)
    """
    if (isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float))
            or not oversubscription > 0 or not math.isfinite(oversubscription)):
        raise TopologyError(f"oversubscription must be a finite number > 0, got {oversubscription!r}")
    return max(1, math.floor(down_ports / oversubscription + 0.5))


def leaf_root(
    G: nx.DiGraph,
    server_ports: Sequence[Sequence[str]],
    *,
    nodes_per_leaf: int,
    port_bandwidth: float,
    port_latency: float,
    uplink_bandwidth: float,
    uplink_latency: float,
    leaf_bandwidth: float,
    leaf_latency: float,
    root_bandwidth: float,
    root_latency: float,
    duplex: str,
) -> list[str]:
    """Two-level fabric of the study's DGX clusters: leaves ``leaf{i}`` under one ``root``.

    Servers ``i*nodes_per_leaf .. (i+1)*nodes_per_leaf-1`` plug all their
    ports into ``leaf{i}``; every leaf has one cable of `uplink_bandwidth`
    (multiplicity already folded, e.g. 12 x 12.5e9) to ``root``. The root is
    always present, even with a single leaf.

    Returns
    -------
    list of str
        The leaf ids.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> leaf_root(G, [["a"], ["b"], ["c"]], nodes_per_leaf=2, port_bandwidth=1.0,
    ...           port_latency=0.0, uplink_bandwidth=2.0, uplink_latency=0.0,
    ...           leaf_bandwidth=9e11, leaf_latency=9e-8, root_bandwidth=1.625e13,
    ...           root_latency=4e-7, duplex="shared")
    ['leaf0', 'leaf1']
    >>> sorted(G.successors("root"))
    ['leaf0', 'leaf1']
    """
    check_count("nodes_per_leaf", nodes_per_leaf)
    root = add_switch(G, "root", "root", root_bandwidth, root_latency)
    leaves = []
    for i in range(0, len(server_ports), nodes_per_leaf):
        leaf = add_switch(G, f"leaf{len(leaves)}", "leaf", leaf_bandwidth, leaf_latency)
        for ports in server_ports[i:i + nodes_per_leaf]:
            attach_ports(G, ports, leaf, port_bandwidth, port_latency, duplex)
        leaves.append(leaf)
    connect_up(G, leaves, [root], 1, uplink_bandwidth, uplink_latency, duplex)
    return leaves


def abci_racks(
    G: nx.DiGraph,
    server_ports: Sequence[Sequence[str]],
    *,
    nodes_per_rack: int,
    fbbs_per_rack: int,
    spines: int,
    port_bandwidth: float,
    port_latency: float,
    leaf_fbb_bandwidth: float,
    fbb_spine_bandwidth: float,
    uplink_latency: float,
    leaf_bandwidth: float,
    leaf_latency: float,
    fbb_bandwidth: float,
    fbb_latency: float,
    spine_bandwidth: float,
    spine_latency: float,
    duplex: str,
) -> list[str]:
    """ABCI fabric: racks of leaves and FBB switches under machine-wide spines.

    Server ``n`` is in rack ``r = n // nodes_per_rack``; with ``i = n %
    nodes_per_rack`` and ``P`` ports per server, port ``k`` goes to
    ``r{r}/leaf{(i % 2) * P + k}`` (for 2 ports: node 2g -> leaf0, leaf1; node
    2g+1 -> leaf2, leaf3), so a rack has ``2P`` leaves. Every leaf has one cable
    of `leaf_fbb_bandwidth` to every FBB of its rack; every FBB one cable of
    `fbb_spine_bandwidth` to every spine. Spines ``spine{j}`` are always
    present, even with a single rack.

    Returns
    -------
    list of str
        The leaf ids.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> leaves = abci_racks(G, [["a0", "a1"], ["b0", "b1"]], nodes_per_rack=34,
    ...     fbbs_per_rack=3, spines=2, port_bandwidth=12.5e9, port_latency=2.6e-8,
    ...     leaf_fbb_bandwidth=75e9, fbb_spine_bandwidth=50e9, uplink_latency=2.6e-8,
    ...     leaf_bandwidth=9e11, leaf_latency=9e-8, fbb_bandwidth=9e11,
    ...     fbb_latency=9e-8, spine_bandwidth=1.625e13, spine_latency=4e-7,
    ...     duplex="shared")
    >>> [next(iter(G.successors(p))) for p in ("a0", "a1", "b0", "b1")]
    ['r0/leaf0', 'r0/leaf1', 'r0/leaf2', 'r0/leaf3']
    """
    check_count("nodes_per_rack", nodes_per_rack)
    check_count("fbbs_per_rack", fbbs_per_rack)
    check_count("spines", spines)
    if not server_ports:
        return []
    per_server = len(server_ports[0])
    spine_ids = [add_switch(G, f"spine{j}", "spine", spine_bandwidth, spine_latency)
                 for j in range(spines)]
    all_leaves: list[str] = []
    n_racks = -(-len(server_ports) // nodes_per_rack)
    for r in range(n_racks):
        leaves = [add_switch(G, f"r{r}/leaf{j}", "leaf", leaf_bandwidth, leaf_latency)
                  for j in range(2 * per_server)]
        fbbs = [add_switch(G, f"r{r}/fbb{j}", "fbb", fbb_bandwidth, fbb_latency)
                for j in range(fbbs_per_rack)]
        for i, ports in enumerate(server_ports[r * nodes_per_rack:(r + 1) * nodes_per_rack]):
            for k, port in enumerate(ports):
                attach_ports(G, [port], leaves[(i % 2) * per_server + k],
                             port_bandwidth, port_latency, duplex)
        connect_up(G, leaves, fbbs, len(fbbs), leaf_fbb_bandwidth, uplink_latency, duplex)
        connect_up(G, fbbs, spine_ids, len(spine_ids), fbb_spine_bandwidth, uplink_latency, duplex)
        all_leaves += leaves
    return all_leaves


def leaf_spine(
    G: nx.DiGraph,
    leaf_ports: Sequence[Sequence[str]],
    *,
    leaf_ids: Sequence[str] | None = None,
    oversubscription: float = 1.0,
    levels: int = 2,
    spines: int = 0,
    leaves_per_pod: int = 8,
    link_bandwidth: float = 12.5e9,
    link_latency: float = 2.6e-8,
    leaf_bandwidth: float = 9e11,
    leaf_latency: float = 9e-8,
    agg_bandwidth: float = 9e11,
    agg_latency: float = 9e-8,
    spine_bandwidth: float = 1.625e13,
    spine_latency: float = 4e-7,
    duplex: str = "full",
    uplink_latency: float | None = None,
) -> list[str]:
    """Leaf-spine (``levels=2``) or 3-level pod fat-tree (``levels=3``) over given leaves.

    Leaf ``i`` gets the ports ``leaf_ports[i]`` (one cable of `link_bandwidth`
    each) and ``U_i = uplinks_for(len(leaf_ports[i]), oversubscription)``
    uplink cables of the same bandwidth, so its host-facing / uplink bandwidth
    ratio is the oversubscription (exactly when it divides evenly).

    * ``levels=2``: ``S = spines or max(U_i)`` switches ``spine{j}``; uplink
      ``j`` of every leaf goes to ``spine{j % S}`` (parallel cables folded).
    * ``levels=3``: leaves form pods of `leaves_per_pod`; pod ``p`` has
      ``A = max(U_i)`` aggregation switches ``p{p}/agg{j}`` (uplink ``j`` of a
      leaf to agg ``j % A``). Above the pods the tree is at full bisection:
      aggregation switch ``j`` of every pod has as many uplinks as downlinks,
      spread over its own group of ``M`` core switches ``core{j*M + m}``
      (``M`` = the largest downlink count of an aggregation switch).

    Upper levels are always built, even for a single leaf (or pod).

    Parameters
    ----------
    G : networkx.DiGraph
    leaf_ports : sequence of sequence of str
        The host ports of each leaf.
    leaf_ids : sequence of str, optional
        Leaf node ids; default ``leaf{i}`` (``levels=2``) or
        ``p{p}/leaf{i}`` (``levels=3``, ``i`` within the pod).
    oversubscription : float
        Host-facing to uplink bandwidth ratio at the leaves.
    levels : {2, 3}
    spines : int
        ``levels=2`` only; 0 = as many spines as uplinks per full leaf.
    leaves_per_pod : int
        ``levels=3`` only.
    link_bandwidth, link_latency : float
        Figures of every cable (host ports and switch uplinks).
    leaf_bandwidth, leaf_latency, agg_bandwidth, agg_latency, spine_bandwidth, spine_latency : float
        Crossing figures; the spine figures apply to core switches of a
        3-level tree.
    duplex : {"shared", "full"}
    uplink_latency : float, optional
        Latency of the switch-to-switch cables; default `link_latency`.

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
    if levels not in (2, 3):
        raise TopologyError(f"levels must be 2 or 3, got {levels!r}")
    check_count("spines", spines, 0)
    if levels == 3 and spines:
        raise TopologyError("spines applies to levels=2 only (a 3-level tree sizes its core itself)")
    check_count("leaves_per_pod", leaves_per_pod)
    n = len(leaf_ports)
    if leaf_ids is None:
        if levels == 2:
            leaf_ids = [f"leaf{i}" for i in range(n)]
        else:
            leaf_ids = [f"p{i // leaves_per_pod}/leaf{i % leaves_per_pod}" for i in range(n)]
    leaves = [add_switch(G, sid, "leaf", leaf_bandwidth, leaf_latency) for sid in leaf_ids]
    for leaf, ports in zip(leaves, leaf_ports):
        attach_ports(G, ports, leaf, link_bandwidth, link_latency, duplex)
    up = [uplinks_for(len(p), oversubscription) for p in leaf_ports]
    up_lat = link_latency if uplink_latency is None else uplink_latency
    if not leaves:
        return leaves
    width = max(up)
    if levels == 2:
        spine_ids = [add_switch(G, f"spine{j}", "spine", spine_bandwidth, spine_latency)
                     for j in range(spines or width)]
        connect_up(G, leaves, spine_ids, up, link_bandwidth, up_lat, duplex)
        return leaves

    pods = []
    for p, start in enumerate(range(0, n, leaves_per_pod)):
        aggs = [add_switch(G, f"p{p}/agg{j}", "agg", agg_bandwidth, agg_latency)
                for j in range(width)]
        down = connect_up(G, leaves[start:start + leaves_per_pod], aggs,
                          up[start:start + leaves_per_pod], link_bandwidth, up_lat, duplex)
        pods.append((aggs, down))
    m = max(max(down.values()) for _, down in pods)
    cores = [add_switch(G, f"core{i}", "core", spine_bandwidth, spine_latency)
             for i in range(width * m)]
    for aggs, down in pods:
        for j, agg in enumerate(aggs):
            if down[agg]:
                connect_up(G, [agg], cores[j * m:(j + 1) * m], down[agg],
                           link_bandwidth, up_lat, duplex)
    return leaves


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
