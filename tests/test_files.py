"""Every user file is read through simcollective.files (a size limit checked with stat, a
nesting limit checked without recursion, binary content refused) and every output path is
resolved and checked before the run: each bad file or path is one line, exit 2, no traceback."""

import json
import os
import sys
from pathlib import Path

import pytest

import topologies
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.files import LIMITS, MAX_NESTING, check_nesting, load_json, load_toml, read_text

RING = ["run", "--algorithm", "ring", "--elements", "1K"]


def one_line_error(capsys, argv, *needles, code=2):
    got = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert got == code, (got, out, err)
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err.strip()


def _no_run(monkeypatch):
    """Fail the test if a simulation starts (the error must come before any long work)."""
    import simcollective.simulate as sim

    def boom(*a, **k):
        raise AssertionError("the run started before the bad input was refused")

    monkeypatch.setattr(sim, "run_allreduce", boom)


def _topology_json(tmp_path, name="t.json") -> Path:
    path = tmp_path / name
    topologies.save(topologies.abci(1), path)
    return path


# -- topology files ---------------------------------------------------------------------------

def test_topology_bandwidth_too_large_for_a_float(capsys, tmp_path):
    path = _topology_json(tmp_path)
    data = json.loads(path.read_text())
    data["edges"][0]["bandwidth"] = 10**400              # an integer literal of 401 digits
    path.write_text(json.dumps(data))
    one_line_error(capsys, RING + ["--topology-file", path], "bandwidth", "401 digits", "range of a float")


