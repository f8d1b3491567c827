"""Shared argparse: numbers out of range and conflicting options are one-line errors naming the
value and the allowed range; non-UTF-8 files refused."""

import pytest

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
