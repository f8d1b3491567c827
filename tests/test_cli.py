"""The command line end to end: real runs, JSON keys, listings, output paths checked before the
run, strict JSON, engineering notation, and one-line errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from simcollective.cli import main
from simcollective.simulate import JSON_KEYS
from tests.conftest import EXPECTED, HARDWARE, one_line_error, run_cli
from topologies import build


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


def test_topology_file_against_the_schema_is_refused(capsys, tmp_path):
    """A user's graph file is validated as it is read (a preset's graph only by its builder)."""
    import networkx as nx

    import topologies

    G = topologies.build("dgx2", 1)
    u, v = next(iter(G.edges))
    G.edges[u, v]["bandwidth"] = -1.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(nx.node_link_data(G, edges="links")))
    code, out, err = run_cli(capsys, "run", "--algorithm", "ring", "--elements", "64K", "--topology-file", str(path))
    assert code == 2 and str(path) in err and "bandwidth" in err and err.count("\n") == 1


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


def test_cli_algorithms_lists_every_collective(capsys):
    code, out, _ = run_cli(capsys, "algorithms")
    assert code == 0
    for coll, names in EXPECTED.items():
        section = out.split(f"\n{coll} (dense):")[1].split(" (sparse):")[0]
        for n in names - {"sparse-streams"}:
            assert f"  {n} " in section
    assert "allgather (sparse):\n  sparse-streams" in out


def test_cli_run_collective(capsys):
    code, out, _ = run_cli(capsys, "run", "--collective", "reduce", "--algorithm", "binomial-tree", "--root", "3",
                           "--bytes", "4K", "--topology", "abci", "--nodes", "1", "--json", "-")
    assert code == 0
    js = json.loads(out)
    assert js["collective"] == "reduce" and js["root"] == 3 and js["elements"] == 1024 and js["bytes"] == 4096


def test_cli_run_sparse_allgather(capsys):
    code, out, err = run_cli(capsys, "run", "--collective", "allgather", "--algorithm", "sparse-streams",
                             "--topology", "abci", "--elements", "4096", "--density", "1/128", "--allgather", "ring")
    assert code == 0, err
    assert "sparse-streams allgather" in out and "result density 0.0078" in out


def test_cli_bad_option_exit_2_one_line(capsys):
    code = main(["run", "--topology", "dgx-h100", "--nodes", "2", "--topology-opt",
                     "nics_per_node=0", "--algorithm", "ring", "--elements", "1K"])
    err = capsys.readouterr().err
    assert code == 2 and "nics_per_node" in err and "from 1 to 32" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_run_on_every_hardware_preset(capsys):
    for name in HARDWARE:
        code = main(["run", "--topology", name, "--nodes", "2", "--algorithm", "ring",
                         "--elements", "64K", "--dtype", "int32", "--json", "-"])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["verified"] is True
        assert out["ranks"] == 2 * build(name, 1).graph["gpus_per_node"]


RING = ["run", "--algorithm", "ring", "--elements", "1M"]


# -- output paths, before the run ---------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--json", "--trace"])
def test_run_output_path_checked_before_the_run(capsys, tmp_path, flag, monkeypatch):
    import simcollective.simulate as sim

    def boom(*a, **k):
        raise AssertionError("the run started before the output path was checked")

    monkeypatch.setattr(sim, "run_allreduce", boom)
    one_line_error(capsys, RING + [flag, tmp_path / "missing" / "r.json"], flag, "does not exist")
    one_line_error(capsys, RING + [flag, tmp_path], flag, "is a directory")
    one_line_error(capsys, RING + [flag, "/proc/r.json"], flag, "not writable")


def test_other_output_paths(capsys, tmp_path):
    one_line_error(capsys, ["p2p", "--json", tmp_path / "missing" / "p.json"], "--json", "does not exist")
    one_line_error(capsys, ["draw-topology", "-o", tmp_path / "missing" / "t.png"], "-o", "does not exist")
    one_line_error(capsys, ["draw-topology", "-o", "/proc/t.png"], "-o", "not writable")
    cfg = tmp_path / "s.toml"
    cfg.write_text('[fixed]\nalgorithm = "ring"\nelements = "1K"\n')
    one_line_error(capsys, ["sweep", cfg, "--out", "/proc/o.csv"], "--out", "not writable")


# -- strict JSON, times, figures ----------------------------------------------------------------

def test_one_rank_json_is_strict(capsys, tmp_path):
    code, out, err = run_cli(capsys, *RING, "--gpus", "1", "--json", "-")
    assert code == 0, err
    assert "Infinity" not in out and "NaN" not in out
    r = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert r["time_s"] == 0 and r["algbw"] is None
    assert "time_s is 0" in r["null_reasons"]["algbw"]


def test_huge_times_in_engineering_notation():
    from simcollective.parsing import format_time

    assert format_time(3e300) == "3.000e+300 s"
    assert format_time(1234.5) == "1.234e+03 s"
    assert format_time(12.5) == "12.500 s"
    assert format_time(1.5e-3) == "1.500 ms"
    assert len(format_time(1e308)) < 20


# -- approximate results, effective busbw ---------------------------------------------------------

@pytest.mark.parametrize("argv, exact", [
    (["--algorithm", "ring", "--elements", "4K"], True),
    (["--algorithm", "sparse-ring", "--elements", "64K", "--density", "1/64"], True),
    (["--algorithm", "gtopk", "--elements", "64K", "--density", "1/64"], False),
    (["--algorithm", "sparse-ring-ring", "--nodes", "2", "--elements", "64K", "--density", "1/64", "--resparsify"],
     False),
])
def test_exact_flag_in_json(capsys, argv, exact):
    code, out, err = run_cli(capsys, "run", *argv, "--json", "-")
    assert code == 0, err
    assert json.loads(out)["exact"] is exact


def test_sparse_busbw_is_called_effective(capsys):
    code, out, err = run_cli(capsys, "run", "--algorithm", "sparse-ring", "--elements", "64K", "--density", "1/64")
    assert code == 0 and "effective busbw (dense equivalent)" in out
    code, out, err = run_cli(capsys, *RING)
    assert code == 0 and "effective" not in out and "busbw" in out


# -- what the command line imports: heavy optional packages only for the commands that use them

HEAVY = ("pandas", "matplotlib", "dask", "scipy", "tqdm")


def _loaded(code: str) -> list:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_importing_the_cli_imports_no_heavy_package():
    loaded = _loaded("import json, sys\nimport simcollective.cli\n"
                     f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY + ('numba',))!r})))")
    assert loaded == []


def test_a_dense_run_reaches_its_first_event_without_heavy_packages():
    # the packages imported when SimPy's kernel is first entered, for a 16-rank dense ring
    code = (
        "import json, os, sys\n"
        "import simpy.core\n"
        "def run(self, until=None):\n"
        f"    print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY + ('numba',))!r})))\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)\n"
        "simpy.core.Environment.run = run\n"
        "from simcollective.cli import main\n"
        "main(['run', '--topology', 'abci', '--nodes', '4', '--algorithm', 'ring', '--elements', '4096', '--quiet'])\n")
    assert _loaded(code) == []


# -- help and missing inputs (every collective named; what is missing in one line)

def _help(capsys, *argv):
    from simcollective.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_names_every_collective(capsys):
    from simcollective.algorithms.registry import COLLECTIVES, algorithms_for

    for argv in ((), ("run",), ("sweep",), ("bench",)):
        text = _help(capsys, *argv).replace("- ", "-")        # argparse wraps reduce-scatter as "reduce- scatter"
        assert all(c in text for c in COLLECTIVES), argv
    run = _help(capsys, "run").replace("- ", "-")
    for coll in COLLECTIVES[1:]:                              # --algorithm lists each collective's algorithms
        assert f"{coll}: {', '.join(sorted(algorithms_for(coll)))}" in run


@pytest.mark.parametrize("argv,message", [
    ([], "run needs --algorithm NAME (for allreduce: binomial-tree, double-binary-tree, ") ,
    (["--collective", "alltoall"], "run needs --algorithm NAME (for alltoall: bruck, direct, hierarchical, pairwise, smpi-basic-linear, "
                                   "smpi-bruck, smpi-pair, smpi-ring) "
                                   "and a size (--elements N or --bytes B)"),
    (["--algorithm", "ring"], "run needs a size (--elements N or --bytes B)"),
])
def test_run_without_an_algorithm_or_size_says_what_is_missing(capsys, argv, message):
    code, out, err = run_cli(capsys, "run", "--topology", "abci", *argv)
    assert code == 2 and out == ""
    assert err.startswith("simcollective: error: ") and message in err and len(err.strip().splitlines()) == 1
    assert "usage:" not in err
