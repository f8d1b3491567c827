"""Topology files: round trips, link keys, coercion, malformed files, bad paths."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from topologies import abci, load, save, TopologyError
from tests.conftest import ALL_PRESETS


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
