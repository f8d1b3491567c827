"""The study's builders (ABCI, DGX-1, DGX-2): counts, link figures, port wiring, routes."""

from __future__ import annotations

import networkx as nx

from tests.conftest import is_switch, kinds, levels
from topologies import abci, describe, dgx1_cluster, dgx2_cluster, dgx_h100_cluster
from topologies.nodes import DGX1_NVLINK


def edge(G, u, v):
    return dict(G.edges[u, v])


def uplink(G, port):
    """The one network switch a PLX/NIC port is cabled to."""
    (sw,) = [v for v in G.successors(port) if is_switch(G, v)]
    return sw


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
