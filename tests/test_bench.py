"""``simcollective bench``: nccl-tests-like tables, JSON/CSV, verified runs, bad input."""

import csv
import json

import pytest

from simcollective.cli import main
from tests.conftest import run_cli


def test_cli_bench_table(capsys):
    code, out, err = run_cli(capsys, "bench", "--collective", "allgather", "--topology", "abci", "--nodes", "1",
                             "-b", "8", "-e", "64K", "-f", "4")
    assert code == 0, err
    lines = out.splitlines()
    assert "# Collective test starting: all_gather_perf" in lines
    assert lines[-1] == "# Collective test concluded: all_gather_perf"
    head = [i for i, ln in enumerate(lines) if ln.startswith("#       size")][0]
    assert lines[head] == ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                           "     time   algbw   busbw #wrong")
    rows = [ln for ln in lines if not ln.startswith("#")]
    # 8, 32, 128, ..., 32K, 128K > 64K: 7 sizes; per-rank share rounded to 16 bytes (P = 4)
    assert [int(r.split()[0]) for r in rows] == [0, 0, 128, 512, 2048, 8192, 32768]
    for r in rows:
        assert len(r) == 12 + 14 + 10 + 8 + 8 + 2 * (9 + 8 + 8 + 8)
        f = r.split()
        assert f[2:5] == ["float", "none", "-1"] and f[8] == "0" and f[12] == "0"
        size, t, algbw, busbw = int(f[0]), float(f[5]), float(f[6]), float(f[7])
        if size:
            assert algbw == pytest.approx(size / (t * 1e-6) / 1e9, abs=0.01)
            assert busbw == pytest.approx(algbw * 3 / 4, abs=0.01)


def test_cli_bench_dgx_h100_allgather_verified(capsys):
    """The every-collective comparison command, up to 4M: every row verified (#wrong 0), the
    count and size nccl-tests would use for 16 ranks."""
    code, out, err = run_cli(capsys, "bench", "--collective", "allgather", "--topology", "dgx-h100", "--nodes", "2",
                             "-b", "8", "-e", "4M", "-f", "4")
    assert code == 0, err
    assert "16 ranks on dgx-h100 (2 nodes)" in out
    assert "nThread 1 nGpus 1 minBytes 8 maxBytes 4194304 step: 4(factor)" in out
    rows = [ln.split() for ln in out.splitlines() if not ln.startswith("#")]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(0, 0), (0, 0), (0, 0), (512, 8), (2048, 32), (8192, 128),
                                                      (32768, 512), (131072, 2048), (524288, 8192), (2097152, 32768)]
    assert all(r[8] == "0" and r[12] == "0" for r in rows)
    times = [float(r[5]) for r in rows if int(r[1])]
    assert times == sorted(times) and times[0] > 0


def test_cli_bench_json_csv(capsys, tmp_path):
    csv_path = tmp_path / "rows.csv"
    code, out, _ = run_cli(capsys, "bench", "--collective", "broadcast", "-r", "2", "--topology", "abci",
                           "-b", "1K", "-e", "4K", "-f", "2", "--json", "-", "--csv", str(csv_path))
    assert code == 0
    rows = json.loads(out)
    assert [r["size"] for r in rows] == [1024, 2048, 4096]
    assert all(r["root"] == 2 and r["redop"] == "none" and r["wrong"] == 0 for r in rows)
    text = csv_path.read_text().splitlines()
    assert text[0].startswith("bytes,count,type,redop,root,time_s,algbw,busbw,wrong") and len(text) == 4


