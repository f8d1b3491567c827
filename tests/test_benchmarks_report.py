"""The benchmark's targets table and missed-target profiles (benchmarks/targets.py,
benchmarks/profiling.py, benchmarks/__main__.report_targets), on synthetic results."""

from __future__ import annotations

import math

import pytest

from benchmarks.__main__ import report_targets
from benchmarks.profiling import LAYERS, compiled_names, format_profile, group_layers, layer_of, profile_point, top_functions
from benchmarks.targets import S6_ANALOGUE, TARGETS, Context, evaluate, format_table, overheads


def point(wall, cpu=None, flows=100, sim_wall=None, sim_cpu=None, ranks=16, rss=2**28):
    return {"wall_s": wall, "cpu_s": wall if cpu is None else cpu, "flows": flows, "ranks": ranks,
            "sim_wall_s": wall / 2 if sim_wall is None else sim_wall,
            "sim_cpu_s": wall / 2 if sim_cpu is None else sim_cpu, "peak_rss": rss, "time_s": 1.0}


def rows_by_name(ctx):
    return {t.name: (measured, met) for t, measured, met in evaluate(ctx)}


def test_targets_are_one_record_each_with_unique_names():
    names = [t.name for t in TARGETS]
    assert len(names) == len(set(names))
    assert {"S1", "S2", "S3", "S3/msg", "S4", "S6", "E", "ring", "ST", "README", "JIT", "baseline"} == set(names)


def test_total_wall_met_and_not_met_and_missing_scenarios_skipped():
    res = {"S1/a": point(1.0, cpu=1.5), "S1/ring": point(1.5, cpu=2.0),  # 2.5 s < 3 s
           "S2/a": point(10.0), "S2/b": point(5.0)}                     # 15.0 s, not < 15 s
    rows = rows_by_name(Context(res))
    assert rows["S1"] == ("wall 2.5 s, cpu 3.5 s (total of 2 points)", True)
    assert rows["S2"][1] is False and rows["S2"][0].startswith("wall 15.0 s")
    # S3-S6, E did not run; JIT was not measured: left out. The baseline row is always there.
    assert set(rows) == {"S1", "S2", "baseline"}


def test_error_in_a_point_is_not_met():
    res = {"S1/a": point(0.5), "S1/b": {"error": "ValueError: x"}}
    measured, met = rows_by_name(Context(res))["S1"]
    assert not met and "S1/b" in measured


def test_s6_needs_both_time_and_memory():
    ok = rows_by_name(Context({"S6/x": point(100.0, rss=3_000_000_000)}))["S6"]
    fat = rows_by_name(Context({"S6/x": point(100.0, rss=4_000_000_000)}))["S6"]
    assert ok[1] is True and "peak RSS 3.00 GB" in ok[0]
    assert fat[1] is False


def test_cost_per_message_judged_on_cpu_and_needs_s3_and_s5():
    big = point(30.0, flows=2_000_000, sim_wall=20.0, sim_cpu=16.0, ranks=1024)   # 8 us cpu per message
    small = point(0.2, flows=8064, sim_wall=0.1, sim_cpu=8064 * 9e-6, ranks=64)   # 9 us cpu per message
    res = {"S3/ring fat-tree 1024 256M f32": big, "S5/ring P=64": small}
    measured, met = rows_by_name(Context(res))["S3/msg"]
    assert met and measured.startswith("cpu 8.0 vs 9.0 us/msg, wall 10.0 vs 12.4 us/msg")
    small["sim_cpu_s"] = 8064 * 7e-6
    assert rows_by_name(Context(res))["S3/msg"][1] is False
    assert "S3/msg" not in rows_by_name(Context({"S3/ring fat-tree 1024 256M f32": big}))


def test_overhead_targets_on_cpu_at_every_p():
    # bare event: 1 us wall, 1 us cpu; a message is 2 events
    e = {f"E/ring messages, no data P={P}": point(1.0, flows=1000, sim_wall=2 * 1000 * x * 1e-6,
                                                  sim_cpu=2 * 1000 * c * 1e-6, ranks=P)
         for P, x, c in ((16, 9.0, 4.0), (1024, 6.0, 5.0))}
    ctx = Context(e, bare_rate=1e6, bare_cpu_rate=1e6)
    assert overheads(e["E/ring messages, no data P=16"], 1e6, 1e6) == pytest.approx((9.0, 4.0))
    measured, met = rows_by_name(ctx)["E"]
    assert met and measured == "cpu 4.0-5.0x, wall 6.0-9.0x (worst P=1024)"
    e["E/ring messages, no data P=16"]["sim_cpu_s"] = 2 * 1000 * 5.1e-6
    assert rows_by_name(ctx)["E"][1] is False


