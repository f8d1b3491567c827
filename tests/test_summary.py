"""The run summary: nccl-tests counts and bandwidths, and the progress bar on a terminal."""

import io
import json

import pytest

from simcollective import cli
from simcollective.algorithms import load_all
from simcollective.data.collectives import COLLECTIVES as DEFS
from simcollective.simulate import RunConfig, run
from tests.conftest import E, mesh_graph, sim


# -- sizes and bus bandwidth ------------------------------------------------------------------------
def test_nccl_tests_counts_and_factors():
    ag, rs, a2a, ar, bc = (DEFS[c] for c in ("allgather", "reduce-scatter", "alltoall", "allreduce", "broadcast"))
    # per-rank share floor(S / (P e)) rounded down to 16 bytes
    assert ag.count_from_bytes(1 << 20, 16, 4) == 16384
    assert rs.count_from_bytes(1000, 3, 4) == 80          # 83 -> 80 (320 bytes)
    assert a2a.count_from_bytes(1000, 3, 2) == 160        # 166 -> 160
    assert ag.count_from_bytes(255, 16, 4) == 0
    assert ar.count_from_bytes(1001, 8, 4) == 250
    assert ag.size_bytes(64, 16, 4) == 4096 and bc.size_bytes(64, 16, 4) == 256
    assert ar.busbw_factor(8) == 2 * 7 / 8
    for c in ("allgather", "reduce-scatter", "alltoall"):
        assert DEFS[c].busbw_factor(8) == 7 / 8
    for c in ("broadcast", "reduce"):
        assert DEFS[c].busbw_factor(8) == 1.0


def test_report_sizes_and_bandwidths_follow_nccl_tests():
    P, c = 4, 2**14
    rep = sim("allgather", "ring", P, c)
    assert rep["bytes"] == P * c * E and rep["count"] == c and rep["root"] == -1
    assert rep["algbw"] == pytest.approx(P * c * E / rep["time_s"])
    assert rep["busbw"] == pytest.approx(rep["algbw"] * (P - 1) / P)
    rep = sim("broadcast", "binomial-tree", P, c, root=2)
    assert rep["bytes"] == c * E and rep["root"] == 2 and rep["busbw"] == rep["algbw"]
    cfg = RunConfig(topology="t", collective="alltoall", algorithm="pairwise", bytes=1000, gpus=3, dtype="float16")
    rep = run(cfg, graph=mesh_graph(3))
    assert rep["count"] == 160 and rep["bytes"] == 960


load_all()


def test_bar_shows_percentage_of_the_total():
    buf = io.StringIO()
    p = cli._Progress(buf, delay=0)
    p.set_total(200)
    p(1.5e-3, 0, 50)
    p.bar.refresh()
    p.close()
    out = buf.getvalue()
    assert "25%" in out and "50.0/200" in out and "simulated 1.500 ms" in out


def test_bar_without_total_shows_the_count_only():
    buf = io.StringIO()
    p = cli._Progress(buf, delay=0)
    p.set_total(None)
    p(0.0, 0, 50)
    p.bar.refresh()
    p.close()
    out = buf.getvalue()
    assert "50.0 msg" in out and "%" not in out


class _TTY(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("extra, shown", [((), True), (("--quiet",), False), (("--json", "-"), False)])
def test_cli_shows_the_bar_on_a_terminal_only_without_quiet_or_json_stdout(monkeypatch, capsys, extra, shown):
    made = []

    class Spy(cli._Progress):
        def set_total(self, total):
            made.append(total)
            super().set_total(total)

    monkeypatch.setattr(cli, "_Progress", Spy)
    monkeypatch.setattr(cli.sys, "stderr", _TTY())
    code = cli.main(["run", "--topology", "fat-tree", "--nodes", "5", "--algorithm", "ring",
                     "--elements", "1000", *extra])
    assert code == 0
    assert made == ([40] if shown else [])
    if "--json" in extra:
        assert json.loads(capsys.readouterr().out)["messages"] == 40


def test_cli_shows_no_bar_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    made = []
    monkeypatch.setattr(cli, "_Progress", lambda *a, **k: made.append(1))
    assert cli.main(["run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring", "--elements", "64"]) == 0
    assert made == []
