"""Sweep execution: executors give the same rows, resume, failures recorded, lost workers,
killed sweeps, one sweep per file, truncated rows."""

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import simcollective.sweeps.execution as sweep_mod
from simcollective.cli import main
from simcollective.sweeps import expand_grid, load_config, read_results, run_sweep
from simcollective.sweeps.lock import TableLock as _Lock
from simcollective.sweeps.table import journal_rows as _journal_rows
from tests.conftest import TINY, _write


def _canon(df):
    """Everything but wall_s (the only executor-dependent column), sorted by key."""
    return df.drop(columns=["wall_s"]).sort_values("key").reset_index(drop=True)


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
algorithm = ["ring"]
gpus = [4, 5]
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
    assert "--gpus 5" in errors and "group-size 3" in errors      # each fails when its point runs
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


def _dying(real, marker_dir, elements, always):
    """A _run_group that kills its worker process for points with ``elements`` (once, or always)."""
    def run_group(points, base):
        if points[0]["elements"] == elements:
            marker = Path(marker_dir) / f"died-{os.getpid()}"
            if always or not any(Path(marker_dir).glob("died-*")):
                marker.touch()
                os._exit(1)
        return real(points, base)
    return run_group


def test_lost_worker_is_retried_and_never_recorded(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sweep_mod, "_run_group", _dying(sweep_mod._run_group, tmp_path, 4096, always=False))
    out = tmp_path / "r.csv"
    assert main(["sweep", str(_write(tmp_path, TINY)), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    assert list(tmp_path.glob("died-*"))         # a worker did die
    df = read_results(out)
    assert len(df) == 4 and df["ok"].all() and df["error"].isna().all()
    assert "WorkerDied" not in capsys.readouterr().out


def test_points_that_keep_killing_workers_are_counted_and_exit_nonzero(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sweep_mod, "_run_group", _dying(sweep_mod._run_group, tmp_path, 4096, always=True))
    out = tmp_path / "r.csv"
    code = main(["sweep", str(_write(tmp_path, TINY)), "--out", str(out), "--workers", "2", "--quiet"])
    captured = capsys.readouterr()
    assert code == 5
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "2 point(s) could not be finished: their worker process was lost" in err[0] and "Traceback" not in captured.err
    # the first round may lose one of them before the other starts; later rounds isolate each
    assert 2 * sweep_mod.MAX_ATTEMPTS - 1 <= len(list(tmp_path.glob("died-*"))) <= 2 * sweep_mod.MAX_ATTEMPTS
    df = read_results(out)
    assert sorted(df["elements"]) == [16384, 16384] and df["ok"].all()   # lost points are not rows
    # the next run retries exactly them
    monkeypatch.setattr(sweep_mod, "_run_group", sweep_mod._run_group.__closure__[0].cell_contents)
    assert main(["sweep", str(_write(tmp_path, TINY)), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    assert len(read_results(out)) == 4


def _children(pid):
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def _alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_workers_end_when_the_sweep_is_killed(tmp_path):
    cfg = _write(tmp_path, """
[fixed]
topology = "abci"
[grid]
nodes = [8, 9, 10, 11]
algorithm = ["ring"]
elements = ["4M", "8M"]
verify = ["symbolic"]
""")
    exe = Path(sys.executable).with_name("simcollective")
    proc = subprocess.Popen([str(exe), "sweep", str(cfg), "--out", str(tmp_path / "o.csv"), "--workers", "2",
                             "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    workers = []
    while time.time() < deadline and len(workers) < 2 and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert workers, "the sweep started no worker"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.1)
    assert not any(_alive(w) for w in workers)


def test_second_sweep_on_the_same_file_refuses(tmp_path, capsys):
    out = tmp_path / "r.csv"
    with _Lock(out):
        code = main(["sweep", str(_write(tmp_path, TINY)), "--out", str(out), "--quiet"])
        err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "being written by another sweep" in err and f"pid {os.getpid()}" in err
    assert not out.exists()
    assert main(["sweep", str(_write(tmp_path, TINY)), "--out", str(out), "--quiet", "--workers", "1"]) == 0


def test_rows_are_appended_not_rewritten_per_point(tmp_path, monkeypatch):
    writes = []
    real = sweep_mod.write_results
    monkeypatch.setattr(sweep_mod, "write_results", lambda rows, path: writes.append(len(rows)) or real(rows, path))
    df = run_sweep(_write(tmp_path, TINY), tmp_path / "r.csv", workers=1, progress=False)
    assert len(df) == 4
    assert writes == [4]                # once at the end, not after every point
    assert not (tmp_path / ".r.csv.journal").exists()


def test_truncated_row_runs_again(tmp_path):
    cfg = _write(tmp_path, TINY)
    out = tmp_path / "r.csv"
    run_sweep(cfg, out, workers=1, progress=False)
    text = out.read_text()
    out.write_text(text[: text.rstrip("\n").rfind(",", 0, len(text) - 200)] + "\n")    # cut the last row short
    assert len(read_results(out)) == 3
    again = run_sweep(cfg, out, workers=1, progress=False)
    assert again.attrs["summary"]["ran"] == 1 and len(again) == 4 and again["ok"].all()


TINY_RING = '[fixed]\ntopology = "abci"\nalgorithm = "ring"\n[grid]\nelements = ["4K", "8K", "16K", "32K"]\n'


def _config(tmp_path):
    p = tmp_path / "cfg.toml"
    p.write_text(TINY_RING)
    return p


def _one_line(capsys, argv, *needles):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)


def _clean(tmp_path):
    """The table of the same sweep run without faults, by key."""
    (tmp_path / "clean").mkdir()
    df = run_sweep(_config(tmp_path), tmp_path / "clean" / "r.csv", workers=1, progress=False)
    return dict(zip(df["key"], df["time_s"]))


class _FullDisk:
    """A journal whose disk fills half-way through its second row (a partial line is written)."""

    def __init__(self, fh):
        self.fh, self.budget = fh, None

    def write(self, data):
        if self.budget is None:
            self.budget = len(data) + len(data) // 2
        if len(data) > self.budget:
            self.fh.write(data[:self.budget])
            self.fh.flush()
            self.budget = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.budget -= len(data)
        return self.fh.write(data)

    def __getattr__(self, name):
        return getattr(self.fh, name)


def test_disk_full_mid_sweep_is_one_line_and_resumes_exactly(tmp_path, monkeypatch, capsys):
    want = _clean(tmp_path)
    out = tmp_path / "r.csv"

    def full_open(path, mode="r", *a, **k):
        fh = open(path, mode, *a, **k)
        return _FullDisk(fh) if str(path).endswith(".journal") else fh

    monkeypatch.setattr(sweep_mod, "open", full_open, raising=False)
    _one_line(capsys, ["sweep", _config(tmp_path), "--out", out, "--workers", "1", "--quiet"],
              "--out", str(out), "No space left on device (ENOSPC)", "run the same command again")
    monkeypatch.undo()
    kept = len(read_results(out)) if out.exists() else 0
    kept += len(sweep_mod.journal_rows(out))
    assert 1 <= kept < 4                                 # the rows finished before the disk filled
    df = run_sweep(_config(tmp_path), out, workers=1, progress=False)
    assert df.attrs["summary"]["skipped"] == kept and df.attrs["summary"]["ran"] == 4 - kept
    assert dict(zip(df["key"], df["time_s"])) == want and df["ok"].all()


def test_read_only_mid_sweep_is_one_line_and_resumes_exactly(tmp_path, monkeypatch, capsys):
    want = _clean(tmp_path)
    out = tmp_path / "r.csv"

    def read_only(rows, path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(tmp_path / ".r.csv.tmp1"))

    monkeypatch.setattr(sweep_mod, "write_results", read_only)
    _one_line(capsys, ["sweep", _config(tmp_path), "--out", out, "--workers", "1", "--quiet"],
              "--out", "cannot write", ".r.csv.tmp1", "Read-only file system (EROFS)")
    monkeypatch.undo()
    assert not out.exists() and len(sweep_mod.journal_rows(out)) == 4     # every row in the journal
    df = run_sweep(_config(tmp_path), out, workers=1, progress=False)
    assert df.attrs["summary"]["skipped"] == 4 and df.attrs["summary"]["ran"] == 0
    assert dict(zip(df["key"], df["time_s"])) == want


def test_permission_lost_on_the_journal_is_one_line(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.csv"

    def denied(path, mode="r", *a, **k):
        if str(path).endswith(".journal"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return open(path, mode, *a, **k)

    monkeypatch.setattr(sweep_mod, "open", denied, raising=False)
    _one_line(capsys, ["sweep", _config(tmp_path), "--out", out, "--workers", "1", "--quiet"],
              ".r.csv.journal", "Permission denied (EACCES)")


def test_a_second_sweep_through_a_symlink_is_refused(tmp_path, capsys):
    table = tmp_path / "t.csv"
    link = tmp_path / "link.csv"
    link.symlink_to(table)                               # dangling until the first sweep writes
    with _Lock(table):
        _one_line(capsys, ["sweep", _config(tmp_path), "--out", link, "--quiet"],
                  "--out", "link.csv", "t.csv", "being written by another sweep", f"pid {os.getpid()}")
    assert main(["sweep", str(_config(tmp_path)), "--out", str(link), "--quiet", "--workers", "1"]) == 0
    assert link.is_symlink() and len(read_results(table)) == 4     # written through the link, not over it
    assert not (tmp_path / ".link.csv.journal").exists() and not (tmp_path / ".link.csv.lock").exists()


def test_sweep_out_on_a_dangling_symlink_to_a_missing_directory(tmp_path, capsys):
    link = tmp_path / "r.csv"
    link.symlink_to(tmp_path / "missing" / "r.csv")
    _one_line(capsys, ["sweep", _config(tmp_path), "--out", link, "--quiet"], "--out", "a symlink to",
              "does not exist")


def test_a_hard_link_to_a_table_being_written_is_refused(tmp_path, capsys):
    """The lock is on the table's identity (device and inode), not only its resolved path: a
    hard link (another name, another directory) to a table a sweep holds is refused."""
    table = tmp_path / "t.csv"
    assert main(["sweep", str(_config(tmp_path)), "--out", str(table), "--quiet", "--workers", "1"]) == 0
    (tmp_path / "other").mkdir()
    link = tmp_path / "other" / "hard.csv"
    os.link(table, link)
    with _Lock(table):
        _one_line(capsys, ["sweep", _config(tmp_path), "--out", link, "--quiet"],
                  "--out", "hard.csv", "the same file (device", "being written by another sweep")
    assert main(["sweep", str(_config(tmp_path)), "--out", str(link), "--quiet", "--workers", "1"]) == 0
    assert len(read_results(link)) == 4
