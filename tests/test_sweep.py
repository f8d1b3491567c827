"""`simcollective sweep`: grid expansion, executors, resumability, failures, formats."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.sweeps import expand_grid, load_config, read_results, run_sweep
from simcollective.sweeps.table import journal_rows as _journal_rows

TINY = """
name = "tiny"
[fixed]
topology = "abci"
nodes = 1
[grid]
algorithm = ["ring", "ring-ring"]
elements = ["4K", "16K"]
"""


def _write(tmp_path, text, name="cfg.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _canon(df):
    """Everything but wall_s (the only executor-dependent column), sorted by key."""
    return df.drop(columns=["wall_s"]).sort_values("key").reset_index(drop=True)


def test_expand_grid_parses_sizes_fractions_and_auto_nodes():
    cfg = {"fixed": {"topology": "abci", "nodes": "auto", "density": "1/128"},
           "grid": {"gpus": [4, 8, 12], "algorithm": ["ring"], "elements": ["32M", 1024]}}
    pts = expand_grid(cfg)
    assert len(pts) == 6
    assert {p["elements"] for p in pts} == {32 * 2**20, 1024}
    assert {p["density"] for p in pts} == {1 / 128}
    assert [p["nodes"] for p in pts if p["elements"] == 1024] == [1, 2, 3]
    assert len({p["key"] for p in pts}) == 6
    # keys are stable and do not depend on how a value was written
    again = expand_grid({"fixed": {"topology": "abci", "nodes": "auto", "density": 0.0078125},
                         "grid": {"gpus": [4, 8, 12], "algorithm": ["ring"], "elements": [33554432, "1K"]}})
    assert sorted(p["key"] for p in pts) == sorted(p["key"] for p in again)


def test_union_of_grids_and_duplicates():
    cfg = {"fixed": {"elements": "1K"}, "grid": [{"algorithm": ["ring", "ring-ring"]}, {"algorithm": ["ring"]}]}
    assert [p["algorithm"] for p in expand_grid(cfg)] == ["ring", "ring-ring"]


@pytest.mark.parametrize("cfg, fragment", [
    ({"fixed": {"elemnts": "1K", "algorithm": "ring"}}, "'elemnts'"),
    ({"fixed": {"elements": "1K"}, "grid": {"algoritm": ["ring"]}}, "'algoritm'"),
    ({"fixed": {"elements": "1K", "algorithm": "ring"}, "grids": []}, "'grids'"),
])
def test_unknown_key_is_named(cfg, fragment):
    with pytest.raises(UserInputError) as exc:
        load_config(cfg)
    assert fragment in str(exc.value)
    assert "allowed:" in str(exc.value)


@pytest.mark.parametrize("cfg, fragment", [
    ({"fixed": {"elements": "32X", "algorithm": "ring"}}, "elements"),
    ({"fixed": {"elements": "1K"}, "grid": {"algorithm": "ring"}}, "must be a list"),
    ({"fixed": {"elements": "1K", "algorithm": "ring"}, "grid": {"algorithm": ["ring"]}}, "both"),
    ({"fixed": {"algorithm": "ring"}}, "sets no 'elements' or 'bytes'"),   # both ways to give the size
    ({"fixed": {"elements": "1K", "algorithm": "ring", "density": "1/0"}}, "density"),
])
def test_bad_values_are_errors(cfg, fragment):
    with pytest.raises(UserInputError) as exc:
        load_config(cfg)
    assert fragment in str(exc.value)


def test_unknown_key_cli_one_line(tmp_path, capsys):
    cfg = _write(tmp_path, '[fixed]\nalgorithm = "ring"\nelements = "1K"\nchunksize = "1M"\n')
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'chunksize'" in err and "chunk_size" in err


def test_local_processes_and_dask_give_the_same_rows(tmp_path):
    distributed = pytest.importorskip("distributed")
    cfg = _write(tmp_path, TINY)
    local = run_sweep(cfg, tmp_path / "local.csv", workers=2, progress=False)
    assert len(local) == 4 and local["ok"].all()
    assert local.attrs["summary"]["ok"] == 4
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        dask = run_sweep(cfg, tmp_path / "dask.csv", scheduler=cluster.scheduler_address, progress=False)
    pd.testing.assert_frame_equal(_canon(local), _canon(dask))
    inproc = run_sweep(cfg, tmp_path / "inproc.csv", workers=1, progress=False)
    pd.testing.assert_frame_equal(_canon(local), _canon(inproc))
    # the files on disk agree too
    pd.testing.assert_frame_equal(_canon(read_results(tmp_path / "local.csv")),
                                  _canon(read_results(tmp_path / "dask.csv")))


def test_table_columns(tmp_path):
    df = run_sweep({"fixed": {"topology": "abci", "algorithm": "ring", "elements": "4K", "density": "1/8"}},
                   tmp_path / "one.csv", workers=1, progress=False)
    row = df.iloc[0]
    for col in ("key", "topology", "nodes", "algorithm", "elements", "ok", "error", "ignored", "time_s",
                "algbw", "busbw", "verified", "messages", "wall_s", "phase_reduce-scatter", "phase_allgather",
                "bytes_nvlink", "top_links", "options"):
        assert col in df.columns, col
    assert "phases" not in df.columns and "bytes_by_link_type" not in df.columns
    assert row["ok"] and row["ignored"] == "density"      # dense algorithm: density not passed
    assert row["time_s"] > 0 and row["verified"]


def test_resume_after_partial_run(tmp_path):
    cfg = _write(tmp_path, TINY)
    out = tmp_path / "r.csv"
    first = run_sweep(cfg, out, workers=1, progress=False, max_points=2)
    assert len(first) == 2 and first.attrs["summary"]["left"] == 2
    kept = first.set_index("key")["time_s"]
    final = run_sweep(cfg, out, workers=1, progress=False)
    assert final.attrs["summary"]["skipped"] == 2 and final.attrs["summary"]["ran"] == 2
    assert len(final) == 4 and final["key"].is_unique
    assert set(final["key"]) == {p["key"] for p in expand_grid(load_config(cfg))}
    assert (final.set_index("key").loc[kept.index, "time_s"] == kept).all()
    # a third run does nothing
    again = run_sweep(cfg, out, workers=1, progress=False)
    assert again.attrs["summary"]["ran"] == 0
    pd.testing.assert_frame_equal(_canon(final), _canon(again))


def test_killed_sweep_resumes_without_loss_or_duplicates(tmp_path):
    cfg = _write(tmp_path, """
