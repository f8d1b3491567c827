"""NCCL's tuner (``nccl/model.py``): cost figures on 8 x H100, picks as NCCL makes them, channels for small calls."""

from __future__ import annotations

import pytest

import topologies
from simcollective.errors import UserInputError
from simcollective.nccl import model
from tests.conftest import machine


MiB = 1 << 20


# -- NCCL's cost model: the worked examples and NCCL's choices (NCCL 2.30 tuning model) -------------
def test_cost_model_8xh100_figures():
    m = machine("dgx-h100")
    gr = model.graphs_of(m)
    expect = {("ring", "ll"): (15.0, 80.6), ("ring", "ll128"): (40.6, 189.3), ("ring", "simple"): (56.0, 205.7),
              ("tree", "ll"): (15.2, 43.6), ("tree", "ll128"): (31.5, 128.8), ("tree", "simple"): (64.4, 165.6),
              ("nvls", "simple"): (25.0, 272.0)}
    for (a, p), (lat, bw) in expect.items():
        assert model.latency(m, gr, a, p) == pytest.approx(lat, abs=0.05)
        assert model.bandwidth(m, gr, a, p) == pytest.approx(bw, abs=0.05)


def test_nccl_picks_as_nccl_on_8xh100():
    # observed with NCCL_DEBUG_SUBSYS=TUNING (NVIDIA/nccl-tests#309): 8B~1MB RING/LL, 2MB~16GB NVLS/SIMPLE
    m = machine("dgx-h100")
    for e in range(3, 35):
        algo, proto, _, _ = model.choose(m, 1 << e)
        assert (algo, proto) == (("ring", "ll") if (1 << e) <= MiB else ("nvls", "simple")), e


def test_nccl_picks_as_nccl_on_8xa100():
    # NCCL's choices: Ring LL <= 2 MiB, Ring LL128 4-16 MiB, Ring Simple >= 32 MiB
    m = machine("dgx-a100")
    for e in range(3, 34):
        size = 1 << e
        want = "ll" if size <= 2 * MiB else "ll128" if size <= 16 * MiB else "simple"
        assert model.choose(m, size)[:2] == ("ring", want), e


def test_two_node_h100_small_messages_pick_the_tree():
    m = machine("dgx-h100", 2)
    algo, proto, ch, t = model.choose(m, 8)
    assert (algo, proto, ch) == ("tree", "ll", 1)
    assert t == pytest.approx(25.2, abs=0.01)   # NCCL's model: Tree LL L = 25.2 us


def test_channels_shrink_for_small_calls():
    m = machine("dgx-h100")
    gr = model.graphs_of(m)
    assert model.channels_for(m, gr, "ring", "simple", 768 * 1024) == 24   # 24 x 512 x 64 B
    assert model.channels_for(m, gr, "ring", "simple", 768 * 1024 - 1) == 23
    assert model.channels_for(m, gr, "ring", "ll", 8) == 1


def test_node_of_is_the_index_of_each_rank_node():
    import topologies

    # ranks alternate between the two servers: rank r is on server r % 2
    gpus = [f"n{r % 2}/gpu{r // 2}" for r in range(16)]
    m = model.machine_of(topologies.build("dgx-h100", 2), gpus)
    assert len(m.nodes) == 2
    for r in range(16):
        assert r in m.nodes[m.node_of[r]]
    assert [m.node_of[r] for r in (0, 2)] == [m.node_of[0]] * 2 and m.node_of[1] != m.node_of[0]


@pytest.mark.parametrize("name, nodes, opts, ranks, words", [
    ("gb300-nvl72", 34, {"domain_hosts": "18,16"}, None, ["72 and 64 ranks", "NVLink domain", "domain_hosts"]),
    ("dgx-h100", 2, {}, 12, ["8 and 4 ranks", "a server", "a multiple of 8"]),
])
def test_unequal_nccl_nodes_are_refused_naming_the_counts_and_the_way_out(name, nodes, opts, ranks, words):
    """NCCL's model needs as many ranks on every NCCL node (a server, or an NVLink domain of
    several hosts): the one-line refusal names the counts found and how to place them evenly."""
    g = topologies.build(name, nodes, opts)
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))[:ranks]
    with pytest.raises(UserInputError) as e:
        model.machine_of(g, gpus)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg
