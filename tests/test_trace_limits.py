"""--trace-ranks and --trace-window: the trace limited to some ranks or a window of time."""

import json

import pytest

from simcollective.errors import UserInputError
from simcollective.simulate import RunConfig, run_allreduce
from simcollective.trace import parse_trace_ranks, parse_trace_window, trace_events
from tests.conftest import one_line_error, run_cli


@pytest.fixture(scope="module")
def traced():
    return run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring", elements=2**14, trace=True))


def _ranks_of(doc) -> set:
    return {ev["tid"] for ev in doc["traceEvents"] if ev.get("pid") == 0 and ev.get("tid", 10**9) < 100000}


def test_ranks_keep_only_those_tracks_and_their_arrows(traced):
    doc = trace_events(traced, ranks=frozenset({1, 2}))
    assert _ranks_of(doc) == {1, 2} and _ranks_of(trace_events(traced)) == set(range(8))
    arrows = [ev for ev in doc["traceEvents"] if ev.get("cat") == "message" and ev["ph"] == "s"]
    assert arrows and all({ev["args"]["from"], ev["args"]["to"]} <= {1, 2} for ev in arrows)   # ring: 1 -> 2
    assert len(json.dumps(doc)) < len(json.dumps(trace_events(traced))) / 2


def test_window_cuts_the_spans_to_it(traced):
    t = traced.fields["time_s"]
    lo, hi = 0.25 * t, 0.5 * t
    doc = trace_events(traced, window=(lo, hi))
    spans = [ev for ev in doc["traceEvents"] if ev["ph"] == "X"]
    assert spans
    for ev in spans:
        assert lo * 1e6 - 1e-6 <= ev["ts"] and ev["ts"] + ev["dur"] <= hi * 1e6 + 1e-6
    # every rank's top-level spans tile the window exactly
    for r in range(8):
        top = sum(ev["dur"] for ev in spans if ev["tid"] == r and ev["args"].get("depth") == 0)
        assert top == pytest.approx((hi - lo) * 1e6)


def test_parsing():
    assert parse_trace_ranks("3") == {0, 1, 2}
    assert parse_trace_ranks("0-2,7") == {0, 1, 2, 7} and parse_trace_ranks("5-5") == {5}
    assert parse_trace_window("1e-3:2e-3") == (1e-3, 2e-3) and parse_trace_window("1e-3:")[1] == float("inf")
    for bad in ("0", "-1", "a", "3-1", "", ","):
        with pytest.raises(UserInputError, match="--trace-ranks"):
            parse_trace_ranks(bad)
    for bad in ("1", "2:1", "a:b", "1:1", "nan:1"):
        with pytest.raises(UserInputError, match="--trace-window"):
            parse_trace_window(bad)


def test_cli_limits_and_refusals(tmp_path, capsys):
    run = ["run", "--nodes", "2", "--algorithm", "ring", "--bytes", "64K"]
    full, part = tmp_path / "all.json", tmp_path / "two.json"
    assert run_cli(capsys, *run, "--trace", full, "--quiet")[0] == 0
    assert run_cli(capsys, *run, "--trace", part, "--trace-ranks", "2", "--trace-window", "0:1", "--quiet")[0] == 0
    assert part.stat().st_size < full.stat().st_size / 2
    one_line_error(capsys, run + ["--trace-ranks", "2"], "--trace-ranks", "without --trace")
    one_line_error(capsys, run + ["--trace", tmp_path / "x.json", "--trace-ranks", "8-9"], "rank 9", "0..7")
    assert not (tmp_path / "x.json").exists()