[fixed]
topology = "abci"
[grid]
nodes = [2, 3]
algorithm = ["ring", "ring-ring"]
elements = ["256K", "512K", "1M"]
""")
    out = tmp_path / "k.csv"
    exe = Path(sys.executable).with_name("simcollective")
    cmd = [str(exe), "sweep", str(cfg), "--out", str(out), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    partial = None
    journal = tmp_path / ".k.csv.journal"     # rows are appended there as points finish
    while time.time() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 1:
            partial = True
            break
        time.sleep(0.01)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert partial is not None
    partial = pd.DataFrame(_journal_rows(out))
    assert len(partial) >= 1
    assert not out.exists() or len(read_results(out)) >= 0     # the table is never half-written
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    final = read_results(out)
    assert len(final) == 12 and final["key"].is_unique and final["ok"].all()
    assert set(partial["key"]) <= set(final["key"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".k.csv.tmp")]   # stale temp files removed
    merged = partial.set_index("key")["time_s"]
    assert (final.set_index("key").loc[merged.index, "time_s"] == merged).all()


def test_failing_points_are_recorded_and_the_rest_completes(tmp_path, capsys):
    cfg = _write(tmp_path, """
[fixed]
topology = "abci"
nodes = 1
elements = "4K"
[[grid]]
algorithm = ["ring", "no-such-algorithm"]
[[grid]]
algorithm = ["ring-ring"]
group_size = [3, 2]
""")
    out = tmp_path / "f.csv"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "2 failed" in printed
    df = read_results(out)
    assert len(df) == 4
    bad = df[~df["ok"]]
    assert len(bad) == 2
    errors = " ".join(bad["error"])
    assert "no-such-algorithm" in errors and "group-size 3" in errors
    good = df[df["ok"]]
    assert sorted(good["algorithm"]) == ["ring", "ring-ring"] and good["time_s"].gt(0).all()


def test_parquet_output(tmp_path):
    cfg = _write(tmp_path, TINY)
    df = run_sweep(cfg, tmp_path / "t.parquet", workers=1, progress=False, max_points=3)
    assert (tmp_path / "t.parquet").stat().st_size > 0
    back = pd.read_parquet(tmp_path / "t.parquet")
    assert len(back) == 3 and back["ok"].all()
    df = run_sweep(cfg, tmp_path / "t.parquet", workers=1, progress=False)
    assert len(df) == 4 and df["key"].is_unique


def test_out_file_must_be_a_results_table(tmp_path):
    out = tmp_path / "x.csv"
    out.write_text("a,b\n1,2\n")
    with pytest.raises(UserInputError, match="not a sweep results table"):
        run_sweep({"fixed": {"algorithm": "ring", "elements": "1K"}}, out, workers=1, progress=False)


def test_smoke_config_expands():
    root = Path(__file__).resolve().parents[1]
    pts = expand_grid(root / "experiments" / "smoke.toml")
    assert 2 <= len(pts) <= 12


def test_dry_run_lists_points(tmp_path, capsys):
    cfg = _write(tmp_path, TINY)
    assert main(["sweep", str(cfg), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("4 points") and "ring-ring" in out
    assert not (tmp_path / "cfg.csv").exists()


def test_every_registered_algorithm_option_is_a_sweep_input(tmp_path, capsys):
    """protocol and channels (options of the registry) sweep like group_size: passed to the
    algorithms that declare them, ignored (and said so) for the others."""
    import json

    cfg = {"fixed": {"topology": "abci", "nodes": 1, "elements": "64K"},
           "grid": {"algorithm": ["nccl-ring", "ring"], "protocol": ["simple"]}}
    df = run_sweep(cfg, tmp_path / "r.csv", workers=1, progress=False)
    assert len(df) == 2 and df["ok"].all()
    nccl = df[df["algorithm"] == "nccl-ring"].iloc[0]
    ring = df[df["algorithm"] == "ring"].iloc[0]
    assert pd.isna(nccl["ignored"]) and ring["ignored"] == "protocol"
    assert main(["run", "--topology", "abci", "--nodes", "1", "--algorithm", "nccl-ring", "--protocol", "simple",
                 "--elements", "64K", "--json", "-"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert nccl["time_s"] == cli["time_s"] and nccl["protocol"] == cli["protocol"] == "simple"
    assert json.loads(nccl["options"]) == cli["options"] == {"protocol": "simple"}
    import simcollective as sc

    df = sc.sweep(algorithm=["nccl-ring"], elements="64K", channels=[2])
    assert df["ok"].all() and int(df["channels"].iloc[0]) == 2


def test_points_without_the_new_options_keep_their_keys_and_columns(tmp_path):
    """A point that sets neither protocol nor channels has the key it has in existing tables
    (which then resume), and a sweep that sets neither has no column for them."""
    (p,) = expand_grid({"fixed": {"algorithm": "ring", "elements": "4K"}})
    assert "protocol" not in p and "channels" not in p
    assert p["key"] == "9e849bab90fa7b67"         # the key this point has in existing tables
    df = run_sweep(_write(tmp_path, TINY), tmp_path / "r.csv", workers=1, progress=False)
    assert "protocol" not in df.columns and "channels" not in df.columns
