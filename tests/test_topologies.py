"""Tests of the `topologies` package (hardware as NetworkX graphs)."""

from __future__ import annotations

import doctest
import importlib
import json
import math
import subprocess
import sys
from collections import Counter

import networkx as nx
import pytest

import topologies
from topologies import (
    PRESETS,
    TopologyError,
    abci,
    build,
    describe,
    dgx1_cluster,
    dgx2_cluster,
    dgx_h100_cluster,
    fat_tree,
    gpus,
    load,
    save,
    validate,
)
from topologies.nodes import DGX1_NVLINK

MODULES = [
    "topologies",
    "topologies.schema",
    "topologies.summary",
    "topologies.nodes",
    "topologies.fabrics",
    "topologies.fabrics.parts",
    "topologies.fabrics.study",
    "topologies.fabrics.trees",
    "topologies.builders",
    "topologies.builders.study",
    "topologies.builders.parametric",
    "topologies.io",
    "topologies.registry",
    "topologies.hardware",
    "topologies.hardware.common",
    "topologies.hardware.v100",
    "topologies.hardware.hgx",
    "topologies.hardware.nvl72",
]


# ----------------------------------------------------------------- helpers
def kinds(G):
    return Counter(d["kind"] for _, d in G.nodes(data=True))


def levels(G):
    return Counter(d["level"] for _, d in G.nodes(data=True) if d["kind"] == "switch")


def edge(G, u, v):
    return dict(G.edges[u, v])


def cable_bw(G, nodes_from, pred):
    """Sum of bandwidth of cables (u -> v) with u in nodes_from and pred(v)."""
    return sum(G.edges[u, v]["bandwidth"] for u in nodes_from for v in G.successors(u) if pred(v))


def is_switch(G, n):
    return G.nodes[n]["kind"] == "switch"


def uplink(G, port):
    """The one network switch a PLX/NIC port is cabled to."""
    (sw,) = [v for v in G.successors(port) if is_switch(G, v)]
    return sw


def leaf_ratio(G, leaves):
    """Host-facing bandwidth / uplink bandwidth over a set of leaves, measured from the graph."""
    down = cable_bw(G, leaves, lambda v: not is_switch(G, v))
    up = cable_bw(G, leaves, lambda v: is_switch(G, v) and G.nodes[v]["level"] != "leaf")
    return down / up


def small_graph():
    """Two servers of one GPU each behind one switch: a minimal valid topology."""
    G = nx.DiGraph(name="t", description="test", gpus_per_node=1, default_group_size=1)
    G.add_node("n0/gpu0", kind="gpu", server=0, local=0)
    G.add_node("n1/gpu0", kind="gpu", server=1, local=0)
    G.add_node("sw", kind="switch", level="leaf", bandwidth=9e11, latency=9e-8)
    for g in ("n0/gpu0", "n1/gpu0"):
        for u, v in ((g, "sw"), ("sw", g)):
            G.add_edge(u, v, bandwidth=12.5e9, latency=2.6e-8, link_type="infiniband",
                       duplex="shared")
    return G


ALL_PRESETS = {
    "abci": lambda: abci(3),
    "dgx1": lambda: dgx1_cluster(7),
    "dgx2": lambda: dgx2_cluster(4),
    "fat-tree": lambda: fat_tree(40, hosts_per_leaf=8, oversubscription=2.0),
    "fat-tree-3": lambda: fat_tree(40, hosts_per_leaf=4, levels=3, leaves_per_pod=3),
    "fat-tree-dgx1": lambda: fat_tree(5, hosts_per_leaf=2, host="dgx1"),
    "dgx-h100": lambda: dgx_h100_cluster(2),
}


# ------------------------------------------------------------------ counts
def test_abci_counts_2_nodes():
    G = abci(2)
    assert kinds(G) == {"gpu": 8, "pcie_switch": 4, "switch": 9}
    assert levels(G) == {"leaf": 4, "fbb": 3, "spine": 2}
    assert describe(G)["links"] == {"nvlink": 12, "pcie": 8, "infiniband": 4 + 12 + 6}
    assert G.graph["gpus_per_node"] == 4 and G.graph["default_group_size"] == 4
    assert "rank_order" not in G.graph


def test_abci_counts_40_nodes_two_racks():
    G = abci(40)
    assert kinds(G) == {"gpu": 160, "pcie_switch": 80, "switch": 16}
    assert levels(G) == {"leaf": 8, "fbb": 6, "spine": 2}
    assert sorted(n for n in G if G.nodes[n].get("level") == "spine") == ["spine0", "spine1"]
    # rack 1 holds nodes 34..39
    assert uplink(G, "n34/plx0") == "r1/leaf0"
    assert uplink(G, "n35/plx1") == "r1/leaf3"
    assert uplink(G, "n33/plx0") == "r0/leaf2"
    # every leaf to every FBB of its rack, every FBB to every spine
    assert sorted(v for v in G.successors("r1/leaf2") if is_switch(G, v)) == [
        "r1/fbb0", "r1/fbb1", "r1/fbb2"]
    assert sorted(v for v in G.successors("r1/fbb1") if G.nodes[v]["level"] == "spine") == [
        "spine0", "spine1"]


