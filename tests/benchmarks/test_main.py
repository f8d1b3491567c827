"""``python -m benchmarks``: unknown scenarios refused, the S6 machine, missed targets profiled once per point."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import report_targets
from benchmarks.profiling import LAYERS
from benchmarks.targets import Context
from tests.conftest import point


def test_benchmark_runner_rejects_an_unknown_scenario(capsys):
    # a typo in --only must not run nothing and report success
    from benchmarks.__main__ import main

    for only in ("S9", "S1,s2", ","):
        with pytest.raises(SystemExit) as exc:
            main(["--only", only])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "unknown scenario" in err and "choose from S1,S2,S3,S4,S5,S6,E" in err


def test_s6_is_a_two_level_leaf_spine_of_4096_gpus():
    from benchmarks.allreduce import scenarios
    from simcollective.simulate import RunConfig, build_graph

    (label, kw), = scenarios({"S6"})["S6"]
    g = build_graph(RunConfig(topology=kw["topology"], nodes=kw["nodes"], topology_opts=kw["topology_opts"]))
    kinds = [a.get("kind") for _, a in g.nodes(data=True)]
    assert kinds.count("gpu") == 4096 and kw["options"]["group_size"] == 64 and kw["elements"] == 2**30
    assert sum(1 for n in g.nodes if str(n).startswith("leaf")) == 64


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
