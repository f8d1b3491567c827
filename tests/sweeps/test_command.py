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


# -- engine: a sweep key and --engine, the default of the points that set none --------------

ENGINES_CFG = """
[fixed]
topology = "abci"
nodes = 2
algorithm = "ring"
elements = "64K"
profile = "cm02"
"""


def test_a_sweep_over_both_engines_gives_bit_identical_times(tmp_path, capsys):
    import pandas as pd

    from tests.conftest import run_cli

    cfg = _write(tmp_path, ENGINES_CFG + '[grid]\nengine = ["compiled", "simpy"]\nseed = [1, 2]\n')
    out = tmp_path / "r.csv"
    code, _, err = run_cli(capsys, "sweep", cfg, "--out", out, "--workers", "1", "--quiet")
    assert code == 0, err
    df = pd.read_csv(out)
    assert df["ok"].all() and df["verified"].all() and len(df) == 4
    assert sorted(df["engine"]) == ["compiled", "compiled", "simpy", "simpy"]   # the path that ran
    by = {(r.engine, r.seed): r.time_s for r in df.itertuples()}
    for seed in (1, 2):
        assert by[("compiled", seed)] == by[("simpy", seed)] > 0          # equal to the bit


def test_engine_option_is_the_default_of_points_without_one(tmp_path, capsys):
    from tests.conftest import run_cli

    cfg = _write(tmp_path, ENGINES_CFG + '[[grid]]\nseed = [3]\n[[grid]]\nseed = [4]\nengine = ["compiled"]\n')
    code, out, err = run_cli(capsys, "sweep", cfg, "--engine", "simpy", "--dry-run")
    assert code == 0, err
    lines = out.splitlines()
    assert "seed=3" in lines[0] and "engine=simpy" in lines[0]
    assert "seed=4" in lines[1] and "engine=compiled" in lines[1]
    code, plain, _ = run_cli(capsys, "sweep", cfg, "--dry-run")
    assert "engine=" not in plain.splitlines()[0]        # not set: the run's auto, the key unchanged
    assert plain.split()[0] != out.split()[0]


@pytest.mark.parametrize("text, argv, needles", [
    ('engine = "simpy"\n', ["--engine", "compiled"], ("--engine is not used", "[fixed] engine")),
    ('[grid]\nengine = ["simpy"]\n', ["--engine", "auto"], ("--engine is not used", "every [grid] block")),
    ('engine = "fast"\n', [], ("[fixed] engine", "'fast'", "allowed: auto, compiled, simpy")),
])
def test_a_bad_or_unused_engine_is_one_line_before_any_point(tmp_path, capsys, text, argv, needles):
    from tests.conftest import one_line_error

    cfg = _write(tmp_path, ENGINES_CFG + text)
    out = tmp_path / "r.csv"
    one_line_error(capsys, ["sweep", cfg, "--out", out, "--workers", "1", "--quiet", *argv], *needles)
    assert not out.exists()


def test_engine_option_takes_only_the_three_engines(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sweep", str(_write(tmp_path, ENGINES_CFG)), "--engine", "fast", "--dry-run"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--engine" in err and "'fast'" in err and "'simpy'" in err


def test_a_sweep_draws_no_progress_bar_into_a_file(tmp_path, capsys):
    """stderr that is not a terminal (a log file, a pipe) gets no progress bar, as for run."""
    from tests.conftest import run_cli

    cfg = _write(tmp_path, ENGINES_CFG)
    code, _, err = run_cli(capsys, "sweep", cfg, "--out", tmp_path / "r.csv", "--workers", "1")
    assert code == 0, err
    assert "sweep " not in err and "pt/s" not in err and "\r" not in err