def test_dgx1_counts_7_nodes():
    G = dgx1_cluster(7)
    assert kinds(G) == {"gpu": 56, "pcie_switch": 28, "switch": 3}
    assert levels(G) == {"leaf": 2, "root": 1}
    assert sum(1 for v in G.successors("leaf0") if G.nodes[v]["kind"] == "pcie_switch") == 24
    assert sorted(v for v in G.successors("leaf1") if G.nodes[v]["kind"] == "pcie_switch") == [
        "n6/plx0", "n6/plx1", "n6/plx2", "n6/plx3"]
    assert describe(G)["links"]["nvlink"] == 7 * 16
    assert G.graph["rank_order"] == "0,3,2,1,5,6,7,4"
    assert G.graph["gpus_per_node"] == 8 and G.graph["default_group_size"] == 4


def test_dgx2_counts_4_nodes():
    G = dgx2_cluster(4)
    assert kinds(G) == {"gpu": 64, "pcie_switch": 32, "nvswitch": 4, "switch": 3}
    assert levels(G) == {"leaf": 2, "root": 1}
    assert sum(1 for v in G.successors("leaf0") if G.nodes[v]["kind"] == "pcie_switch") == 24
    assert sum(1 for v in G.successors("leaf1") if G.nodes[v]["kind"] == "pcie_switch") == 8
    assert G.graph["gpus_per_node"] == 16 and G.graph["default_group_size"] == 4
    assert not G.has_edge("n0/gpu0", "n0/gpu1")  # GPUs only meet at the NVSwitch
    assert nx.shortest_path(G, "n0/gpu0", "n0/gpu15") == ["n0/gpu0", "n0/nvswitch", "n0/gpu15"]


def test_fat_tree_counts_1024_hosts():
    G = fat_tree(1024)
    assert kinds(G) == {"gpu": 1024, "nic": 1024, "switch": 80}
    assert levels(G) == {"leaf": 64, "spine": 16}
    assert all(G.out_degree(f"leaf{i}") == 32 for i in range(64))
    assert all(G.out_degree(f"spine{j}") == 64 for j in range(16))
    assert G.graph["gpus_per_node"] == 1
    assert describe(G)["duplex"] == {"full": 1024 * 2 + 64 * 16}


def test_fat_tree_three_levels():
    G = fat_tree(1024, levels=3)
    assert levels(G) == {"leaf": 64, "agg": 128, "core": 128}
    assert G.out_degree("p0/leaf0") == 32
    assert sorted(G.successors("p3/agg5")) == sorted(
        [f"p3/leaf{i}" for i in range(8)] + [f"core{5 * 8 + m}" for m in range(8)])
    # full bisection above the leaves: agg up == agg down
    aggs = [n for n in G if G.nodes[n].get("level") == "agg"]
    down = cable_bw(G, aggs, lambda v: G.nodes[v]["level"] == "leaf")
    up = cable_bw(G, aggs, lambda v: G.nodes[v]["level"] == "core")
    assert down == up == 1024 * 12.5e9


def test_fat_tree_node_hosts():
    G = fat_tree(5, hosts_per_leaf=2, host="dgx1")
    assert kinds(G) == {"gpu": 40, "pcie_switch": 20, "switch": 3 + 8}
    assert G.graph["rank_order"] == "0,3,2,1,5,6,7,4"
    assert G.graph["gpus_per_node"] == 8
    assert G.has_edge("n4/plx3", "leaf2")
    H = fat_tree(2, host="dgx-h100", link_bandwidth=50e9)
    assert H.edges["n1/nic7", "leaf0"]["bandwidth"] == 50e9
    assert H.edges["n1/gpu7", "n1/plx7"]["bandwidth"] == 64e9  # host type's own PCIe figure
    assert H.graph["default_group_size"] == 8
    assert fat_tree(1, host="dgx-h100", pcie_bandwidth=32e9).edges["n0/plx0", "n0/nic0"][
        "bandwidth"] == 32e9


