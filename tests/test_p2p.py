"""``simcollective p2p`` shows the connection cap."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


def test_p2p_shows_the_connection_cap(capsys):
    code, out, err = run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9")
    assert code == 0, err
    assert ("  flow cap     20.000 GB/s per flow (one network connection: net_conn_bandwidth x net_connections)"
            in out.splitlines())
    res = json.loads(run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9",
                         "--json", "-")[1])
    assert res["flow_cap"] == 20e9 and res["time_s"] == pytest.approx(2.7e-6 + (1 << 30) / 20e9, rel=1e-12)
    plain = json.loads(run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                           "--json", "-")[1])
    assert "flow_cap" not in plain


NET = ["p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8", "--profile", "ideal"]
LAT, BW = 2.7e-6, 50e9        # the route's latency (6 hops) and its NIC bottleneck


def test_osu_table_latency_and_bandwidth_in_closed_form(capsys, tmp_path):
    path = tmp_path / "osu.csv"
    code, out, err = run_cli(capsys, *NET, "-b", "1", "-e", "4M", "--csv", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == "# Size            Latency (us)    Bandwidth (MB/s)"
    rows = [ln.split() for ln in lines[2:]]
    assert [int(r[0]) for r in rows] == [2**i for i in range(23)]          # osu_latency's sizes, 1 B to 4 MiB
    import csv

    with open(path, newline="") as fh:
        si = list(csv.DictReader(fh))
    for r, s in zip(rows, si):
        n = int(s["bytes"])
        # one message: latency + n / B; osu_bw: 64 messages at once, then a 4-byte reply
        assert float(s["time_s"]) == pytest.approx(LAT + n / BW, rel=1e-9)
        assert float(s["bandwidth"]) == pytest.approx(64 * n / (LAT + 64 * n / BW + LAT + 4 / BW), rel=1e-9)
        assert r[1] == f"{float(s['time_s']) * 1e6:.2f}" and r[2] == f"{float(s['bandwidth']) / 1e6:.2f}"


def test_osu_table_json_and_window(capsys):
    code, out, err = run_cli(capsys, *NET, "-b", "1K", "-e", "4K", "-f", "4", "--window", "1", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert res["schema_version"] == 1 and res["window"] == 1 and [r["bytes"] for r in res["rows"]] == [1024, 4096]
    for r in res["rows"]:          # a window of one: the message and its reply, one after the other
        assert r["bandwidth"] == pytest.approx(r["bytes"] / (r["time_s"] + LAT + 4 / BW), rel=1e-9)


@pytest.mark.parametrize("argv,message", [
    (["--bytes", "1M", "-b", "1", "-e", "4M"], "--bytes (one size) and -b/-e/-f/--window (a table) do not combine"),
    (["-b", "1"], "the OSU-style table needs both -b MIN and -e MAX"),
    (["-b", "8", "-e", "1", ], "-b 8 -e 1: give 0 <= -b <= -e"),
    (["-b", "1", "-e", "8", "-f", "1"], "-f 1 must be >= 2"),
    (["--csv", "-"], "--csv is not used with one size"),
])
def test_osu_table_bad_input(capsys, argv, message):
    code, out, err = run_cli(capsys, *NET, *argv)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_p2p_cap_is_the_stream_cap_times_the_streams_of_a_connection(capsys):
    """Two QPs a connection (``net_connections=2``): one connection carries twice the
    stream cap, and its time is the size at that rate after the latency."""
    res = json.loads(run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                             "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9",
                             "--topology-opt", "net_connections=2", "--json", "-")[1])
    assert res["flow_cap"] == 40e9 and res["time_s"] == pytest.approx(2.7e-6 + (1 << 30) / 40e9, rel=1e-12)