def test_ring_target_uses_s5_ring_points_and_s3_only():
    res = {"S5/ring P=16": point(1.0, flows=100, sim_cpu=2 * 100 * 6e-6, ranks=16),
           "S5/sparse-ring-ring P=16": point(1.0, flows=100, sim_cpu=1.0, ranks=16)}  # 5000x: not a ring point
    measured, met = rows_by_name(Context(res, bare_rate=1e6, bare_cpu_rate=1e6))["ring"]
    assert met and measured.startswith("cpu 6.0-6.0x")
    res["S3/ring fat-tree 1024 256M f32"] = point(1.0, flows=100, sim_cpu=2 * 100 * 8e-6, ranks=1024)
    measured, met = rows_by_name(Context(res, bare_rate=1e6, bare_cpu_rate=1e6))["ring"]
    assert not met and "worst P=1024" in measured


def test_jit_and_baseline_rows():
    jit = ({"wall_s": 4.75, "cpu_s": 4.9, "import_s": 0.2}, {"wall_s": 0.58, "cpu_s": 0.7, "import_s": 0.2})
    rows = rows_by_name(Context({}, jit=jit, same=30, within=1))
    assert rows["JIT"] == ("first 4.75 s, cached 0.58 s (wall)", True)
    assert rows["baseline"] == ("30 of 31 bit-identical, 1 within tolerance", True)
    rows = rows_by_name(Context({}, jit=({"error": "boom"}, jit[1]), failed=["S1/a: differs"], same=2))
    assert rows["JIT"][1] is False
    assert rows["baseline"] == ("2 of 2 bit-identical, 0 within tolerance, 1 differ or failed", False)


def test_table_has_one_line_per_row_with_the_verdict():
    rows = evaluate(Context({"S1/a": point(5.0)}))
    lines = format_table(rows)
    assert len(lines) == 1 + len(rows)
    assert lines[1].rstrip().endswith("NOT MET") and lines[1].lstrip().startswith("S1: under 3 s")
    assert lines[2].rstrip().endswith("met") and not lines[2].rstrip().endswith("NOT MET")


def test_profile_points_itself_or_named_analogue():
    byname = {t.name: t for t in TARGETS}
    res = {"S1/gtopk": point(1.0), "S1/sparse-ring": point(2.0), "S1/ring": point(9.0),
           "S3/ring fat-tree 1024 256M f32": point(36.0), "S4/sparse-ring-ring abci 1024 32M d=1/1024": point(9.0),
           "S6/ring-ring fat-tree 4096 1G f32": point(57.0),
           "E/ring messages, no data P=256": point(1.0, flows=10, sim_cpu=1e-3),
           "E/ring messages, no data P=1024": point(18.0, flows=10, sim_cpu=2e-3)}
    ctx = Context(res, bare_rate=1e6, bare_cpu_rate=1e6)
    p = byname["S1"].profile(ctx)                      # the slowest sparse point (ring is dense)
    assert (p.label, p.kind, p.kwargs["algorithm"]) == ("S1/sparse-ring", "run", "sparse-ring")
    p = byname["S3"].profile(ctx)                      # 36 s: the 256-GPU analogue
    assert p.label == "S5/ring P=256" and p.kwargs["nodes"] == 256
    assert byname["S3/msg"].profile(ctx).key() == p.key()
    p = byname["S4"].profile(ctx)                      # 9 s: itself
    assert p.label.startswith("S4/") and p.kwargs["nodes"] == 256
    res["S4/sparse-ring-ring abci 1024 32M d=1/1024"]["wall_s"] = 126.0
    assert byname["S4"].profile(ctx).label == "S5/sparse-ring-ring P=256"
    assert byname["S6"].profile(ctx) == S6_ANALOGUE
    p = byname["E"].profile(ctx)                       # worst is P=1024 (18 s): P=256 instead
    assert (p.label, p.kind, p.kwargs) == ("E/ring messages, no data P=256", "E", {"P": 256})
    assert byname["JIT"].profile is None and byname["baseline"].profile is None