def test_dgx_h100_counts_and_rails():
    G = dgx_h100_cluster(2)
    assert kinds(G) == {"gpu": 16, "pcie_switch": 16, "nic": 16, "nvswitch": 2, "switch": 10}
    assert levels(G) == {"leaf": 8, "spine": 2}
    for n in range(2):
        for i in range(8):
            assert G.has_edge(f"n{n}/nic{i}", f"su0/leaf{i}")
            assert sorted(G.successors(f"n{n}/plx{i}")) == [f"n{n}/gpu{i}", f"n{n}/nic{i}"]
    assert G.graph["default_group_size"] == 8 and G.graph["gpus_per_node"] == 8
    big = dgx_h100_cluster(33)
    assert levels(big) == {"leaf": 16, "spine": 32}
    assert big.has_edge("n32/nic5", "su1/leaf5") and big.has_edge("n31/nic5", "su0/leaf5")
    leaves = [f"su0/leaf{i}" for i in range(8)]
    assert leaf_ratio(big, leaves) == 1.0


# ---------------------------------------------------- bandwidths, latencies
def test_abci_link_figures():
    G = abci(2)
    nv = {"bandwidth": 1e11, "latency": 9e-6, "link_type": "nvlink", "duplex": "shared"}
    for a in range(4):
        for b in range(4):
            if a != b:
                assert edge(G, f"n1/gpu{a}", f"n1/gpu{b}") == nv
    pcie = {"bandwidth": 16e9, "latency": 7.5e-6, "link_type": "pcie", "duplex": "shared"}
    assert edge(G, "n0/gpu1", "n0/plx0") == pcie and edge(G, "n0/plx1", "n0/gpu3") == pcie
    assert not G.has_edge("n0/gpu2", "n0/plx0")
    ib = {"bandwidth": 12.5e9, "latency": 2.6e-8, "link_type": "infiniband", "duplex": "shared"}
    assert edge(G, "n0/plx0", "r0/leaf0") == ib == edge(G, "r0/leaf0", "n0/plx0")
    assert edge(G, "r0/leaf1", "r0/fbb2")["bandwidth"] == 75e9
    assert edge(G, "r0/fbb2", "spine1")["bandwidth"] == 50e9
    assert edge(G, "r0/fbb2", "spine1")["latency"] == 2.6e-8


def test_abci_port_wiring():
    G = abci(4)
    succ = {p: [v for v in G.successors(p) if is_switch(G, v)] for p in
            ("n0/plx0", "n0/plx1", "n1/plx0", "n1/plx1", "n2/plx0", "n3/plx1")}
    assert succ == {"n0/plx0": ["r0/leaf0"], "n0/plx1": ["r0/leaf1"],
                    "n1/plx0": ["r0/leaf2"], "n1/plx1": ["r0/leaf3"],
                    "n2/plx0": ["r0/leaf0"], "n3/plx1": ["r0/leaf3"]}


def test_crossing_attrs():
    G = abci(40)
    for n, d in G.nodes(data=True):
        level = d.get("level")
        if level in ("leaf", "fbb"):
            assert (d["bandwidth"], d["latency"]) == (9e11, 9e-8), n
        elif level == "spine":
            assert (d["bandwidth"], d["latency"]) == (1.625e13, 4e-7), n
        else:
            assert "bandwidth" not in d and "latency" not in d, n
    D = dgx1_cluster(7)
    assert (D.nodes["root"]["bandwidth"], D.nodes["root"]["latency"]) == (1.625e13, 4e-7)
    assert (D.nodes["leaf1"]["bandwidth"], D.nodes["leaf1"]["latency"]) == (9e11, 9e-8)
    X = dgx2_cluster(1)
    assert "bandwidth" not in X.nodes["n0/nvswitch"] and "latency" not in X.nodes["n0/plx0"]


def test_dgx1_nvlink_figures():
    G = dgx1_cluster(1)
    assert edge(G, "n0/gpu0", "n0/gpu3") == {"bandwidth": 1e11, "latency": 9e-6,
                                             "link_type": "nvlink", "duplex": "shared"}
    assert G.edges["n0/gpu0", "n0/gpu1"]["bandwidth"] == 5e10
    assert G.edges["n0/gpu6", "n0/gpu2"]["bandwidth"] == 5e10
    assert G.edges["n0/gpu7", "n0/gpu4"]["bandwidth"] == 1e11
    nv = {(u, v) for u, v, d in G.edges(data=True) if d["link_type"] == "nvlink"}
    expected = set()
    for a, b, _ in DGX1_NVLINK:
        expected |= {(f"n0/gpu{a}", f"n0/gpu{b}"), (f"n0/gpu{b}", f"n0/gpu{a}")}
    assert nv == expected and len(nv) == 32
    # every V100 uses its 6 NVLink bricks
    for g in range(8):
        units = sum(G.edges[f"n0/gpu{g}", v]["bandwidth"] / 5e10
                    for v in G.successors(f"n0/gpu{g}") if G.nodes[v]["kind"] == "gpu")
        assert units == 6
    # the study's rank ring only uses double links
    order = [int(x) for x in G.graph["rank_order"].split(",")]
    for a, b in zip(order, order[1:] + order[:1]):
        assert G.edges[f"n0/gpu{a}", f"n0/gpu{b}"]["bandwidth"] == 1e11
    assert G.edges["n0/plx3", "leaf0"]["bandwidth"] == 12.5e9
    assert G.edges["leaf0", "root"] == {"bandwidth": 1.5e11, "latency": 2.6e-8,
                                        "link_type": "infiniband", "duplex": "shared"}