@pytest.mark.parametrize("argv,message", [
    (["--collective", "allgather", "--algorithm", "rabenseifner"], "allgather algorithms: bruck, direct"),
    (["--collective", "broadcast", "-r", "9"], "--root 9 is out of range"),
    (["--collective", "alltoall", "-r", "0"], "-r/--root applies to broadcast and reduce, not to alltoall"),
    (["-b", "1M", "-e", "8"], "-e 8 is below -b 1048576"),
    (["-b", "8", "-e", "1M", "-f", "1"], "-f 1 must be >= 2"),
    (["-b", "8", "-e", "1M", "-i", "0"], "-i 0 must be >= 1"),
    (["-d", "int8"], "-d int8: not simulated (a 1-byte type"),
    (["-d", "all"], "-d all: run one type per command"),
    (["-d", "quad"], "-d 'quad' is not supported; choose from: float, half, double, int32, bfloat16"),
    (["--collective", "gather"], "unknown collective 'gather'"),
])
def test_cli_bench_bad_input(capsys, argv, message):
    code, out, err = run_cli(capsys, "bench", "--topology", "abci", *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


BENCH = ["bench", "--collective", "allgather", "--topology", "dgx-h100", "--nodes", "1", "--procs", "1", "-g", "4",
         "-b", "64K", "-e", "4M", "-f", "8"]


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_bench_csv_is_si_and_equals_the_runs_json(capsys, tmp_path):
    path = tmp_path / "bench.csv"
    _cli(capsys, *BENCH, "--csv", str(path))
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[:9] == ["bytes", "count", "type", "redop", "root", "time_s", "algbw", "busbw", "wrong"]
    assert [int(r["bytes"]) for r in rows] == [65536, 524288, 4194304]
    for r in rows:
        run = json.loads(_cli(capsys, "run", "--collective", "allgather", "--topology", "dgx-h100", "--nodes", "1",
                              "--gpus", "4", "--algorithm", r["algorithm"], "--elements", r["count"],
                              "--json", "-"))
        assert run["bytes"] == int(r["bytes"])
        # the CSV writes Python's repr of the floats: they read back bit-identical
        assert float(r["time_s"]) == run["time_s"]
        assert float(r["algbw"]) == run["algbw"] and float(r["busbw"]) == run["busbw"]
        assert float(r["algbw"]) == int(r["bytes"]) / float(r["time_s"])      # bytes/s, not GB/s


def test_bench_table_and_json_keep_nccl_tests_units(capsys, tmp_path):
    path = tmp_path / "bench.csv"
    table = _cli(capsys, *BENCH, "--csv", str(path))
    with open(path, newline="") as fh:
        si = list(csv.DictReader(fh))
    rows = json.loads(_cli(capsys, *BENCH, "--json", "-"))
    assert [list(r)[:9] for r in rows][0] == ["size", "count", "type", "redop", "root", "collective", "algorithm",
                                               "ranks", "requested_bytes"]
    for r, s in zip(rows, si):
        assert r["time_us"] == float(s["time_s"]) * 1e6
        assert r["busbw"] == float(s["busbw"]) / 1e9
    line = next(ln for ln in table.splitlines() if ln.split() and ln.split()[0] == "4194304")
    assert rows[-1]['time_us'] < 100 and line.split()[5] == f"{rows[-1]['time_us']:.2f}" and line.split()[7] == f"{rows[-1]['busbw']:.2f}"


def test_plot_reads_a_bench_csv_in_gb_per_s(capsys, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import simcollective as sc

    path = tmp_path / "bench.csv"
    _cli(capsys, *BENCH, "--csv", str(path))
    with open(path, newline="") as fh:
        busbw = [float(r["busbw"]) for r in csv.DictReader(fh)]
    fig = sc.plot(path, x="bytes", y="busbw")
    (line,) = fig.axes[0].get_lines()
    assert list(line.get_ydata()) == [b / 1e9 for b in busbw]        # the axis says GB/s
    assert fig.axes[0].get_ylabel() == "bus bandwidth (GB/s)"


def test_a_guard_refusal_prints_nothing_but_its_line(capsys, monkeypatch):
    """The wall guard refuses before the header: stdout stays empty, stderr is one line, and
    the machine is built once (a 16,000-GPU preset is seconds of work per build)."""
    import simcollective.simulate as simulate

    monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", "1e-9")
    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    builds = []
    real = simulate.build_graph
    monkeypatch.setattr(simulate, "build_graph", lambda config: builds.append(1) or real(config))
    code, out, err = run_cli(capsys, "bench", "--topology", "abci", "-b", "1K", "-e", "4K")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "beyond the" in err and "--yes" in err
    assert len(builds) == 1


def test_an_nccl_bench_names_the_tuner_the_network_and_nccls_pick_per_size(capsys, tmp_path):
    """NCCL's algorithms: the footer names the NCCL version whose tuner ran, the network at the
    largest size and NCCL's pick over the sizes (consecutive sizes of one pick joined), each the
    run's own (its JSON rows carry them); other algorithms print no such line."""
    from simcollective.run_config import RunConfig
    from simcollective.simulate import run

    out = tmp_path / "b.json"
    code, text, err = run_cli(capsys, "bench", "--topology", "dgx-h100", "--nodes", "2", "--algorithm", "nccl",
                              "--profile", "nccl", "--nccl-version", "2.26", "-b", "1M", "-e", "4M", "-f", "2",
                              "--json", str(out))
    assert code == 0, err
    rows = json.loads(out.read_text())
    runs = [run(RunConfig(topology="dgx-h100", nodes=2, algorithm="nccl", profile="nccl", nccl_version="2.26",
                          elements=r["count"])).fields for r in rows]
    for row, f in zip(rows, runs):
        assert (row["nccl_algorithm"], row["protocol"], row["channels"]) == (f["algorithm_chosen"], f["protocol"],
                                                                           f["channels"])
        assert row["nccl_version"] == f["nccl_version"] and row["network"] == f["nccl_network"]
    footer = [ln for ln in text.splitlines() if ln.startswith("# NCCL")]
    assert footer[0].startswith(f"# NCCL {runs[-1]['nccl_version']}'s tuner (simulated); network at 4.0 MiB: ")
    picks = [f"{f['algorithm_chosen']}/{f['protocol']}/{f['channels']}ch" for f in runs]
    assert footer[1].startswith(f"# NCCL's pick: {picks[0]} at 1.0 MiB")
    assert footer[1].count(" at ") == len({p: 0 for p in picks}) and footer[1].endswith("4.0 MiB")
    code, text, err = run_cli(capsys, "bench", "--topology", "abci", "--nodes", "2", "--algorithm", "ring",
                              "-b", "1M", "-e", "2M")
    assert code == 0 and "# NCCL" not in text


def test_bench_and_compare_read_one_table_of_stand_in_types():
    """``bench -d bfloat16`` and a bfloat16 log in ``compare`` run the same stand-in type: one table."""
    from simcollective import bench_flags
    from simcollective.validation import nccltests

    assert bench_flags.STAND_INS is nccltests.STAND_INS and bench_flags.dtype_of("bfloat16") == ("bfloat16", "float16")
