"""The resolved run: ``--study`` resolution (every part set, contradictions refused, end to
end), and which latencies an algorithm pays under a profile that replaces the graph's link
latencies by NCCL's own (``--profile nccl``)."""

import json

import pytest

from simcollective.errors import UserInputError
from simcollective.cli import main
from simcollective.simulate import RunConfig, run_allreduce
from simcollective.simulate import run as simulate_run
from tests.conftest import cli, run_cli


M = 2**20


def run(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def test_study_sets_every_part():
    f = run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, dtype="int32", density=1 / 128,
            profile="cm02", study=True)
    assert (f["routing"], f["timing"], f["study"], f["options"]["densify"]) == ("study", "study", True, "study")
    # dense algorithms: no sizing rule needed, routing and timing still set
    f = run(topology="abci", nodes=2, algorithm="ring", elements=M, dtype="int32", profile="cm02", study=True)
    assert (f["routing"], f["timing"]) == ("study", "study") and "densify" not in f["options"]


def test_study_contradictions_are_errors():
    with pytest.raises(UserInputError, match="--routing hash contradicts"):
        run(topology="abci", nodes=2, algorithm="ring", elements=M, routing="hash", study=True)
    with pytest.raises(UserInputError, match="--densify exact contradicts"):
        run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, density=1 / 128, study=True,
            options={"densify": "exact"})


def test_cli_study_end_to_end(capsys):
    """The first run in a subprocess (``python -m simcollective.cli``), the others in this
    process (``cli.main``, the same code past the interpreter's start)."""
    out = cli("run", "--topology", "dgx2", "--nodes", "1", "--algorithm", "ring", "--elements", "32M",
              "--dtype", "int32", "--profile", "cm02", "--study", "--json", "-", "--quiet")
    assert out.returncode == 0, out.stderr
    f = json.loads(out.stdout)
    assert f["time_s"] == pytest.approx(80.8e-3, rel=2e-3)
    code, out, err = run_cli(capsys, "run", "--topology", "abci", "--nodes", "2", "--algorithm", "sparse-ring",
                             "--elements", "64K", "--density", "1/128", "--study")
    assert code == 0 and "study        --study: routing study, timing study, densify study" in out
    code, out, err = run_cli(capsys, "run", "--topology", "abci", "--algorithm", "ssar-recursive-doubling",
                             "--elements", "1M", "--density", "1/128", "--densify", "study", "--quiet")
    assert code == 2 and err.count("\n") == 1
    assert "has no study sizing rule" in err
    code, out, err = run_cli(capsys, "run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring",
                             "--elements", "1M", "--study", "--quiet")
    assert code == 2 and "--study reproduces" in err and "'fat-tree' is not one of them" in err   # (the option given)



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
    assert simulate_run(cfg, graph=g)["time_s"] == simulate_run(cfg, graph=slow)["time_s"]
    ring = RunConfig(topology="dgx-h100", algorithm="ring", bytes=2**20, profile="nccl")
    assert simulate_run(ring, graph=slow)["time_s"] > simulate_run(ring, graph=g)["time_s"] + 14 * 500e-6