def test_dgx2_and_h100_figures():
    G = dgx2_cluster(2)
    assert edge(G, "n1/gpu15", "n1/nvswitch") == {"bandwidth": 5e10, "latency": 5e-6,
                                                  "link_type": "nvswitch", "duplex": "shared"}
    assert edge(G, "n1/gpu15", "n1/plx7")["bandwidth"] == 16e9
    assert G.edges["leaf0", "root"]["bandwidth"] == 1.5e11
    H = dgx_h100_cluster(2)
    assert edge(H, "n0/gpu3", "n0/nvswitch") == {"bandwidth": 450e9, "latency": 5e-6,
                                                 "link_type": "nvswitch", "duplex": "full"}
    assert edge(H, "n0/gpu3", "n0/plx3") == {"bandwidth": 64e9, "latency": 7.5e-6,
                                             "link_type": "pcie", "duplex": "full"}
    assert edge(H, "n0/plx3", "n0/nic3")["bandwidth"] == 64e9
    assert edge(H, "n0/nic3", "su0/leaf3") == {"bandwidth": 50e9, "latency": 2.6e-8,
                                               "link_type": "infiniband", "duplex": "full"}
    assert H.nodes["n0/nic3"]["kind"] == "nic"


def test_overrides_reach_the_graph():
    G = abci(2, nvlink_bandwidth=25e9, ib_bandwidth=25e9, leaf_latency=1.3e-7, duplex="full")
    assert G.edges["n0/gpu0", "n0/gpu1"]["bandwidth"] == 5e10
    assert G.edges["n0/plx0", "r0/leaf0"] == {"bandwidth": 25e9, "latency": 2.6e-8,
                                              "link_type": "infiniband", "duplex": "full"}
    assert G.nodes["r0/leaf3"]["latency"] == 1.3e-7
    D = dgx1_cluster(13, nodes_per_leaf=4, uplink_bandwidth=3e11)
    assert levels(D) == {"leaf": 4, "root": 1}
    assert D.edges["leaf3", "root"]["bandwidth"] == 3e11


@pytest.mark.parametrize("name", sorted(ALL_PRESETS))
def test_schema_invariants(name):
    G = ALL_PRESETS[name]()
    assert validate(G) is G
    for u, v, d in G.edges(data=True):
        assert G.has_edge(v, u), (u, v)
        assert G.edges[v, u] == d, (u, v)  # every cable is symmetric
        assert type(d["bandwidth"]) is float and type(d["latency"]) is float
    scalars = (str, int, float)
    for _, d in G.nodes(data=True):
        assert all(isinstance(x, scalars) for x in d.values())
    assert all(isinstance(x, scalars) for x in G.graph.values())
    ids = gpus(G)
    keys = [(G.nodes[g]["server"], G.nodes[g]["local"]) for g in ids]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(g == f"n{s}/gpu{l}" for g, (s, l) in zip(ids, keys))
    assert describe(G)["gpus"] == len(ids)
    # a PLX/NIC is only reachable from another one through the network:
    pcie = nx.Graph([(u, v) for u, v, d in G.edges(data=True) if d["link_type"] == "pcie"])
    for comp in nx.connected_components(pcie):
        assert sum(G.nodes[n]["kind"] == "pcie_switch" for n in comp) <= 1


# -------------------------------------------------------------- reachability
def test_abci_route_through_plx_and_leaves():
    G = abci(2)
    path = nx.shortest_path(G, "n0/gpu0", "n1/gpu0")
    assert len(path) == 7
    assert path[:3] == ["n0/gpu0", "n0/plx0", "r0/leaf0"]
    assert G.nodes[path[3]]["level"] == "fbb"
    assert path[4:] == ["r0/leaf2", "n1/plx0", "n1/gpu0"]
    # across racks: leaf, FBB, spine, FBB, leaf
    B = abci(40)
    path = nx.shortest_path(B, "n0/gpu0", "n34/gpu0")
    assert [B.nodes[n].get("level", B.nodes[n]["kind"]) for n in path] == [
        "gpu", "pcie_switch", "leaf", "fbb", "spine", "fbb", "leaf", "pcie_switch", "gpu"]


