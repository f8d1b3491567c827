"""The benchmark workloads measure what they claim."""

import pytest

from benchmarks.engine import ring_messages
from simcollective.simulate import RunConfig, run_allreduce


def test_engine_scenario_sends_exactly_the_ring_messages():
    # scenario E (no data operations) must be the ring's message pattern: same number of
    # messages and bytes, and the same simulated time (the ring's sums take no simulated
    # time under the ideal profile)
    e = ring_messages(16, elements=2**20)
    ring = run_allreduce(RunConfig(topology="fat-tree", nodes=16, algorithm="ring", elements=2**20,
                                   dtype="float32")).fields
    assert e["messages"] == ring["messages"] == 2 * 16 * 15
    assert e["time_s"] == ring["time_s"]


def test_filling_benchmark_problems_have_the_claimed_shape():
    # independent racks: the filling needs a pass per distinct level, so passes grow with
    # the racks; the all-to-all problem needs many passes
    from benchmarks.filling import all_to_all, racks, time_fill

    passes = [time_fill(racks(g), repeat=1, number=1)[1] for g in (1, 8)]
    assert passes[1] >= 6 * passes[0]
    assert time_fill(all_to_all(), repeat=1, number=1)[1] > 10


def test_benchmark_runner_rejects_an_unknown_scenario(capsys):
    # a typo in --only must not run nothing and report success
    from benchmarks.__main__ import main

    for only in ("S9", "S1,s2", ","):
        with pytest.raises(SystemExit) as exc:
            main(["--only", only])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert "unknown scenario" in err and "choose from S1,S2,S3,S4,S5,S6,E" in err


def test_jit_warmup_drives_the_array_store_and_the_component_solve():
    # the JIT compile time is measured on a run that calls every kernel: the per-flow
    # component solve and the array store (entered, with its solves)
    from benchmarks.jit import compile_all

    modes = compile_all()["modes"]
    assert modes["enter"] == 1 and modes["arrays"] > 0


def test_s6_is_a_two_level_leaf_spine_of_4096_gpus():
    from benchmarks.allreduce import scenarios
    from simcollective.simulate import RunConfig, build_graph

    (label, kw), = scenarios({"S6"})["S6"]
    g = build_graph(RunConfig(topology=kw["topology"], nodes=kw["nodes"], topology_opts=kw["topology_opts"]))
    kinds = [a.get("kind") for _, a in g.nodes(data=True)]
    assert kinds.count("gpu") == 4096 and kw["options"]["group_size"] == 64 and kw["elements"] == 2**30
    assert sum(1 for n in g.nodes if str(n).startswith("leaf")) == 64
