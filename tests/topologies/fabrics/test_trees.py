"""Fat trees: counts, levels, node hosts, measured oversubscription."""

from __future__ import annotations

import pytest

from tests.conftest import cable_bw, is_switch, kinds, leaf_ratio, levels
from topologies import abci, describe, dgx1_cluster, fat_tree


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