def test_dgx1_two_nvlink_hops():
    G = dgx1_cluster(2)
    path = nx.shortest_path(G, "n0/gpu0", "n0/gpu5")
    assert len(path) == 3 and path[1] in ("n0/gpu1", "n0/gpu4")
    assert all(G.edges[a, b]["link_type"] == "nvlink" for a, b in zip(path, path[1:]))
    # every intra-node pair is within 2 NVLink hops
    lengths = dict(nx.all_pairs_shortest_path_length(G.subgraph(f"n0/gpu{i}" for i in range(8))))
    assert max(max(d.values()) for d in lengths.values()) == 2
    cross = nx.shortest_path(G, "n0/gpu0", "n1/gpu1")
    assert cross == ["n0/gpu0", "n0/plx0", "leaf0", "n1/plx0", "n1/gpu1"]


def test_h100_gpu_reaches_nic_through_its_pcie_switch():
    G = dgx_h100_cluster(2)
    assert nx.shortest_path(G, "n0/gpu2", "n0/nic2") == ["n0/gpu2", "n0/plx2", "n0/nic2"]
    assert nx.shortest_path_length(G, "n0/gpu2", "n1/gpu2") == 6  # same rail: one leaf


# ----------------------------------------------------------- oversubscription
def test_fat_tree_oversubscription_measured():
    G = fat_tree(1024)
    leaves = [n for n in G if G.nodes[n].get("level") == "leaf"]
    assert leaf_ratio(G, leaves) == 1.0
    assert all(leaf_ratio(G, [leaf]) == 1.0 for leaf in leaves)
    G3 = fat_tree(96, hosts_per_leaf=24, oversubscription=3.0)
    leaves = [n for n in G3 if G3.nodes[n].get("level") == "leaf"]
    assert len(leaves) == 4 and levels(G3)["spine"] == 8
    assert leaf_ratio(G3, leaves) == 3.0
    assert all(leaf_ratio(G3, [leaf]) == 3.0 for leaf in leaves)
    T = fat_tree(64, hosts_per_leaf=8, levels=3, leaves_per_pod=4, oversubscription=2.0)
    leaves = [n for n in T if T.nodes[n].get("level") == "leaf"]
    assert leaf_ratio(T, leaves) == 2.0
    D = fat_tree(8, hosts_per_leaf=4, host="dgx1", oversubscription=2.0)  # 16 ports per leaf
    assert leaf_ratio(D, ["leaf0", "leaf1"]) == 2.0
    assert sum(1 for v in D.successors("leaf0") if is_switch(D, v)) == 8
    assert fat_tree(16, spines=2).edges["leaf0", "spine1"]["bandwidth"] == 8 * 12.5e9


def test_study_oversubscription_measured():
    G = abci(40)
    rack0 = [f"r0/leaf{j}" for j in range(4)]
    fbbs = [f"r0/fbb{j}" for j in range(3)]
    host = cable_bw(G, rack0, lambda v: not is_switch(G, v))
    up = cable_bw(G, fbbs, lambda v: G.nodes[v]["level"] == "spine")
    assert host == 34 * 2 * 12.5e9 and up == 3 * 2 * 50e9
    assert host / up == pytest.approx(850 / 300) and 2.5 < host / up < 3.5  # "about 1:3"
    assert cable_bw(G, rack0, lambda v: G.nodes[v].get("level") == "fbb") == 4 * 3 * 75e9
    D = dgx1_cluster(7)
    assert leaf_ratio(D, ["leaf0"]) == 2.0


# -------------------------------------------------------------- validate errors
def mutated(fn):
    G = small_graph()
    fn(G)
    return G


def _set_edge(u, v, **attrs):
    def f(G):
        G.edges[u, v].update(attrs)
    return f


def _del_edge_attr(u, v, key):
    def f(G):
        del G.edges[u, v][key]
    return f


