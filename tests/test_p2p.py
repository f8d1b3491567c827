"""``simcollective p2p`` shows the connection cap."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli


def test_p2p_shows_the_connection_cap(capsys):
    code, out, err = run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9")
    assert code == 0, err
    assert "  flow cap     20.000 GB/s per flow (one network connection: net_conn_bandwidth)" in out.splitlines()
    res = json.loads(run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9",
                         "--json", "-")[1])
    assert res["flow_cap"] == 20e9 and res["time_s"] == pytest.approx(2.7e-6 + (1 << 30) / 20e9, rel=1e-12)
    plain = json.loads(run_cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                           "--json", "-")[1])
    assert "flow_cap" not in plain
