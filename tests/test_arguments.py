"""Shared argparse: numbers out of range and conflicting options are one-line errors naming the
value and the allowed range; non-UTF-8 files refused. The one rule of every command: an option
given explicitly (whatever its value, the default included) that the chosen command, algorithm,
topology or profile does not use is an error, and so is a single-valued option given twice. End
to end through ``main``: exit 2, one line on stderr naming the option, no traceback, nothing run."""


import pytest

from simcollective.cli import main
from tests.conftest import one_line_error


RING = ["run", "--algorithm", "ring", "--elements", "1M"]


@pytest.mark.parametrize("argv, needles", [
    (["run", "--algorithm", "ring", "--elements", "1e400"], ["--elements", "1e400", "2^53"]),
    (["run", "--algorithm", "ring", "--elements", str(2**63)], ["--elements", "2^53"]),
    (["p2p", "--bytes", "1e400"], ["--bytes", "2^53"]),
    (["run", "--algorithm", "sparse-ring", "--elements", "1M", "--k", "1e400"], ["--k", "2^53"]),
    (RING + ["--chunk-size", "1e400"], ["--chunk-size", "2^53"]),
    (RING + ["--memory-budget", "1e400"], ["--memory-budget", "2^53"]),
    (RING + ["--seed=-1"], ["--seed", ">= 0"]),
    (RING + ["--seed", str(2**63)], ["--seed", "<="]),
    (RING + ["--density", "nan"], ["--density"]),
    (RING + ["--overlap", "nan"], ["--overlap", "[0, 1]"]),
    (["run", "--algorithm", "sparse-ring", "--elements", "1M", "--density", "1e400"], ["--density"]),
    # an element is 4 bytes: a 1-byte chunk would be a million messages of nothing
    (["run", "--algorithm", "binomial-tree", "--elements", "1M", "--chunk-size", "1"],
     ["--chunk-size 1", "float32", "4 bytes"]),
])
def test_numbers_out_of_range(capsys, argv, needles):
    one_line_error(capsys, argv, *needles)


@pytest.mark.parametrize("argv, needles", [
    (RING + ["--topology-file", "x.json", "--nodes", "2"], ["--nodes", "--topology-file"]),
    (RING + ["--topology-file", "x.json", "--topology", "dgx1"], ["--topology", "--topology-file"]),
    (RING + ["--topology-file", "x.json", "--topology-opt", "a=b"], ["--topology-opt", "--topology-file"]),
    (["p2p", "--topology-file", "x.json", "--nodes", "2"], ["--nodes", "--topology-file"]),
    (["run", "--algorithm", "sparse-ring", "--elements", "1M", "--k", "8", "--overlap", "0.5"],
     ["--overlap", "--workload topk"]),
    (RING + ["--overlap", "0.5"], ["--overlap", "ring"]),
    (RING + ["--inputs", "/tmp"], ["--inputs", "ring"]),
    (["run", "--algorithm", "sparse-ring", "--elements", "1M", "--k", "8", "--inputs", "/tmp"],
     ["--inputs", "--workload npy"]),
])
def test_conflicting_options_name_both(capsys, argv, needles):
    one_line_error(capsys, argv, *needles)


@pytest.mark.parametrize("kind", ["profile", "placement", "sweep"])
def test_non_utf8_files(capsys, tmp_path, kind):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe0,1\n")
    if kind == "profile":
        argv = RING + ["--profile", bad]
    elif kind == "placement":
        argv = RING + ["--placement", bad]
    else:
        bad = tmp_path / "bad.toml"
        bad.write_bytes(b'[fixed]\nalgorithm = "ring"\nelements = "\xff"\n')
        argv = ["sweep", bad, "--out", tmp_path / "o.csv"]
    one_line_error(capsys, argv, str(bad), "not UTF-8")



RING_H100 = ["run", "--topology", "dgx-h100", "--algorithm", "ring", "--elements", "1K"]
SMOKE = "experiments/smoke.toml"


def refused(capsys, argv, *needles):
    try:
        code = main(list(argv))
    except SystemExit as exc:       # an error argparse finds (its parser exits)
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and "error:" in err and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


# -- options given but not used ---------------------------------------------------------------------
@pytest.mark.parametrize("flag, value", [("--topology", "abci"), ("--nodes", "1"),
                                         ("--topology-opt", "gpus_per_node=4")])
def test_topology_file_refuses_preset_options_given_with_their_default(capsys, tmp_path, flag, value):
    # abci and 1 are the defaults: given, they count as given
    refused(capsys, ["run", "--topology-file", str(tmp_path / "m.json"), flag, value, "--algorithm", "ring",
                     "--elements", "1K"], flag, "--topology-file")


@pytest.mark.parametrize("command", [["p2p"], ["bench", "-b", "1K", "-e", "1K"]])
def test_every_command_refuses_preset_options_with_a_topology_file(capsys, tmp_path, command):
    refused(capsys, command + ["--topology-file", str(tmp_path / "m.json"), "--nodes", "1"],
            "--nodes", "--topology-file")