VALIDATE_CASES = {
    "no kind": (lambda G: G.add_node("x"), ["'x'", "kind", "gpu, pcie_switch"]),
    "unknown kind": (lambda G: G.add_node("x", kind="router"), ["'x'", "'router'", "nvswitch"]),
    "gpu no server": (lambda G: G.nodes["n1/gpu0"].pop("server"), ["'n1/gpu0'", "server"]),
    "gpu str local": (lambda G: G.nodes["n1/gpu0"].update(local="0"), ["'n1/gpu0'", "local"]),
    "gpu negative": (lambda G: G.nodes["n1/gpu0"].update(server=-1), ["'n1/gpu0'", "server"]),
    "dup gpu": (lambda G: G.nodes["n1/gpu0"].update(server=0), ["'n0/gpu0'", "'n1/gpu0'"]),
    "no bandwidth": (_del_edge_attr("sw", "n1/gpu0", "bandwidth"), ["'sw' -> 'n1/gpu0'", "bandwidth"]),
    "zero bandwidth": (_set_edge("sw", "n1/gpu0", bandwidth=0.0), ["'sw' -> 'n1/gpu0'", "bandwidth"]),
    "inf bandwidth": (_set_edge("sw", "n1/gpu0", bandwidth=math.inf), ["'sw' -> 'n1/gpu0'", "inf"]),
    "nan bandwidth": (_set_edge("sw", "n1/gpu0", bandwidth=math.nan), ["'sw' -> 'n1/gpu0'", "nan"]),
    "str bandwidth": (_set_edge("sw", "n1/gpu0", bandwidth="1e9"), ["'sw' -> 'n1/gpu0'", "bandwidth"]),
    "no latency": (_del_edge_attr("n0/gpu0", "sw", "latency"), ["'n0/gpu0' -> 'sw'", "latency"]),
    "neg latency": (_set_edge("n0/gpu0", "sw", latency=-1e-9), ["'n0/gpu0' -> 'sw'", "latency"]),
    "bad duplex": (_set_edge("n0/gpu0", "sw", duplex="half"), ["'n0/gpu0' -> 'sw'", "'half'"]),
    "bad link_type": (_set_edge("n0/gpu0", "sw", link_type="wifi"), ["'n0/gpu0' -> 'sw'", "'wifi'"]),
    "shared no reverse": (lambda G: G.remove_edge("sw", "n1/gpu0"),
                          ["'n1/gpu0' -> 'sw'", "reverse"]),
    "shared differs": (_set_edge("sw", "n1/gpu0", bandwidth=1e9), ["'n1/gpu0' -> 'sw'", "differs"]),
    "shared vs full": (_set_edge("sw", "n1/gpu0", duplex="full"), ["'n1/gpu0' -> 'sw'", "differs"]),
    "self loop": (lambda G: G.add_edge("sw", "sw", bandwidth=1.0, latency=0.0,
                                       link_type="ethernet", duplex="full"), ["'sw' -> 'sw'", "self-loop"]),
    "bad crossing bw": (lambda G: G.nodes["sw"].update(bandwidth=0.0), ["'sw'", "bandwidth"]),
    "bad crossing lat": (lambda G: G.nodes["sw"].update(latency=-1.0), ["'sw'", "latency"]),
    "gpu crossing": (lambda G: G.nodes["n0/gpu0"].update(bandwidth=1e9), ["'n0/gpu0'", "crossing"]),
    "unreachable": (lambda G: G.remove_edges_from([("sw", "n1/gpu0"), ("n1/gpu0", "sw")]),
                    ["GPU 'n0/gpu0' cannot reach GPU 'n1/gpu0'"]),
    "no graph name": (lambda G: G.graph.pop("name"), ["'name'"]),
    "no group size": (lambda G: G.graph.pop("default_group_size"), ["'default_group_size'"]),
    "bad rank_order": (lambda G: G.graph.update(rank_order="0,0"), ["rank_order", "'0,0'"]),
    "int node id": (lambda G: G.add_node(7, kind="switch"), ["node 7", "str"]),
}


@pytest.mark.parametrize("case", sorted(VALIDATE_CASES))
def test_validate_errors(case):
    fn, fragments = VALIDATE_CASES[case]
    G = mutated(fn)
    with pytest.raises(TopologyError) as info:
        validate(G)
    msg = str(info.value)
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, (case, msg)


def test_validate_small_graph_ok_and_wrong_types():
    assert validate(small_graph()) is not None
    for bad in (nx.Graph(small_graph()), nx.MultiDiGraph(small_graph())):
        with pytest.raises(TopologyError, match="DiGraph"):
            validate(bad)
    with pytest.raises(TopologyError, match="DiGraph"):
        validate({"not": "a graph"})


def test_validate_no_gpu():
    G = nx.DiGraph(name="t", description="d", gpus_per_node=1, default_group_size=1)
    G.add_node("sw", kind="switch")
    with pytest.raises(TopologyError, match="no GPU"):
        validate(G)


def test_validate_one_way_reachability():
    G = fat_tree(2)  # full duplex: one direction can be cut
    G.remove_edge("leaf0", "n1/nic0")
    with pytest.raises(TopologyError, match=r"^GPU 'n0/gpu0' cannot reach GPU 'n1/gpu0'$"):
        validate(G)
    G = fat_tree(2)
    G.remove_edge("n1/nic0", "leaf0")
    with pytest.raises(TopologyError, match=r"^GPU 'n1/gpu0' cannot reach GPU 'n0/gpu0'$"):
        validate(G)
    G = abci(2)
    G.remove_edges_from([("n1/plx0", "r0/leaf2"), ("r0/leaf2", "n1/plx0"),
                         ("n1/plx1", "r0/leaf3"), ("r0/leaf3", "n1/plx1")])
    with pytest.raises(TopologyError, match="GPU 'n0/gpu0' cannot reach GPU 'n1/gpu0'"):
        validate(G)


