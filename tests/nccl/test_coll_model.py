"""NCCL's cost model for allgather and the other collectives: bandwidths, latencies, protocol choice."""

from __future__ import annotations

import pytest

from simcollective.nccl import model
from simcollective.nccl.coll_model import coll_bandwidth, coll_choose, coll_latency
from tests.conftest import machine


# -- NCCL's cost model for these collectives --------------------------------------------------------
def test_model_bandwidth_and_latency_of_ring_allgather_on_8_h100():
    m = machine("dgx-h100")
    graphs = model.graphs_of(m)   # ring: 12 searched channels x 30 GB/s
    # busBw = 12 x 30 = 360; ring ratio nRanks / nsteps = 8 / 7
    assert coll_bandwidth(m, graphs, "allgather", "ring", "simple") == pytest.approx(360 * 8 / 7)
    assert coll_bandwidth(m, graphs, "allgather", "ring", "ll") == pytest.approx(141.0 * 8 / 7)  # llMaxBw
    assert coll_bandwidth(m, graphs, "broadcast", "ring", "simple") == pytest.approx(360.0)     # ratio 8 / 8
    # NVLS (no bus -> algorithm ratio): 8 heads x min(40 x 0.85 x 7/8 x 7/8, 60)
    assert coll_bandwidth(m, graphs, "allgather", "nvls", "simple") == pytest.approx(8 * 40 * 0.85 * 49 / 64)
    assert coll_bandwidth(m, graphs, "broadcast", "nvls", "simple") == 0.0   # NCCL has no NVLS broadcast
    assert coll_latency(m, "allgather", "ring", "simple") == pytest.approx(8.4 + 7 * 3.4)
    assert coll_latency(m, "allgather", "ring", "ll") == pytest.approx(6.6 + 7 * 0.6)
    assert coll_latency(m, "broadcast", "ring", "simple") == pytest.approx(8.4 + 8 * 4.0)  # Tree's hop for Simple
    assert coll_latency(m, "reduce-scatter", "nvls", "simple") == pytest.approx(25.0)


def test_model_choice_small_ll_large_simple_ring():
    m = machine("dgx-h100")
    assert coll_choose(m, "allgather", 4096)[:2] == ("ring", "ll")
    assert coll_choose(m, "allgather", 1 << 30)[:3] == ("ring", "simple", 24)
    assert coll_choose(m, "reduce-scatter", 1 << 30)[:2] == ("ring", "simple")


def test_model_two_nodes_allgather_latency_counts_one_network_hop():
    m = machine("dgx-h100", 2)
    # nsteps = 15, one inter-node hop (nNodes - 1), intra hop max(3.4, 3 x 1.0 net overhead)
    assert coll_latency(m, "allgather", "ring", "simple") == pytest.approx(8.4 + 14 * 3.4 + 14.0)


def test_transport_latency_is_added_to_the_network_hop_of_allgather_and_reduce_scatter():
    """NCCL adds the latency the network plugin advertises (graph.latencyInter) to every
    network hop of a ring, again for Simple (the flush), whatever the collective: 2 x p4d over
    EFA (aws-ofi-nccl advertises 75 us), one network hop (nNodes - 1), 14 NVLink hops at
    max(NCCL's hop, the net overhead 1 us, x3 for Simple)."""
    m = machine("aws-p4d", 2)
    assert m.net_latency_us == pytest.approx(75.0)
    assert coll_latency(m, "allgather", "ring", "ll") == pytest.approx(6.6 + 14 * 1.0 + (2.7 + 75.0))
    assert coll_latency(m, "allgather", "ring", "ll128") == pytest.approx(14.0 + 14 * 1.9 + (4.0 + 75.0))
    assert coll_latency(m, "reduce-scatter", "ring", "simple") == pytest.approx(8.4 + 14 * 3.4 + (14.0 + 2 * 75.0))
    # the same machine with no advertised latency (as NCCL's IB transport): NCCL's hop alone
    ib = machine("aws-p4d", 2, {"net_latency": 0.0})
    assert ib.net_latency_us == 0.0
    assert coll_latency(ib, "allgather", "ring", "ll") == pytest.approx(6.6 + 14 * 1.0 + 2.7)


def test_simulated_allgather_spends_the_transport_latency():
    """The simulated nccl-ring allgather spends it once per call (phase 'latency'): 75 us
    more than with no advertised latency for LL on 2 x p4d, results still verified."""
    from simcollective.simulate import RunConfig, run_collective

    def lat(opts):
        rep = run_collective(RunConfig(topology="aws-p4d", nodes=2, collective="allgather", algorithm="nccl-ring",
                                       elements=1024, dtype="int32", profile="nccl", topology_opts=opts,
                                       options={"protocol": "ll", "channels": 2}))
        assert rep["verified"]
        return rep["phases"]["latency"]

    assert lat({}) - lat({"net_latency": 0.0}) == pytest.approx(75e-6)
