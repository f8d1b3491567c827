"""The plan cache's graph key: a digest that two different graphs never share."""

from __future__ import annotations

import topologies
from simcollective.nccl.plan_keys import constants_key, graph_key
from simcollective.nccl.constants import NcclConstants


def _graph():
    return topologies.build("dgx-h100", 2)


def test_equal_graphs_share_a_key_and_it_is_computed_once_per_graph():
    G, H = _graph(), _graph()
    assert graph_key(G) == graph_key(H) == graph_key(G.copy())
    assert graph_key(G) is graph_key(G)


def test_a_graph_that_differs_in_any_value_has_another_key():
    base = graph_key(_graph())
    G = _graph()
    G.edges["n0/nic0", "su0/leaf0"]["bandwidth"] = 25e9
    H = _graph()
    H.nodes["n0/nvswitch"]["nvls"] = False
    J = _graph()
    J.graph["description"] += "."
    K = _graph()
    K.remove_edge("n1/plx0", "n1/nic0")
    L = _graph()
    L.edges["n0/nic0", "su0/leaf0"]["bandwidth"] = int(L.edges["n0/nic0", "su0/leaf0"]["bandwidth"])
    keys = [base] + [graph_key(x) for x in (G, H, J, K, L)]
    assert len(set(keys)) == len(keys)


def test_a_graph_attribute_that_pickle_cannot_write_is_keyed_by_its_repr():
    G, H = _graph(), _graph()
    G.graph["note"] = lambda: 1
    H.graph["note"] = lambda: 2
    assert graph_key(G) != graph_key(_graph()) and len(graph_key(G)) == len(graph_key(H)) == 64


def test_the_line_rate_graph_attribute_is_left_out_of_the_key():
    G, H = _graph(), _graph()
    G.graph["line_rate_graph"] = _graph()
    assert graph_key(G) == graph_key(H)


def test_constants_key_is_made_of_the_values():
    assert constants_key(NcclConstants.default()) == constants_key(NcclConstants.default())