def test_layer_of_files():
    assert layer_of("/x/simcollective/network/engine.py") == "network engine"
    assert layer_of("/x/simcollective/runtime.py") == "runtime"
    assert layer_of("/x/simcollective/data/sparse.py") == "data"
    assert layer_of("/x/simcollective/algorithms/ring.py") == "algorithms"
    assert layer_of("/v/site-packages/simpy/core.py") == "SimPy"
    assert layer_of("/v/site-packages/numpy/core/fromnumeric.py") == "NumPy"
    assert layer_of("/v/site-packages/numba/core/dispatcher.py") == "compiled kernels"
    assert layer_of("/v/site-packages/llvmlite/binding/ffi.py") == "compiled kernels"
    assert layer_of("<frozen importlib._bootstrap>") == "imports/other"
    assert layer_of("~", "<method 'reduce' of 'numpy.ufunc' objects>") == "NumPy"
    assert layer_of("~", "<built-in method builtins.isinstance>") is None


def test_group_layers_attributes_builtins_to_their_main_caller():
    net = ("/x/simcollective/network/engine.py", 10, "wake")
    simpy_step = ("/v/simpy/core.py", 5, "step")
    rt = ("/x/simcollective/runtime.py", 3, "send")
    heappush = ("~", 0, "<built-in method _heapq.heappush>")
    ufunc = ("~", 0, "<method 'reduce' of 'numpy.ufunc' objects>")
    orphan = ("~", 0, "<built-in method builtins.len>")
    stats = {
        net: (10, 10, 2.0, 5.0, {}),
        simpy_step: (5, 5, 1.0, 3.0, {}),
        rt: (4, 4, 0.5, 0.5, {}),
        # called by SimPy (cumulative 0.3 s through it) and by the runtime (0.1 s): SimPy's
        heappush: (7, 7, 0.25, 0.25, {simpy_step: (5, 5, 0.2, 0.3), rt: (2, 2, 0.05, 0.1)}),
        ufunc: (3, 3, 0.75, 0.75, {net: (3, 3, 0.75, 0.75)}),   # NumPy's, whoever calls it
        orphan: (1, 1, 0.125, 0.125, {}),
    }
    layers = group_layers(stats)
    assert list(layers) == list(LAYERS)
    assert layers == {"network engine": 2.0, "compiled kernels": 0.0, "runtime": 0.5,
                      "data": 0.0, "algorithms": 0.0, "SimPy": 1.25, "NumPy": 0.75, "imports/other": 0.125}
    assert math.isclose(sum(layers.values()), sum(v[2] for v in stats.values()))
    top = top_functions(stats, 3)
    assert [t[1] for t in top] == [2.0, 1.0, 0.75]
    assert top[0][0] == "simcollective/network/engine.py:10(wake)" and top[0][2] == 10
    assert top[2][0] == "<method 'reduce' of 'numpy.ufunc' objects>"


def test_format_profile_is_compact():
    p = {"phases": {"resolve": 0.1, "simulation": 2.0}, "layers": dict.fromkeys(LAYERS, 0.0) | {"SimPy": 1.0, "runtime": 3.0},
         "sim_layers": dict.fromkeys(LAYERS, 0.0) | {"SimPy": 1.0, "runtime": 1.0},
         "top": [["f", 3.0, 10], ["g", 1.0, 5]], "calls": 9000, "sim_calls": 4000, "messages": 100}
    lines = format_profile(p)
    assert len(lines) == 4 + 2
    assert "whole run (4.00 s): runtime 75%, SimPy 25%" in lines[1]
    assert "simulation (2.00 s): " in lines[2] and "SimPy 50%" in lines[2] and "runtime 50%" in lines[2]
    assert "9,000 in all, 4,000 in the simulation for 100 messages: 40.0 calls per message" in lines[3]
    assert "150.0%" in lines[4]   # f: 3.0 s of the simulation's 2.0 s (synthetic)


