"""The graph schema: invariants, validation errors, crossing attributes, flow bandwidth."""

from __future__ import annotations

import math
import re

import networkx as nx
import pytest

import topologies
from topologies import abci, describe, dgx1_cluster, dgx2_cluster, fat_tree, gpus, TopologyError, validate
from tests.conftest import ALL_PRESETS


def test_schema_checks_flow_bandwidth():
    from topologies.schema import TopologyError, validate

    g = topologies.build("dgx-h100", 2, {"net_conn_bandwidth": 2e10})
    u, v = next((u, v) for u, v, d in g.edges(data=True) if "flow_bandwidth" in d)
    for bad in (0.0, -1.0, "20e9", float("nan")):
        g.edges[u, v]["flow_bandwidth"] = bad
        with pytest.raises(TopologyError, match="flow_bandwidth"):
            validate(g)


def test_one_topology_error():
    import topologies

    import simcollective
    from simcollective import errors

    assert errors.TopologyError is topologies.TopologyError is simcollective.TopologyError


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
                 "single_source_shortest_path_length", "single_target_shortest_path_length",
                 "bfs_tree", "dfs_tree",
                 "strongly_connected_components", "is_strongly_connected"):
        real = getattr(nx, name)

        def counted(*a, _real=real, _name=name, **kw):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*a, **kw)

        monkeypatch.setattr(nx, name, counted)
    validate(G)
    assert calls == {"single_source_shortest_path_length": 1, "single_target_shortest_path_length": 1}


@pytest.mark.parametrize("bad, said", [(True, "bandwidth True"), ([1.0], "bandwidth [1.0]"),
                                       (float("nan"), "bandwidth nan")])
def test_an_edge_whose_values_equal_a_checked_edges_but_for_type_is_checked(bad, said):
    # the edges' values are checked once per distinct set with their types: True equals 1,
    # a list cannot be hashed; the edge at fault is still the one named
    G = nx.DiGraph(name="x", description="x", gpus_per_node=3, default_group_size=3)
    for i in range(3):
        G.add_node(f"g{i}", kind="gpu", server=0, local=i)
    good = dict(latency=0.0, link_type="nvlink", duplex="full")
    G.add_edge("g0", "g1", bandwidth=1, **good)
    G.add_edge("g1", "g0", bandwidth=1, **good)
    G.add_edge("g1", "g2", bandwidth=bad, **good)
    G.add_edge("g2", "g1", bandwidth=1, **good)
    with pytest.raises(TopologyError, match=rf"^edge 'g1' -> 'g2' has {re.escape(said)};"):
        validate(G)