def test_validate_is_linear_on_large_graph(monkeypatch):
    """Reachability costs two graph searches from one GPU, whatever the size (a per-pair
    check would be quadratic: 6,800 nodes took seconds). Counted, not timed: timed tests
    fail on a loaded machine."""
    import networkx as nx

    G = abci(1088)  # 32 racks: ~6800 nodes
    assert G.number_of_nodes() > 5000
    calls = {}
    for name in ("descendants", "ancestors", "has_path", "shortest_path", "shortest_path_length",
                 "single_source_shortest_path_length", "bfs_tree", "dfs_tree",
                 "strongly_connected_components", "is_strongly_connected"):
        real = getattr(nx, name)

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*a, **kw)

        monkeypatch.setattr(nx, name, counted)
    validate(G)
    assert calls == {"descendants": 1, "ancestors": 1}


# ---------------------------------------------------------------------- io
def assert_same(G, H):
    assert list(H.nodes) == list(G.nodes)
    assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))
    assert {(u, v): d for u, v, d in H.edges(data=True)} == {
        (u, v): d for u, v, d in G.edges(data=True)}
    assert H.graph == G.graph
    for n, d in G.nodes(data=True):
        for k, x in d.items():
            assert type(H.nodes[n][k]) is type(x), (n, k)
    for k, x in G.graph.items():
        assert type(H.graph[k]) is type(x), k
    assert isinstance(H, nx.DiGraph) and not H.is_multigraph()


@pytest.mark.parametrize("ext", [".graphml", ".json"])
@pytest.mark.parametrize("name", ["abci", "dgx1", "fat-tree-3", "dgx-h100"])
def test_io_round_trip(tmp_path, ext, name):
    G = ALL_PRESETS[name]()
    path = tmp_path / f"topo{ext}"
    save(G, path)
    assert_same(G, load(path))
    assert_same(G, load(str(path)))


def test_io_json_links_key_and_string_coercion(tmp_path):
    G = abci(2)
    p = tmp_path / "links.json"
    p.write_text(json.dumps(nx.node_link_data(G, edges="links")))
    assert_same(G, load(p))
    U = nx.Graph(name="u", description="d", gpus_per_node="1", default_group_size="1")
    U.add_node("a", kind="gpu", server="0", local="0")
    U.add_node("b", kind="gpu", server="1", local="0")
    U.add_edge("a", "b", bandwidth="1e9", latency="0", link_type="pcie", duplex="shared")
    q = tmp_path / "u.graphml"
    nx.write_graphml(U, q)
    H = load(q)
    assert H.edges["b", "a"] == {"bandwidth": 1e9, "latency": 0.0, "link_type": "pcie",
                                 "duplex": "shared"}
    assert H.nodes["b"]["server"] == 1 and H.graph["gpus_per_node"] == 1


@pytest.mark.parametrize("fname,content,fragment", [
    ("bad.graphml", "<graphml><graph", "malformed graphml"),
    ("empty.graphml", "", "malformed graphml"),
    ("bad.json", "{nope", "malformed json"),
    ("list.json", "[1, 2]", "not a node-link"),
    ("nolinks.json", '{"nodes": [{"id": "a"}]}', "'name'"),
    ("badbw.json", json.dumps({
        "directed": True, "multigraph": False,
        "graph": {"name": "x", "description": "x", "gpus_per_node": 1, "default_group_size": 1},
        "nodes": [{"id": "a", "kind": "gpu", "server": 0, "local": 0}],
        "edges": [{"source": "a", "target": "b", "bandwidth": "fast"}]}), "'fast'"),
])
def test_io_malformed(tmp_path, fname, content, fragment):
    p = tmp_path / fname
    p.write_text(content)
    with pytest.raises(TopologyError) as info:
        load(p)
    assert str(p) in str(info.value) and fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_io_bad_paths(tmp_path):
    with pytest.raises(TopologyError, match="unknown topology file extension '.txt'"):
        load(tmp_path / "t.txt")
    with pytest.raises(TopologyError, match="unknown topology file extension"):
        save(abci(1), tmp_path / "t.yaml")
    with pytest.raises(TopologyError, match="no such file"):
        load(tmp_path / "missing.graphml")
    G = abci(1)
    G.graph["extra"] = [1, 2]
    with pytest.raises(TopologyError, match="'extra'"):
        save(G, tmp_path / "x.json")
    G = abci(1)
    G.remove_edge("n0/gpu0", "n0/gpu1")
    with pytest.raises(TopologyError, match="cannot save"):
        save(G, tmp_path / "x.json")


