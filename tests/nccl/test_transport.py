"""NCCL's model reads the network transport a topology names: its protocols across nodes."""

from __future__ import annotations

import networkx as nx

from simcollective.nccl import coll_model, model
from simcollective.nccl.transport import ALL_PROTOCOLS, net_protocols
from tests.conftest import machine


def test_protocols_of_the_graph_across_nodes_only():
    g = nx.DiGraph(net_protocols="Simple, ll128")
    assert net_protocols(g, 2) == ("ll128", "simple")
    assert net_protocols(g, 1) == ALL_PROTOCOLS
    assert net_protocols(nx.DiGraph(), 4) == ALL_PROTOCOLS   # NCCL's IB transport: all three


def test_a_simple_only_transport_never_gets_ll():
    """GPUDirect-TCPX carries Simple only: at every size NCCL's choice on 2 x A3 High is Simple,
    where the same machine over InfiniBand takes LL for small messages."""
    tcpx = machine("gcp-a3-high", 2)
    ib = machine("gcp-a3-high", 2, {"transport": "ib-ndr"})
    assert tcpx.net_protocols == ("simple",) and ib.net_protocols == ALL_PROTOCOLS
    for nbytes in (8, 1 << 16, 1 << 20, 1 << 28):
        assert model.choose(tcpx, nbytes)[1] == "simple"
        assert coll_model.coll_choose(tcpx, "allgather", nbytes)[1] == "simple"
    assert model.choose(ib, 8)[1] == "ll"
    assert not model.enabled(tcpx, "ring", "ll") and model.enabled(tcpx, "ring", "simple")


def test_within_one_node_every_protocol_stays():
    one = machine("gcp-a3-high", 1)
    assert one.net_protocols == ALL_PROTOCOLS and model.enabled(one, "ring", "ll")
