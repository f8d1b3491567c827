"""``simcollective sweep`` command: unknown keys, output files, dry runs, large grids."""

import pytest

import simcollective.sweeps.execution as sweep_mod
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.sweeps import run_sweep
from tests.conftest import TINY, _write


def test_unknown_key_cli_one_line(tmp_path, capsys):
    cfg = _write(tmp_path, '[fixed]\nalgorithm = "ring"\nelements = "1K"\nchunksize = "1M"\n')
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'chunksize'" in err and "chunk_size" in err


def test_out_file_must_be_a_results_table(tmp_path):
    out = tmp_path / "x.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(UserInputError, match="not a sweep results table"):
        run_sweep({"fixed": {"algorithm": "ring", "elements": "1K"}}, out, workers=1, progress=False)


def test_dry_run_lists_points(tmp_path, capsys):
    cfg = _write(tmp_path, TINY)
    assert main(["sweep", str(cfg), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("4 points") and "ring-ring" in out
    assert not (tmp_path / "cfg.csv").exists()


HUGE = """
[fixed]
topology = "abci"
[grid]
nodes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
elements = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
seed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
gpus = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
group_size = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
algorithm = ["ring", "ring-ring", "rabenseifner", "binomial-tree", "recursive-doubling", "double-binary-tree",
             "sparse-ring", "gtopk", "topk-allgather", "sparse-ring-ring"]
"""


def test_large_grid_needs_max_points_or_yes_and_dry_run_counts_instantly(tmp_path, capsys, monkeypatch):
    cfg = _write(tmp_path, HUGE)
    monkeypatch.setattr(sweep_mod, "expand_grid", lambda *a, **k: pytest.fail("a 10^6 grid was expanded"))
    assert main(["sweep", str(cfg), "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("1000000 points")
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "h.csv")]) == 2
    err = capsys.readouterr().err
    assert "1000000 points" in err and "--max-points" in err and "--yes" in err
    with pytest.raises(UserInputError, match="more than 10000"):
        run_sweep(cfg, tmp_path / "h.csv", progress=False)