# ------------------------------------------------------------------ registry
def test_presets_names_and_descriptions():
    assert list(PRESETS) == ["abci", "dgx1", "dgx2", "fat-tree", "dgx-h100", "dgx1-v100",
                             "dgx2-v100", "dgx-a100", "dgx-b200", "gb200-nvl72"]
    for name, (builder, desc) in PRESETS.items():
        assert callable(builder) and isinstance(desc, str) and "\n" not in desc
        G = build(name, 2)
        assert validate(G) is G and len(gpus(G)) == 2 * G.graph["gpus_per_node"]


def test_build_options_coerced():
    G = build("abci", 4, {"nodes_per_rack": "2", "ib_bandwidth": "25e9", "duplex": "full"})
    assert levels(G) == {"leaf": 8, "fbb": 6, "spine": 2}
    assert G.edges["n3/plx1", "r1/leaf3"]["bandwidth"] == 25e9
    assert G.edges["n3/plx1", "r1/leaf3"]["duplex"] == "full"
    F = build("fat-tree", 96, {"oversubscription": "3", "hosts_per_leaf": "24.0",
                               "host": "dgx2", "link_bandwidth": 12.5e9, "levels": 2})
    assert F.graph["gpus_per_node"] == 16 and levels(F)["leaf"] == 4
    leaves = [n for n in F if F.nodes[n].get("level") == "leaf"]
    assert leaf_ratio(F, leaves) == 3.0
    assert build("fat-tree", 8, {"oversubscription": 2}).out_degree("leaf0") == 12
    assert len(gpus(build("dgx1", "3"))) == 24


@pytest.mark.parametrize("name,nodes,opts,fragments", [
    ("abci", 2, {"foo": "1"}, ["unknown option 'foo' for topology 'abci'; allowed: ",
                               "nodes_per_rack", "duplex"]),
    ("abci", 2, {"nodes": "3"}, ["unknown option 'nodes'"]),
    ("dgx3", 2, None, ["unknown topology 'dgx3'", "abci, dgx1, dgx2, fat-tree, dgx-h100"]),
    ("abci", 0, None, ["nodes", ">= 1"]),
    ("abci", "many", None, ["nodes", "'many'"]),
    ("dgx1", 2, {"nodes_per_leaf": "abc"}, ["'abc'", "'nodes_per_leaf'", "'dgx1'"]),
    ("dgx1", 2, {"nodes_per_leaf": "2.5"}, ["'2.5'", "'nodes_per_leaf'"]),
    ("fat-tree", 2, {"link_bandwidth": "fast"}, ["'fast'", "'link_bandwidth'"]),
    ("fat-tree", 2, {"host": "dgx3"}, ["'dgx3'", "gpu, abci, dgx1, dgx2, dgx-h100"]),
    ("fat-tree", 2, {"levels": "4"}, ["levels", "4"]),
    ("fat-tree", 2, {"oversubscription": "0"}, ["oversubscription"]),
    ("dgx-h100", 2, {"duplex": "half"}, ["duplex", "'half'"]),
    ("dgx2", 2, {"pcie_bandwidth": "-1"}, ["bandwidth", "-1"]),
])
def test_build_errors(name, nodes, opts, fragments):
    with pytest.raises(TopologyError) as info:
        build(name, nodes, opts)
    msg = str(info.value)
    for frag in fragments:
        assert frag in msg, msg


# --------------------------------------------------------------- packaging
def test_public_api():
    for name in topologies.__all__:
        assert hasattr(topologies, name), name
    for name in ["TopologyError", "validate", "gpus", "describe", "load", "save", "PRESETS",
                 "build", "abci", "dgx1_cluster", "dgx2_cluster", "fat_tree",
                 "dgx_h100_cluster"]:
        assert name in topologies.__all__
    for mod in MODULES:
        assert hasattr(importlib.import_module(mod), "__all__"), mod


def test_does_not_import_simcollective():
    code = ("import sys, topologies; topologies.build('abci', 2); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('simcollective',)]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_describe():
    d = describe(dgx1_cluster(7))
    assert d["gpus"] == 56 and d["servers"] == 7 and d["gpus_per_node"] == 8
    assert d["kinds"] == {"gpu": 56, "pcie_switch": 28, "nvswitch": 0, "nic": 0,
                          "switch": 3, "cpu": 0}
    assert d["switch_levels"] == {"leaf": 2, "root": 1}
    assert d["links"] == {"infiniband": 28 + 2, "nvlink": 7 * 16, "pcie": 7 * 8}
    assert d["cables"] * 2 == d["directed_edges"]
    assert d["crossing_nodes"] == 3 and d["rank_order"] == "0,3,2,1,5,6,7,4"
    json.dumps(d)


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
