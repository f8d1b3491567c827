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


def test_nccl_reads_a_nics_line_rate_not_its_goodput():
    """A NIC cable whose payload rate (``bandwidth``) is below its ``line_rate`` (a transport's
    goodput): NCCL's model sees the device speed, the line rate."""
    import topologies

    g = topologies.build("dgx-h100", 2)
    gpus = [f"n{s}/gpu{i}" for s in (0, 1) for i in range(8)]
    before = model.machine_of(g, gpus)
    for u, v, d in g.edges(data=True):
        if d.get("link_type") == "infiniband":
            d["line_rate"], d["bandwidth"] = d["bandwidth"], d["bandwidth"] / 4
    after = model.machine_of(g, gpus)
    assert (after.nic_bw, after.nics) == (before.nic_bw, before.nics) == (48.0, 8)


def test_nccl_counts_the_rings_of_the_nics_a_gpu_drives():
    """Two NICs per GPU (16 on 8 H100): 16 rings; the graph saying each GPU drives its listed NICs
    (``devices_per_gpu``, lists trimmed to one): 8."""
    import topologies

    g = topologies.build("dgx-h100", 2, {"nics_per_node": 16, "nic_bandwidth": 25e9})
    gpus = [f"n{s}/gpu{i}" for s in (0, 1) for i in range(8)]
    assert model.machine_of(g, gpus).nics == 16
    g.graph["devices_per_gpu"] = 1
    for gpu in gpus:
        g.nodes[gpu]["nics"] = g.nodes[gpu]["nics"].split(",")[0]
    assert model.machine_of(g, gpus).nics == 8
