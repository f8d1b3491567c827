"""``simcollective job``: the example end to end (text, JSON, trace, timeline plot) and ``simcollective.job``."""

from pathlib import Path

import pytest

import simcollective as sc
from tests.conftest import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "experiments" / "job_tp_dp.toml"


def test_example_runs_verifies_and_reports_every_step_and_repeat(job_example):
    doc, _ = job_example
    assert doc["ranks"] == 16 and doc["verified"] is True
    assert [(s["step"], s["repeat"]) for s in doc["steps"]] == [
        (name, r) for name in ("tp_allreduce", "dp_reduce_scatter", "dp_allgather") for r in range(4)]
    assert len(doc["collectives"]) == 4 * 2 + 4 * 8 * 2            # 2 tp groups, 8 dp groups
    assert doc["communicators"]["tp"]["groups"] == 2 and doc["communicators"]["dp"]["groups"] == 8
    steps = {(s["step"], s["repeat"]): s for s in doc["steps"]}
    # TP (NVSwitch) and DP (the NICs) share no link: every TP allreduce takes its time alone
    # (to the rounding of end - start at a start > 0)
    assert [steps[("tp_allreduce", r)]["slowdown"] for r in range(4)] == pytest.approx([1.0] * 4, rel=1e-9)
    # the first reduce-scatter runs alone on the NICs; the next one overlaps the first
    # allgather there and is slower
    assert steps[("dp_reduce_scatter", 0)]["slowdown"] == pytest.approx(1.0, rel=1e-9)
    assert steps[("dp_reduce_scatter", 1)]["slowdown"] > 1.2
    assert steps[("tp_allreduce", 0)]["start_s"] == 0.0002           # its compute first
    assert steps[("dp_reduce_scatter", 0)]["start_s"] == steps[("tp_allreduce", 0)]["end_s"]
    assert doc["top_links"][0]["link_type"] == "infiniband"


def test_example_trace_has_a_process_per_communicator_and_a_track_per_group(job_example):
    _, trace = job_example
    events = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert procs[1].startswith("tp: tp, 2 group(s)") and procs[2].startswith("dp: dp, 8 group(s)")
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert threads[(1, 0)] == "tp 0 (ranks 0-7)" and threads[(1, 1000)] == "tp 1 (ranks 8-15)"
    assert threads[(2, 0)] == "dp 0 (ranks 0,8)" and threads[(2, 7000)] == "dp 7 (ranks 7,15)"
    spans = [e for e in events if e.get("ph") == "X"]
    assert len(spans) == 72 and all(e["cat"] == "collective" for e in spans)
    assert sum(1 for e in spans if e["pid"] == 1) == 8
    # a track's spans never overlap (overlapping collectives go on extra lanes)
    for key in threads:
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if (e["pid"], e["tid"]) == key)
        assert all(a[1] <= b[0] + 1e-6 for a, b in zip(mine, mine[1:]))   # (us, rounding)


def test_api_job_is_the_cli_job(job_example):
    doc, _ = job_example
    report = sc.job(EXAMPLE)
    assert [c["time_s"] for c in report.to_json()["collectives"]] == [c["time_s"] for c in doc["collectives"]]
    assert "tp_allreduce" in str(report)


def test_api_job_from_keywords():
    report = sc.job(topology="fat-tree", nodes=4, communicators={"pair": {"rule": "tp", "size": 2}},
                    steps=[{"name": "a", "communicator": "pair", "algorithm": "ring", "elements": 64}], alone=False)
    assert len(report.fields["collectives"]) == 2
    with pytest.raises(sc.UserInputError, match="give either a job or keywords"):
        sc.job(EXAMPLE, nodes=2)


def test_a_job_file_nested_too_deep_is_one_line(tmp_path, capsys):
    from tests.conftest import one_line_error

    path = tmp_path / "n.toml"
    path.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    one_line_error(capsys, ["job", str(path)], "nests 3000 levels", "at most 64")


def test_plot_draws_one_row_per_group_and_lanes_for_overlaps(tmp_path, capsys):
    from simcollective.job_command import _lanes, draw_timeline

    code, out, err = run_cli(capsys, "job", EXAMPLE, "--no-alone", "--plot", tmp_path / "t.png")
    assert code == 0 and (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG" and "timeline" in out
    f = sc.job(EXAMPLE, alone=False).fields
    fig = draw_timeline(f)
    rows = {(c["communicator"], c["group"]) for c in f["collectives"]}
    assert len(fig.axes[0].get_yticks()) == len(rows) == 10          # tp: 2 groups, dp: 8
    assert len(fig.axes[0].patches) == len(f["collectives"])
    two = [{"communicator": "a", "group": 0, "start_s": 0.0, "end_s": 2.0},
           {"communicator": "a", "group": 0, "start_s": 1.0, "end_s": 3.0},
           {"communicator": "a", "group": 0, "start_s": 2.0, "end_s": 4.0}]
    assert _lanes(two) == [(0, 2), (1, 2), (0, 2)]


def test_plot_refuses_an_unknown_format_and_links(tmp_path, capsys):
    code, _, err = run_cli(capsys, "job", EXAMPLE, "--plot", tmp_path / "t.txt")
    assert code == 2 and "--plot" in err and ".png, .pdf or .svg" in err
    code, _, err = run_cli(capsys, "job", EXAMPLE, "--links", "--plot", tmp_path / "t.png")
    assert code == 2 and "--plot is not used with --links" in err
