"""``bench --csv`` in the units of every CSV of the package (seconds, bytes/s, a sweep's
column names), while the printed table and ``--json`` keep nccl-tests' us and GB/s."""

from __future__ import annotations

import csv
import json

from simcollective.cli import main

BENCH = ["bench", "--collective", "allgather", "--topology", "dgx-h100", "--nodes", "1", "-g", "4",
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