@pytest.mark.parametrize("extra, needles", [
    (["--workload", "uniform"], ["--workload", "'ring'", "sparse"]),        # the default, given
    (["--overlap", "0"], ["--overlap", "'ring'", "sparse"]),
    (["--density", "1/128"], ["--density", "apply to sparse algorithms"]),
    (["--group-size", "4"], ["--group-size", "'ring'", "--chunk-size"]),
    (["--protocol", "simple"], ["--protocol", "'ring'"]),
    (["--verify", "full", "--memory-budget", "1G"], ["--memory-budget", "--verify full"]),
    (["--verify", "symbolic", "--seed", "3"], ["--seed", "--verify symbolic"]),
    (["--study", "--timing", "simultaneous"], ["--timing simultaneous", "--study"]),
    (["--study", "--routing", "first"], ["--routing first", "--study"]),
])
def test_run_refuses_options_the_algorithm_does_not_use(capsys, extra, needles):
    refused(capsys, RING_H100 + extra, *needles)


def test_sparse_run_refuses_workload_options_of_another_workload(capsys):
    sparse = ["run", "--algorithm", "sparse-ring", "--elements", "64K", "--density", "1/128"]
    refused(capsys, sparse + ["--overlap", "0"], "--overlap", "--workload uniform", "topk")
    refused(capsys, sparse + ["--memory-budget", "1G"], "--memory-budget", "sparse")


def test_sweep_workers_with_scheduler_is_refused(capsys):
    refused(capsys, ["sweep", SMOKE, "--workers", "7", "--scheduler", "tcp://127.0.0.1:1"],
            "--workers", "--scheduler")


def test_sweep_dry_run_refuses_run_options(capsys):
    refused(capsys, ["sweep", SMOKE, "--dry-run", "--workers", "2"], "--workers", "--dry-run")
    assert main(["sweep", SMOKE, "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "9 points"


def test_topologies_nodes_without_show_is_refused(capsys):
    refused(capsys, ["topologies", "--nodes", "3"], "--nodes", "--show")
    assert main(["topologies", "--show", "dgx-h100", "--nodes", "3"]) == 0
    assert "dgx-h100 with 3 nodes" in capsys.readouterr().out


def test_algorithms_empty_collective_is_refused_with_the_allowed_values(capsys):
    refused(capsys, ["algorithms", "--collective", ""], "''", "allreduce, allgather, reduce-scatter, broadcast, "
                                                              "reduce, alltoall")


@pytest.mark.parametrize("argv, flags", [
    (RING_H100 + ["--json", "{p}", "--trace", "{p}"], ("--json", "--trace")),
    (RING_H100 + ["--json", "{p}", "--trace", "{d}/./out.json"], ("--json", "--trace")),
    (["bench", "-b", "1K", "-e", "1K", "--json", "{p}", "--csv", "{p}"], ("--json", "--csv")),
])
def test_two_outputs_on_one_path_are_refused_before_the_run(capsys, tmp_path, argv, flags):
    p = tmp_path / "out.json"
    refused(capsys, [a.format(p=p, d=tmp_path) for a in argv], *flags, "same file")
    assert not p.exists()


# -- repeated options -----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, needles", [
    (RING_H100 + ["--json", "a.json", "--json", "b.json"], ["--json", "given twice", "'a.json'", "'b.json'"]),
    (RING_H100 + ["--quiet", "--quiet"], ["--quiet", "given twice"]),
    (["bench", "-d", "float", "-d", "half"], ["-d/--datatype", "given twice"]),
    (["bench", "-d", "float", "--datatype", "half"], ["-d/--datatype", "given twice"]),
    (RING_H100 + ["--topology-opt", "gpus_per_node=4", "--topology-opt", "gpus_per_node=2"],
     ["--topology-opt", "'gpus_per_node' given twice"]),
])
def test_repeated_single_valued_option_is_refused(capsys, argv, needles):
    refused(capsys, argv, *needles)


def test_topology_opt_repeated_with_different_keys_is_allowed(capsys):
    assert main(["p2p", "--topology", "fat-tree", "--nodes", "4", "--topology-opt", "oversubscription=2",
                 "--topology-opt", "hosts_per_leaf=2", "--json", "-"]) == 0, capsys.readouterr().err


# -- --quiet, help, missing arguments -------------------------------------------------------------------------
def test_quiet_prints_one_line(capsys):
    assert main(RING_H100 + ["--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1
    assert out[0].startswith("ring allreduce on dgx-h100 (1 node): 8 ranks, 4.0 KiB, time ")
    assert "busbw" in out[0] and "verified" in out[0]


def test_help_names_every_collective(capsys):
    from simcollective.algorithms.registry import COLLECTIVES

    for argv in (["--help"], ["run", "--help"], ["sweep", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = " ".join(capsys.readouterr().out.split())
        assert all(c in text for c in COLLECTIVES), (argv, text[:300])


def test_run_without_algorithm_or_size_is_one_line(capsys):
    refused(capsys, ["run", "--topology", "dgx-h100"], "--algorithm")
    refused(capsys, ["run", "--algorithm", "ring"], "--elements", "--bytes")