def test_topology_json_nested_deeply(capsys, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"nodes": [], "edges": [], "graph": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    one_line_error(capsys, RING + ["--topology-file", path], "--topology-file", "100002 levels deep",
                   f"at most {MAX_NESTING}")


def test_topology_graphml_nested_deeply(capsys, tmp_path):
    # GraphML nests graphs in nodes; NetworkX reads nested graphs recursively
    path = tmp_path / "deep.graphml"
    inner = '<node id="n"><graph edgedefault="directed">' * 5000 + "</graph></node>" * 5000
    path.write_text('<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
                    f'<graph edgedefault="directed">{inner}</graph></graphml>')
    one_line_error(capsys, RING + ["--topology-file", path], "--topology-file", f"more than {MAX_NESTING} levels")


def test_topology_file_over_the_size_limit_is_refused_from_stat(capsys, tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as fh:
        fh.truncate(327_000_000)                          # sparse: no disk used, nothing read
    one_line_error(capsys, RING + ["--topology-file", path], "--topology-file", "big.json",
                   "311.9 MiB is over the 64 MiB limit for a topology file")


def test_topology_file_binary(capsys, tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    one_line_error(capsys, RING + ["--topology-file", path], "--topology-file", "not UTF-8 text")


def test_topology_file_still_loads(capsys, tmp_path):
    path = _topology_json(tmp_path)
    assert main(RING + ["--topology-file", str(path)]) == 0, capsys.readouterr().err


# -- draw-topology --utilization-from ---------------------------------------------------------------

def test_utilization_from_nested_deeply(capsys, tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"links": ' + "[" * 100_000 + "]" * 100_000 + "}")
    one_line_error(capsys, ["draw-topology", "-o", tmp_path / "t.png", "--utilization-from", path],
                   "--utilization-from", "levels deep")
    assert not (tmp_path / "t.png").exists()


def test_utilization_from_binary(capsys, tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes(bytes(range(256)) * 4)
    one_line_error(capsys, ["draw-topology", "-o", tmp_path / "t.png", "--utilization-from", path],
                   "--utilization-from", "not UTF-8 text")


def test_utilization_from_huge(capsys, tmp_path):
    path = tmp_path / "run.json"
    with open(path, "wb") as fh:
        fh.truncate(LIMITS["run JSON"] + 1)
    one_line_error(capsys, ["draw-topology", "-o", tmp_path / "t.png", "--utilization-from", path],
                   "--utilization-from", "limit for a run JSON")


# -- sweep configs and profiles (TOML) ---------------------------------------------------------------

@pytest.mark.parametrize("text, needle", [
    ("[fixed]\nalgorithm = \"ring\"\n[grid]\nelements = " + "[" * 100_000 + "]" * 100_000, "levels deep"),
    ("[fixed]\nalgorithm = \"ring\"\nx = " + "{a = " * 5_000 + "1" + "}" * 5_000, "levels deep"),
    ("a" + ".a" * 100_000 + " = 1\n", "dotted key"),
])
def test_sweep_config_nested_deeply(capsys, tmp_path, text, needle):
    cfg = tmp_path / "s.toml"
    cfg.write_text(text)
    one_line_error(capsys, ["sweep", cfg, "--out", tmp_path / "o.csv"], "sweep config", needle)
    assert not (tmp_path / "o.csv").exists()


def test_profile_nested_deeply(capsys, tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text("[network]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line_error(capsys, RING + ["--profile", prof], "profile file", "levels deep")


def test_sweep_config_over_the_limit(capsys, tmp_path):
    cfg = tmp_path / "s.toml"
    with open(cfg, "wb") as fh:
        fh.truncate(LIMITS["sweep config"] + 1)
    one_line_error(capsys, ["sweep", cfg, "--out", tmp_path / "o.csv"], "1 MiB limit for a sweep config")


# -- nccl-tests logs ------------------------------------------------------------------------------------

def test_compare_on_a_huge_log_is_refused_from_stat(capsys, tmp_path):
    log = tmp_path / "big.log"
    with open(log, "wb") as fh:
        fh.truncate(2**30)                                # 1 GiB, sparse
    one_line_error(capsys, ["compare", log], "LOG", "1.0 GiB is over the 128 MiB limit for a nccl-tests log")


def test_a_log_over_64_mib_is_streamed_and_its_first_long_line_refused(capsys, tmp_path, monkeypatch):
    """A log is streamed, not read whole: a 100 MiB file (sparse: no newline) is refused at its
    first line, longer than 64 KiB, without reading the rest."""
    import simcollective.files as files

    monkeypatch.setattr(files, "read_text", lambda *a, **k: pytest.fail("the log was read whole"))
    log = tmp_path / "sparse.log"
    with open(log, "wb") as fh:
        fh.truncate(100 * 2**20)
    one_line_error(capsys, ["compare", log], "LOG", "line 1 is longer than 64 KiB", "give a text file")


def test_iter_lines_reads_blocks_as_splitlines_does(tmp_path, monkeypatch):
    import simcollective.files as files
    from simcollective.files import iter_lines

    monkeypatch.setattr(files, "_BLOCK", 7)              # lines and UTF-8 characters cut across blocks
    text = "a\r\nbé\n\ncc\rd\nlast é é"
    path = tmp_path / "t.txt"
    path.write_text(text, encoding="utf-8")
    assert list(iter_lines(path, "f")) == text.splitlines()
    path.write_bytes(b"ok\nok\n\xff\n")
    with pytest.raises(UserInputError, match=r"'.*t.txt' is not UTF-8 text \(line 3, byte 0"):
        list(iter_lines(path, "f"))
    monkeypatch.setattr(files, "MAX_LINE", 4)
    path.write_bytes(b"1234\n12345\n")
    with pytest.raises(UserInputError, match="line 2 is longer than 4 B"):
        list(iter_lines(path, "f"))


# -- the reader itself -----------------------------------------------------------------------------------

def test_nesting_check_ignores_brackets_in_strings_and_comments():
    check_nesting('{"a": "' + "[" * 1000 + '", "b": [[1]]}', "x", "json")
    check_nesting("# " + "[" * 1000 + "\na = '" + "{" * 1000 + "'\nb = \"\"\"" + "[" * 1000 + '"""\n', "x", "toml")
    check_nesting("v = 1.5\nw = 2.5\n[a.b.c]\nd = 1979-05-27T07:32:00.999\n", "x", "toml")
    with pytest.raises(UserInputError, match="65 levels deep"):
        check_nesting("[" * 65 + "]" * 65, "x", "json")
    check_nesting("[" * 64 + "]" * 64, "x", "json")
    check_nesting('["\\"' + "[" * 100 + '"]', "x", "json")          # an escaped quote inside the string
    with pytest.raises(UserInputError, match="levels deep"):       # an escaped backslash ends it
        check_nesting('["\\\\", ' + "[" * 100 + "]" * 100 + "]", "x", "json")


def test_nesting_check_does_not_recurse():
    import inspect

    real = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 40)      # a recursive scan would fail at once
    try:
        with pytest.raises(UserInputError, match="levels deep"):
            check_nesting("[" * 10**6 + "]" * 10**6, "x", "json")
    finally:
        sys.setrecursionlimit(real)


def test_loaders_on_good_files(tmp_path):
    (tmp_path / "a.json").write_text('{"a": [1, {"b": "[[[["}]}')
    (tmp_path / "a.toml").write_text('a = [1, 2]\n[b.c]\nd = "x"\n')
    assert load_json(tmp_path / "a.json", "f") == {"a": [1, {"b": "[[[["}]}
    assert load_toml(tmp_path / "a.toml", "f") == {"a": [1, 2], "b": {"c": {"d": "x"}}}
    with pytest.raises(UserInputError, match="is a directory"):
        read_text(tmp_path, "f")


def test_a_pipe_is_read_only_up_to_the_limit(tmp_path, monkeypatch):
    import simcollective.files as files

    monkeypatch.setitem(files.LIMITS, "file", 1000)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    pid = os.fork()
    if pid == 0:                                          # a writer that never stops
        try:
            with open(fifo, "wb") as fh:
                while True:
                    fh.write(b"x" * 4096)
        finally:
            os._exit(0)
    try:
        with pytest.raises(UserInputError, match="over the 1000 B limit"):
            read_text(fifo, "f")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


# -- output paths: symlinks followed, write errors one line ----------------------------------------------

def test_json_on_a_dangling_symlink_is_refused_before_the_run(capsys, tmp_path, monkeypatch):
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "missing" / "r.json")
    _no_run(monkeypatch)
    one_line_error(capsys, RING + ["--json", link], "--json", "a symlink to", "does not exist")


def test_json_on_a_symlink_loop_is_refused_before_the_run(capsys, tmp_path, monkeypatch):
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    _no_run(monkeypatch)
    one_line_error(capsys, RING + ["--json", tmp_path / "a.json"], "--json", "symlinks loop")


def test_json_through_a_dangling_symlink_into_a_directory_writes_the_target(capsys, tmp_path):
    (tmp_path / "d").mkdir()
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "d" / "r.json")
    assert main(RING + ["--json", str(link)]) == 0, capsys.readouterr().err
    assert link.is_symlink() and json.loads((tmp_path / "d" / "r.json").read_text())["time_s"] > 0


def test_draw_topology_on_a_dangling_symlink_is_refused_before_drawing(capsys, tmp_path, monkeypatch):
    import simcollective.drawings as drawings

    link = tmp_path / "t.png"
    link.symlink_to(tmp_path / "missing" / "t.png")
    monkeypatch.setattr(drawings, "draw_topology", lambda *a, **k: pytest.fail("drawn before the check"))
    one_line_error(capsys, ["draw-topology", "-o", link], "-o", "a symlink to", "does not exist")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_json_write_error_after_the_run_is_one_line(capsys):
    # /dev/full: every write fails with ENOSPC, a real disk-full error without filling a disk
    one_line_error(capsys, RING + ["--json", "/dev/full"], "--json", "/dev/full", "No space left on device (ENOSPC)")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_trace_write_error_is_one_line(capsys):
    one_line_error(capsys, RING + ["--trace", "/dev/full"], "--trace", "ENOSPC")
