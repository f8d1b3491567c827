"""The resolved run: which latencies an algorithm pays under a profile that replaces the
graph's link latencies by NCCL's own (``--profile nccl``)."""

import json

import pytest

from simcollective.cli import main
from simcollective.simulate import RunConfig, run


def run_json(capsys, *argv):
    code = main(list(argv) + ["--json", "-"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_ring_under_the_nccl_profile_pays_the_route_latency(capsys):
    # dgx-h100, 8 ranks on one NVSwitch: the ring's 2 (P - 1) = 14 steps each send 1 MiB / 8
    # over GPU -> NVSwitch -> GPU, route latency 2 x 300 ns, at NCCL's usable NVSwitch rate
    # 0.82 x 450e9 = 369e9 bytes/s (the nccl profile's link efficiency)
    r = run_json(capsys, "run", "--topology", "dgx-h100", "--algorithm", "ring", "--bytes", "1M",
                 "--profile", "nccl")
    assert r["time_s"] == pytest.approx(14 * (600e-9 + 2**17 / 369e9), rel=1e-9)   # 13.373 us
    ideal = run_json(capsys, "run", "--topology", "dgx-h100", "--algorithm", "ring", "--bytes", "1M")
    assert ideal["time_s"] == pytest.approx(14 * (600e-9 + 2**17 / 450e9), rel=1e-9)


def test_p2p_under_the_nccl_profile_pays_the_route_latency(capsys):
    r = run_json(capsys, "p2p", "--topology", "dgx-h100", "--profile", "nccl")
    assert r["latency_s"] == pytest.approx(600e-9, rel=1e-12)
    assert r["time_s"] == pytest.approx(600e-9 + 2**20 / 369e9, rel=1e-9)


def test_nccl_algorithms_keep_their_own_latency_only():
    # NCCL's ring spends NCCL's latency of the call, the flows none: its time is unchanged by
    # the graph's link latencies (scaling them by 1000 moves nothing)
    import topologies

    g = topologies.build("dgx-h100", 1, {})
    slow = g.copy()
    for _, _, d in slow.edges(data=True):
        d["latency"] = d.get("latency", 0.0) * 1000
    for _, d in slow.nodes(data=True):
        if "latency" in d:
            d["latency"] = d["latency"] * 1000
    cfg = RunConfig(topology="dgx-h100", algorithm="nccl-ring", bytes=2**20, profile="nccl")
    assert run(cfg, graph=g)["time_s"] == run(cfg, graph=slow)["time_s"]
    ring = RunConfig(topology="dgx-h100", algorithm="ring", bytes=2**20, profile="nccl")
    assert run(ring, graph=slow)["time_s"] > run(ring, graph=g)["time_s"] + 14 * 500e-6
