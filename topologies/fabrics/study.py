"""The study's fabrics: leaves under one root (DGX-1/DGX-2 clusters) and ABCI's racks."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from .parts import add_switch, attach_ports, check_count, connect_up

__all__ = ["leaf_root", "abci_racks"]


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
    nodes_per_rack: int, fbbs_per_rack: int, spines: int,
    port_bandwidth: float, port_latency: float,
    leaf_fbb_bandwidth: float, fbb_spine_bandwidth: float, uplink_latency: float,
    leaf_bandwidth: float, leaf_latency: float,
    fbb_bandwidth: float, fbb_latency: float,
    spine_bandwidth: float, spine_latency: float, duplex: str,
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
        _attach_rack(G, server_ports[r * nodes_per_rack:(r + 1) * nodes_per_rack], per_server,
                     leaves, port_bandwidth, port_latency, duplex)
        connect_up(G, leaves, fbbs, len(fbbs), leaf_fbb_bandwidth, uplink_latency, duplex)
        connect_up(G, fbbs, spine_ids, len(spine_ids), fbb_spine_bandwidth, uplink_latency, duplex)
        all_leaves += leaves
    return all_leaves


def _attach_rack(G, rack_ports, per_server, leaves, bandwidth, latency, duplex) -> None:
    """Port ``k`` of the rack's server ``i`` to leaf ``(i % 2) * per_server + k``."""
    for i, ports in enumerate(rack_ports):
        for k, port in enumerate(ports):
            attach_ports(G, [port], leaves[(i % 2) * per_server + k], bandwidth, latency, duplex)
