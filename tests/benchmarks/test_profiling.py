"""Missed-target profiles (``benchmarks/profiling.py``): points profiled, layers of files, compact output."""

from __future__ import annotations

import math

from benchmarks.profiling import compiled_names, format_profile, group_layers, layer_of, LAYERS, profile_point, top_functions
from benchmarks.targets import Context, S6_ANALOGUE, TARGETS
from tests.conftest import point


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
