"""A sweep whose disk fills or whose directory turns read-only mid-run stops with one line
naming the path and the OS error (exit 2), keeps what it wrote, and the next run resumes
exactly; the table's lock is taken on the file a symlink points to."""

import errno
import os

import simcollective.sweeps.execution as sweep_mod
from simcollective.cli import main
from simcollective.sweeps import read_results, run_sweep
from simcollective.sweeps.execution import _Lock

#: four points of one algorithm
TINY = '[fixed]\ntopology = "abci"\nalgorithm = "ring"\n[grid]\nelements = ["4K", "8K", "16K", "32K"]\n'


def _config(tmp_path):
    p = tmp_path / "cfg.toml"
    p.write_text(TINY)
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
