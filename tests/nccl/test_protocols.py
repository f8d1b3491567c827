"""Protocols: wire inflation, NCCL's ring latencies, plateau factor, network latency per hop."""

from __future__ import annotations

import pytest

import topologies
from simcollective.nccl import model
from simcollective.simulate import run_allreduce, RunConfig
from tests.conftest import machine


# -- the algorithms on real data ------------------------------------------------------------------------
def run(algorithm, topology="dgx-h100", nodes=1, elements=1001, dtype="int32", profile="nccl", **options):
    cfg = RunConfig(topology=topology, nodes=nodes, algorithm=algorithm, elements=elements, dtype=dtype,
                    profile=profile, options=options)
    return run_allreduce(cfg)


def test_protocol_is_wire_inflation():
    n = 24 * 4096
    simple = run("nccl-ring", elements=n, protocol="simple", channels=4)
    ll = run("nccl-ring", elements=n, protocol="ll", channels=4)
    ll128 = run("nccl-ring", elements=n, protocol="ll128", channels=4)
    assert ll["message_bytes"] == 2 * simple["message_bytes"]
    assert ll128["message_bytes"] == pytest.approx(simple["message_bytes"] * 128 / 120, abs=simple["messages"])


def test_ring_latency_is_nccls():
    rep = run("nccl-ring", elements=2, protocol="ll", channels=1)
    assert rep["phases"]["latency"] == pytest.approx(15.0e-6)   # 6.6 + 14 x 0.6 us


def test_multinode_ring_simple_latency_has_nccls_plateau_factor():
    # 2 x 8 H100, ring/Simple, 16 channels: NCCL's L = 8.4 + 28 x 3.4 (NVLink steps) + 2 x 14 (network
    # steps) = 131.6 us, counted 1.4 times on SM90 once every rank of every channel has >= 64 B
    # (tuning.cc "plateau effect of ring"); the simulated call spends the same latency
    m = machine("dgx-h100", 2)
    gr = model.graphs_of(m)
    assert model.latency(m, gr, "ring", "simple") == pytest.approx(131.6)
    assert model.ring_plateau_factor(m, gr, "ring", "simple", 16 * 16 * 64) == 1.4
    assert model.ring_plateau_factor(m, gr, "ring", "simple", 16 * 16 * 64 - 4) == 1.0
    assert model.ring_plateau_factor(m, gr, "ring", "ll128", 1 << 30) == 1.0
    assert model.ring_plateau_factor(machine("dgx-a100"), model.graphs_of(machine("dgx-a100")),
                                     "ring", "simple", 1 << 30) == 1.0    # one node: no factor
    big = run("nccl-ring", nodes=2, elements=16 * 16 * 16, protocol="simple", channels=16)
    small = run("nccl-ring", nodes=2, elements=16 * 16 * 16 - 1, protocol="simple", channels=16)
    assert big["phases"]["latency"] == pytest.approx(131.6e-6 * 1.4)
    assert small["phases"]["latency"] == pytest.approx(131.6e-6)


# -- the network transport's advertised latency (NCCL's graph.latencyInter) -----------------------------
def test_net_latency_is_added_per_network_hop_and_twice_for_simple():
    # 2 x p4d-like (dgx-a100, 4 NICs): ring allreduce has 2 (nNodes - 1) = 2 network steps; NCCL adds the
    # transport's advertised latency to each (NCCL's latency model), again for Simple (the flush)
    def m_of(opts):
        g = topologies.build("dgx-a100", 2, {"nics_per_node": 4, **opts})
        gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                      key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
        return model.machine_of(g, gpus)

    base, efa = m_of({}), m_of({"net_latency": 60e-6})
    assert base.net_latency_us == 0.0 and efa.net_latency_us == pytest.approx(60.0)
    gb, ge = model.graphs_of(base), model.graphs_of(efa)
    assert model.latency(efa, ge, "ring", "ll") - model.latency(base, gb, "ring", "ll") == pytest.approx(2 * 60)
    assert model.latency(efa, ge, "ring", "simple") - model.latency(base, gb, "ring", "simple") == \
        pytest.approx(2 * 2 * 60)
    assert model.latency(efa, ge, "tree", "ll128") - model.latency(base, gb, "tree", "ll128") == \
        pytest.approx(2 * 1 * 60)     # tree: 2 x log2(nNodes) network hops
    # the simulated call spends it: phase 'latency' grows by exactly 2 x 60 us (ring, LL)
    opts = {"nics_per_node": 4}
    cfg = dict(topology="dgx-a100", nodes=2, algorithm="nccl-ring", elements=1024, dtype="int32",
               profile="nccl", options={"protocol": "ll", "channels": 2})
    a = run_allreduce(RunConfig(topology_opts=dict(opts), **cfg))
    b = run_allreduce(RunConfig(topology_opts={**opts, "net_latency": 60e-6}, **cfg))
    assert b["phases"]["latency"] - a["phases"]["latency"] == pytest.approx(120e-6)
    assert b["verified"]
    # one node: no network hop, nothing added
    one = topologies.build("dgx-a100", 1, {"net_latency": 60e-6})
    assert model.machine_of(one, [f"n0/gpu{i}" for i in range(8)]).net_latency_us == 0.0
