"""The command line end to end: real runs, JSON keys, and one-line errors for bad input."""

import json
import os
import subprocess
import sys

import pytest

from simcollective.cli import main
from simcollective.simulate import JSON_KEYS


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_p2p_abci_route_through_both_plx_and_the_fabric(capsys):
    code, out, err = run_cli(capsys, "p2p", "--topology", "abci", "--nodes", "2", "--src", "0", "--dst", "4",
                             "--bytes", "1G", "--json", "-")
    assert code == 0, err
    r = json.loads(out)
    nodes = [h["from"] for h in r["route"]] + [r["route"][-1]["to"]]
    assert nodes[0] == "n0/gpu0" and nodes[-1] == "n1/gpu0"
    assert "n0/plx0" in nodes and "n1/plx0" in nodes
    assert any(h["link_type"] == "infiniband" for h in r["route"])
    # GPU-PLX 7.5us twice, 4 cables of 26ns, 3 switch crossings (leaf, FBB, leaf) of 90ns
    latency = 2 * 7.5e-6 + 4 * 2.6e-8 + 3 * 9e-8
    assert r["latency_s"] == pytest.approx(latency, rel=1e-12)
    assert r["bandwidth"] == 12.5e9
    assert r["time_s"] == pytest.approx(latency + 2**30 / 12.5e9, rel=1e-12)


def test_run_ring_cm02_matches_hand_computation(capsys):
    code, out, err = run_cli(capsys, "run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring",
                             "--elements", "1M", "--dtype", "int32", "--profile", "cm02", "--json", "-")
    assert code == 0, err
    r = json.loads(out)
    for key in JSON_KEYS:
        assert key in r
    assert r["verified"] is True and r["ranks"] == 8 and r["bytes"] == 2**22
    # 14 steps, each bounded by the inter-node flow: route latency + block / EDR
    block = 2**20 * 4 / 8
    latency = 2 * 7.5e-6 + 4 * 2.6e-8 + 3 * 9e-8
    assert r["time_s"] == pytest.approx(14 * (latency + block / 12.5e9), rel=1e-12)
    assert r["algbw"] == pytest.approx(r["bytes"] / r["time_s"])
    assert r["busbw"] == pytest.approx(r["algbw"] * 2 * 7 / 8)
    assert sum(r["phases"].values()) == pytest.approx(r["time_s"], rel=1e-12)


def test_run_human_summary(capsys):
    code, out, err = run_cli(capsys, "run", "--topology", "dgx1", "--nodes", "1", "--algorithm", "ring",
                             "--elements", "4096", "--placement", "study")
    assert code == 0, err
    assert "verified     yes" in out and "busbw" in out and "busiest links" in out


@pytest.mark.parametrize("argv, message", [
    (["run", "--algorithm", "nope", "--elements", "1K"], "unknown algorithm 'nope'"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--gpus", "99"], "--gpus 99 is larger than the 4 GPUs"),
    (["run", "--algorithm", "ring-ring", "--elements", "1K", "--group-size", "3"], "--group-size 3 does not divide the 4 ranks"),
    (["run", "--algorithm", "ring", "--elements", "-5"], "negative"),
    (["run", "--algorithm", "ring", "--elements", "12Q"], "is not a size"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--group-size", "2"], "--group-size is not used by algorithm 'ring'"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--topology", "torus"], "torus"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--profile", "fast"], "profile 'fast'"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--dtype", "int8"], "int8"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--nodes", "0"], "--nodes 0 must be >= 1"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--topology-opt", "warp=9"], "warp"),
    (["run", "--algorithm", "ring", "--elements", "1K", "--density", "1/128"], "apply to sparse algorithms"),
    (["p2p", "--src", "0", "--dst", "9"], "--dst 9 is out of range"),
])
def test_bad_input_is_one_line_and_nonzero(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and err.startswith("simcollective: error:")
    assert "Traceback" not in err


def test_malformed_topology_file(capsys, tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text("{not json")
    code, out, err = run_cli(capsys, "run", "--algorithm", "ring", "--elements", "1K", "--topology-file", str(bad))
    assert code == 2 and str(bad) in err


def test_topology_file_round_trip_runs(capsys, tmp_path):
    import topologies

    path = tmp_path / "dgx2.graphml"
    topologies.save(topologies.build("dgx2", 1), str(path))
    code, out, err = run_cli(capsys, "run", "--algorithm", "ring", "--elements", "64K", "--topology-file", str(path),
                             "--json", "-")
    assert code == 0, err
    assert json.loads(out)["ranks"] == 16


def test_listings(capsys):
    code, out, _ = run_cli(capsys, "algorithms")
    assert code == 0 and "ring" in out and "ring-ring" in out
    code, out, _ = run_cli(capsys, "topologies")
    assert code == 0
    for name in ("abci", "dgx1", "dgx2", "fat-tree", "dgx-h100"):
        assert name in out


def test_console_script_runs_in_a_subprocess():
    exe = os.path.join(os.path.dirname(sys.executable), "simcollective")
    proc = subprocess.run([exe, "run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring",
                           "--elements", "1K", "--json", "-"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verified"] is True
    proc = subprocess.run([exe, "run", "--algorithm", "ring"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--elements" in proc.stderr


def test_bit_identical_results_across_processes():
    """Same inputs and seed, two fresh interpreters (different hash seeds and memory
    layouts): the same simulated time to the last bit, under contention."""
    exe = os.path.join(os.path.dirname(sys.executable), "simcollective")
    argv = [exe, "run", "--topology", "abci", "--nodes", "4", "--algorithm", "sparse-ring-ring", "--elements", "256K",
            "--density", "1/64", "--dtype", "int32", "--profile", "smpi", "--json", "-"]
    outs = []
    for hashseed in ("1", "2"):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": hashseed})
        assert proc.returncode == 0, proc.stderr
        r = json.loads(proc.stdout)
        outs.append((float(r["time_s"]).hex(), r["phases"], r["messages"], r["message_bytes"]))
    assert outs[0] == outs[1]


def test_one_node_is_singular(capsys):
    from simcollective.cli import main

    assert main(["run", "--topology", "dgx-h100", "--algorithm", "ring", "--elements", "1K", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "on dgx-h100 (1 node): 8 ranks" in out
