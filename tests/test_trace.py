"""Chrome traces (``run --trace``): tracks, phase sums, lanes, flow arrows, errors."""

import json

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.simulate import run_allreduce, RunConfig
from simcollective.trace import trace_events, write_trace


# -- traces ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def traced():
    return run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring-ring", elements=2**14,
                                   profile="smpi", trace=True))


def test_trace_tracks_and_phase_sums(traced, tmp_path):
    path = tmp_path / "t.json"
    write_trace(traced, path)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    P = traced.fields["ranks"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    rank_tracks = {tid: n for tid, n in names.items() if not n.endswith("p2p") and " p2p (" not in n}
    assert sorted(rank_tracks) == list(range(P))
    for r in range(P):
        assert rank_tracks[r] == f"rank {r} ({traced.result.placement[r]})"
    xs = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in xs)
    assert {e["name"] for e in xs if e["cat"] == "p2p"} == {"send", "recv"}
    for r in range(P):
        top = [e for e in xs if e["tid"] == r and e["cat"] == "phase" and e["args"]["depth"] == 0]
        assert {e["name"] for e in top} >= {"intra-reduce-scatter", "inter-allgather"}
        total_us = sum(e["dur"] for e in top)
        assert total_us == pytest.approx(traced.result.finish[r] * 1e6, rel=1e-9)
        # top-level spans tile [0, finish] without overlap
        top.sort(key=lambda e: e["ts"])
        for a, b in zip(top, top[1:]):
            assert a["ts"] + a["dur"] == pytest.approx(b["ts"], abs=1e-6)
        sends = [e for e in xs if e["cat"] == "p2p" and e["args"]["rank"] == r]
        assert sends and all(e["tid"] != r for e in sends)
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all("utilization %" in e["args"] for e in counters)


def test_trace_lanes_do_not_overlap(traced):
    doc = trace_events(traced)
    by_tid = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] == "p2p":
            by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_tid.values():
        spans.sort()
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert a1 <= b0 + 1e-9


def test_untraced_run_is_an_error():
    rep = run_allreduce(RunConfig(topology="abci", nodes=1, algorithm="ring", elements=1024))
    with pytest.raises(UserInputError, match="not traced"):
        trace_events(rep)


def test_run_trace_cli(tmp_path, capsys):
    path = tmp_path / "cli.json"
    assert main(["run", "--topology", "abci", "--nodes", "1", "--algorithm", "ring", "--elements", "4K",
                 "--trace", str(path), "--quiet"]) == 0
    doc = json.loads(path.read_text())
    assert any(e["ph"] == "X" and e["cat"] == "phase" for e in doc["traceEvents"])


# -- Perfetto traces ------------------------------------------------------------------------------------

def test_trace_has_flow_arrows_and_named_processes():
    from simcollective.simulate import RunConfig, run_allreduce
    from simcollective.trace import LINKS_PID, _LANE_TID, trace_events

    rep = run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring-ring", elements=2**14, trace=True))
    doc = trace_events(rep)
    evs = doc["traceEvents"]
    starts = {e["id"]: e for e in evs if e["ph"] == "s"}
    ends = {e["id"]: e for e in evs if e["ph"] == "f"}
    assert len(starts) == len(ends) == rep["messages"]
    for i, s in starts.items():
        f = ends[i]
        assert (s["tid"] - _LANE_TID) // 1000 == s["args"]["from"]     # on the sender's p2p track
        assert (f["tid"] - _LANE_TID) // 1000 == f["args"]["to"]       # on the receiver's
        assert s["ts"] <= f["ts"] and f["bp"] == "e"
    names = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[0].startswith("ring-ring allreduce") and names[LINKS_PID].startswith("links")
    assert all(e["pid"] == LINKS_PID for e in evs if e["ph"] == "C")
    threads = [e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"]
    assert sum(t.startswith("rank ") and "p2p" not in t for t in threads) == 8
