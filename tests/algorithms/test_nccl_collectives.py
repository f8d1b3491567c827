"""NCCL's algorithms for allgather, reduce-scatter, broadcast and reduce as runs: closed forms,
exact on int32 for every algorithm and protocol, odd rank counts, the auto choice in JSON,
chains of channels, one rank."""

from __future__ import annotations

import json

import pytest

from simcollective.nccl.coll_model import coll_latency
from simcollective.profiles import load_profile
from simcollective.simulate import run_collective, RunConfig
from tests.conftest import machine, run_cli


def run(collective, algorithm, topology="dgx-h100", nodes=1, **kw):
    kw.setdefault("profile", "nccl")
    return run_collective(RunConfig(topology=topology, nodes=nodes, collective=collective, algorithm=algorithm,
                                    **kw))


# -- closed form on a contention-free machine --------------------------------------------------------
@pytest.mark.parametrize("protocol,channels", [("simple", 1), ("simple", 24), ("ll", 3), ("ll128", 8)])
def test_ring_allgather_closed_form_on_an_nvswitch(protocol, channels):
    """On one NVSwitch (each GPU one link up and one down, every ring step one message per
    link) nccl-ring allgather takes L + (P - 1) x wire x S / (P B): L NCCL's latency of the call,
    S the output size, B the usable link rate; channels and loops do not change it."""
    P, count = 8, 3 * 2**16
    rep = run("allgather", "nccl-ring", elements=count, dtype="int32",
              options={"protocol": protocol, "channels": channels})
    prof = load_profile("nccl")
    eff = dict(prof.network.link_efficiency)["nvswitch"]
    B = 450e9 * eff
    m = machine("dgx-h100")
    lat = (prof.nccl.launch_us + coll_latency(m, "allgather", "ring", protocol,
                                                 prof.nccl.latency_table())) * 1e-6
    wire = prof.nccl.wire_factor[protocol]
    S = P * count * 4
    # wire sizes are whole bytes: each of the (P - 1) x C x (<= 2 loops) messages a link
    # carries in turn is rounded up by less than one byte
    rounding = (P - 1) * channels * 2 / B
    assert rep["time_s"] == pytest.approx(lat + (P - 1) * wire * (S / P) / B, rel=1e-9, abs=rounding)
    assert rep.fields["algorithm_chosen"] == "nccl-ring" and rep.fields["channels"] == channels
    assert rep["verified"] and "exact" in rep["verification"]


# -- every new algorithm x protocol, verified on real data ---------------------------------------
CASES = [(c, a, p) for c in ("allgather", "reduce-scatter", "broadcast", "reduce")
         for a in ("nccl-ring", "nccl") for p in ("simple", "ll", "ll128")]

CASES += [(c, "nccl-nvls", "simple") for c in ("allgather", "reduce-scatter")]


@pytest.mark.parametrize("collective,algorithm,protocol", CASES)
def test_every_algorithm_and_protocol_is_exact_on_int32(collective, algorithm, protocol):
    kw = {"root": 5} if collective in ("broadcast", "reduce") else {}
    rep = run(collective, algorithm, elements=1003, dtype="int32", options={"protocol": protocol, "channels": 3},
              **kw)
    assert rep["verified"] and "exact" in rep["verification"]
    assert rep.fields["protocol"] == protocol and rep.fields["channels"] == 3


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "broadcast", "reduce"])
@pytest.mark.parametrize("gpus", [2, 3, 16])
def test_two_nodes_and_odd_rank_counts_float_and_int(collective, gpus):
    kw = {"root": gpus - 1} if collective in ("broadcast", "reduce") else {}
    for dtype in ("int32", "float32"):
        if gpus == 16:   # 2 nodes of 8: NCCL's choice, rings across the rails
            rep = run(collective, "nccl", nodes=2, elements=517, dtype=dtype, **kw)
        else:
            rep = run(collective, "nccl-ring", elements=517, dtype=dtype, gpus=gpus, **kw)
        assert rep["verified"]


def test_auto_choice_is_reported_in_json(capsys):
    code, out, _ = run_cli(capsys, "run", "--topology", "dgx-h100", "--profile", "nccl", "--collective",
                       "reduce-scatter", "--algorithm", "nccl", "--bytes", "256M", "--json", "-")
    assert code == 0
    rep = json.loads(out)
    assert rep["algorithm_chosen"] == "nccl-ring" and rep["protocol"] == "simple" and rep["channels"] == 24
    assert rep["nccl_predicted_us"] > 0


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_chains_of_many_channels_across_nodes_do_not_wait_on_each_other(collective):
    """Regression: with 16 channels on 2 nodes a rank sits at different places of different
    channels' chains; ticks local to each rank deadlocked (chunk t of one chain waited for
    chunk t of another that was posted a tick later)."""
    rep = run(collective, "nccl-ring", nodes=2, elements=1 << 16, dtype="int32", root=3,
              options={"protocol": "simple", "channels": 16})
    assert rep["verified"] and rep.fields["channels"] == 16


def test_broadcast_chain_pipelines_in_nccl_steps():
    """A 1-channel Simple chain over 8 ranks on one NVSwitch, k = 16 steps of 512 KiB: the
    chain fills in P - 1 = 7 step times, so the time is L + (k + P - 2) x step / B."""
    P, step = 8, 512 * 1024
    rep = run("broadcast", "nccl-ring", bytes=16 * step, dtype="int32",
              options={"protocol": "simple", "channels": 1})
    prof = load_profile("nccl")
    B = 450e9 * dict(prof.network.link_efficiency)["nvswitch"]
    lat = rep["phases"]["latency"]
    assert lat == pytest.approx((prof.nccl.launch_us + coll_latency(
        machine("dgx-h100"), "broadcast", "ring", "simple", prof.nccl.latency_table()))
        * 1e-6)
    assert rep["time_s"] == pytest.approx(lat + (16 + P - 2) * step / B, rel=1e-9)


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "broadcast", "reduce"])
def test_one_rank_is_a_copy_not_an_error(collective):
    rep = run(collective, "nccl", gpus=1, elements=100, dtype="int32")
    assert rep["verified"] and rep["time_s"] == 0.0 and rep.fields["algorithm_chosen"] == "nccl-ring"