def test_profile_point_runs_a_small_point_with_its_phases():
    p = profile_point("run", dict(topology="abci", nodes=1, algorithm="ring", elements=4096, dtype="float32"))
    assert list(p["phases"]) == ["resolve", "inputs", "simulation", "verification", "report"]
    assert p["messages"] == 2 * 3 * 4   # ring on 4 GPUs: 2 (P - 1) steps of 4 sends
    assert p["calls"] > p["sim_calls"] > p["messages"] and p["layers"]["SimPy"] > 0 and p["layers"]["runtime"] > 0
    # the simulation phase's own time is part of the whole run's, and it has no imports of the setup
    assert 0 < sum(p["sim_layers"].values()) < sum(p["layers"].values())
    assert p["sim_layers"]["runtime"] <= p["layers"]["runtime"] + 1e-9
    tops = [tt for _, tt, _ in p["top"]]
    assert len(tops) == 8 and tops == sorted(tops, reverse=True) and tops[0] <= sum(p["sim_layers"].values())
    e = profile_point("E", {"P": 4})
    assert list(e["phases"]) == ["setup", "simulation"] and e["messages"] == 24
    assert e["calls"] > e["sim_calls"] > e["messages"]


def test_report_targets_profiles_each_distinct_point_once():
    calls = []

    def fake_measure(target, kind, kwargs):
        calls.append((kind, kwargs))
        return {"wall_s": 1.0, "cpu_s": 1.0, "peak_rss": 2**30, "phases": {"simulation": 1.0},
                "layers": dict.fromkeys(LAYERS, 0.0) | {"runtime": 1.0}, "top": [["f", 1.0, 3]],
                "sim_layers": dict.fromkeys(LAYERS, 0.0) | {"runtime": 1.0},
                "calls": 50, "sim_calls": 30, "messages": 10}

    res = {"S3/ring fat-tree 1024 256M f32": point(36.0, flows=100, sim_cpu=1.0, ranks=1024),
           "S5/ring P=64": point(0.1, flows=100, sim_cpu=1e-4, ranks=64)}
    out = []
    rows = report_targets(Context(res, bare_rate=1e6, bare_cpu_rate=1e6), printer=out.append, run=fake_measure)
    missed = [t.name for t, _, met in rows if not met]
    assert missed == ["S3", "S3/msg", "ring"]
    assert calls == [("run", calls[0][1])] and calls[0][1]["nodes"] == 256   # S5 ring P=256, once
    text = "\n".join(out)
    assert "NOT MET: S3, S3/msg, ring" in text
    assert text.count("printed above for S3") == 2
    assert "3.0 calls per message" in text
    assert text.count("why (measured") == 3          # every missed target says why, shared profile or not
    out.clear()
    report_targets(Context(res, bare_rate=1e6, bare_cpu_rate=1e6), profile=False, printer=out.append, run=fake_measure)
    assert len(calls) == 1 and not any("profile for" in line for line in out)


def test_every_target_that_can_be_profiled_says_why():
    from benchmarks.targets import TARGETS

    assert [t.name for t in TARGETS if t.profile and not t.why] == []


def test_compiled_kernels_are_their_own_layer():
    from simcollective.data import merge_kernel

    code = merge_kernel.union.py_func.__code__
    assert (code.co_filename, "union") in compiled_names()
    kernel = (code.co_filename, code.co_firstlineno + 1, "union")
    helper = (code.co_filename, 5, "not_a_kernel")
    stats = {kernel: (2, 2, 0.5, 0.5, {}), helper: (1, 1, 0.25, 0.25, {})}
    layers = group_layers(stats, compiled_names())
    assert layers["compiled kernels"] == 0.5 and layers["data"] == 0.25
    assert group_layers(stats)["data"] == 0.75   # without the set: by file


def _killed_child():
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_measure_reports_a_child_that_dies_before_reporting():
    # it waited forever on the queue before (a child killed out of memory never reports)
    from benchmarks._harness import measure

    r = measure(_killed_child)
    assert "error" in r and "status -9" in r["error"]


def test_bare_simpy_rates_are_positive():
    from benchmarks._harness import simpy_event_cpu_rate, simpy_event_rate

    assert simpy_event_rate(1000) > 0 and simpy_event_cpu_rate(1000) > 0
