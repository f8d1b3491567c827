"""Figures (`plot`), Chrome traces (`run --trace`) and topology drawings (`draw-topology`)."""

import json

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.figures import plot_results
from simcollective.simulate import RunConfig, run_allreduce
from simcollective.sweeps import run_sweep
from simcollective.trace import trace_events, write_trace

MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("res") / "r.csv"
    cfg = {"fixed": {"topology": "abci", "nodes": "auto", "elements": "64K"},
           "grid": {"gpus": [4, 8], "algorithm": ["ring", "ring-ring"], "seed": [1, 2]}}
    df = run_sweep(cfg, out, workers=1, progress=False)
    assert df["ok"].all()
    return out


def _check_file(path):
    data = path.read_bytes()
    assert len(data) > 1000
    assert data.startswith(MAGIC[path.suffix])


@pytest.mark.parametrize("ext", [".png", ".svg", ".pdf"])
def test_scaling_curve(results, tmp_path, ext):
    out = tmp_path / f"scaling{ext}"
    assert main(["plot", str(results), "--x", "gpus", "--y", "time_s", "--hue", "algorithm", "--logx", "--logy",
                 "-o", str(out)]) == 0
    _check_file(out)


def test_speedup_and_breakdown(results, tmp_path):
    out = tmp_path / "speedup.png"
    fig = plot_results(results, x="gpus", hue="algorithm", speedup_over="ring", out=out)
    _check_file(out)
    ax = fig.axes[0]
    assert "speedup over ring" in ax.get_ylabel()
    ring = [ln for ln in ax.get_lines() if ln.get_label() == "ring (baseline)"][0]
    assert list(ring.get_ydata()) == [1.0, 1.0]
    out = tmp_path / "breakdown.svg"
    fig = plot_results(results, x="gpus", hue="algorithm", breakdown=True, out=out)
    _check_file(out)
    assert fig.axes[0].get_ylabel().startswith("time per phase")
    out = tmp_path / "facets.pdf"
    plot_results(results, x="elements", y="busbw", hue="algorithm", facet="gpus", where=["seed=1"], out=out)
    _check_file(out)


def test_labels_have_units(results, tmp_path):
    fig = plot_results(results, x="gpus", y="time_s", hue="algorithm", where={"seed": 1})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "GPUs"
    assert ax.get_ylabel().startswith("allreduce time (") and ax.get_ylabel()[-3:] in ("us)", "µs)", "ms)")
    assert {t.get_text() for t in ax.get_xticklabels()} >= {"4", "8"}


def test_bad_column_is_one_line_error(results, tmp_path, capsys):
    code = main(["plot", str(results), "--x", "gpus", "--y", "tim_s", "-o", str(tmp_path / "x.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "'tim_s'" in err and "available:" in err and "time_s" in err
    with pytest.raises(UserInputError, match="'colour'"):
        plot_results(results, x="gpus", hue="colour")
    with pytest.raises(UserInputError, match="no row has that value"):
        plot_results(results, x="gpus", where=["algorithm=nope"])
    with pytest.raises(UserInputError, match=r"\.png, \.svg or \.pdf"):
        plot_results(results, x="gpus", out=tmp_path / "x.jpg")


def test_ambiguous_rows_are_an_error_but_seeds_average(results):
    with pytest.raises(UserInputError, match="differ in algorithm"):
        plot_results(results, x="gpus")
    fig = plot_results(results, x="gpus", hue="algorithm")     # two seeds per point: averaged
    assert "mean over seeds" in fig._suptitle.get_text()


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


# -- topology drawings -----------------------------------------------------------------------

def test_draw_topology(tmp_path, capsys):
    out = tmp_path / "abci.png"
    assert main(["draw-topology", "--topology", "abci", "--nodes", "2", "-o", str(out)]) == 0
    _check_file(out)
    run = tmp_path / "run.json"
    assert main(["run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring", "--elements", "64K",
                 "--json", str(run), "--quiet"]) == 0
    out2 = tmp_path / "util.png"
    assert main(["draw-topology", "--topology", "abci", "--nodes", "2", "-o", str(out2),
                 "--utilization-from", str(run)]) == 0
    _check_file(out2)
    capsys.readouterr()
    assert main(["draw-topology", "--topology", "abci", "-o", str(tmp_path / "x.gif")]) == 2
    assert ".png, .svg or .pdf" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["dgx1", "dgx2", "fat-tree", "dgx-h100"])
def test_layout_rows(name):
    import topologies

    from simcollective.drawings import layered_layout

    g = topologies.build(name, 2)
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    gpu_y = {pos[n][1] for n, a in g.nodes(data=True) if a["kind"] == "gpu"}
    sw_y = {pos[n][1] for n, a in g.nodes(data=True) if a["kind"] == "switch"}
    assert len(gpu_y) == (2 if name == "dgx1" else 1) and min(sw_y) > max(gpu_y)   # DGX-1: its cube-mesh rows
    assert len(set(pos.values())) == len(pos)            # no two nodes on one spot
