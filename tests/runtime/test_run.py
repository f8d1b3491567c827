"""Running ranks: deadlock reports, unreceived messages, errors propagating, determinism,
progress reports, ``--timing study``."""

import numpy as np
import pytest

import topologies
from simcollective.algorithms import load_all
from simcollective.algorithms.registry import REGISTRY
from simcollective.errors import DeadlockError, SimCollectiveError
from simcollective.network.engine import Network, SimEnvironment
from simcollective.placement import resolve_placement
from simcollective.profiles import load_profile
from simcollective.runtime import barrier_offsets, run_ranks
from simcollective.simulate import RunConfig, run_allreduce
from simcollective.simulate import run as simulate_run
from tests.conftest import Blob, mesh_graph


load_all()


class _Recorder:
    def __init__(self):
        self.total = "unset"
        self.calls = []

    def set_total(self, total):
        assert not self.calls, "the total comes before the first report"
        self.total = total

    def __call__(self, now, done, posted):
        self.calls.append((now, done, posted))


def test_progress_gets_the_total_first_and_reaches_it():
    rec = _Recorder()
    report = simulate_run(RunConfig(topology="fat-tree", nodes=6, algorithm="ring", elements=1000), progress=rec)
    assert rec.total == 2 * 6 * 5 == report["messages"]
    assert rec.calls[-1][2] == rec.total and rec.calls[-1][0] == report["time_s"]
    assert [c[2] for c in rec.calls] == sorted(c[2] for c in rec.calls)


def test_progress_total_is_none_without_a_hook(monkeypatch):
    import dataclasses

    algo = REGISTRY[("allreduce", "ring")]
    monkeypatch.setitem(REGISTRY, ("allreduce", "ring"), dataclasses.replace(algo, messages=None))
    rec = _Recorder()
    simulate_run(RunConfig(topology="fat-tree", nodes=4, algorithm="ring", elements=4096), progress=rec)
    assert rec.total is None and rec.calls[-1][2] == 24


IDEAL = load_profile("ideal")


def run(main, P=4, profile=IDEAL, graph=None, args=lambda r: ()):
    g = graph or mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P] if graph is None else resolve_placement(g, "linear", P), main, args, profile)


def test_deadlock_names_every_blocked_rank_and_what_it_waits_for():
    def main(comm):
        if comm.rank == 0:
            yield comm.recv(1, tag=7)
        elif comm.rank == 1:
            yield comm.send(2, Blob(10**6), tag=3)  # rendezvous: rank 2 never receives
        else:
            return None

    with pytest.raises(DeadlockError) as exc:
        run(main, P=3)
    msg = str(exc.value)
    assert "rank 0 waits for: recv from rank 1 (tag 7, world)" in msg
    assert "rank 1 waits for: send of 1000000 B to rank 2 (tag 3, world)" in msg
    assert "rank 2 waits" not in msg


def test_unreceived_eager_message_is_an_error():
    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, Blob(8))
        return None

    with pytest.raises(SimCollectiveError, match="never received"):
        run(main, P=2)


def test_same_inputs_give_bit_identical_results():
    from simcollective.simulate import RunConfig, run_allreduce

    cfg = RunConfig(topology="abci", nodes=2, algorithm="ring-ring", elements=10007, dtype="float32", profile="smpi")
    a, b = run_allreduce(cfg), run_allreduce(cfg)
    assert a["time_s"] == b["time_s"] and a["phases"] == b["phases"]
    for x, y in zip(a.result.outputs[3], b.result.outputs[3]):
        assert np.array_equal(x, y)


def test_an_error_in_a_rank_propagates():
    def main(comm):
        yield comm.compute(1.0)
        if comm.rank == 1:
            raise ValueError("rank 1 broke")
        return comm.rank

    with pytest.raises(ValueError, match="rank 1 broke"):
        run(main, P=2)


def test_unreceived_messages_report_the_lowest_receiving_rank():
    def main(comm):
        if comm.rank == 3:
            yield comm.send(2, Blob(8), tag=4)
            yield comm.send(1, Blob(8), tag=6)
            yield comm.send(1, Blob(8), tag=6)
        return None

    with pytest.raises(SimCollectiveError, match=r"2 message queue\(s\) never received, e.g. rank 3 -> rank 1 \(tag 6, world\)"):
        run(main, P=4)


M = 2**20


def run_fields(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def test_barrier_offsets_are_route_latencies_times_the_zero_byte_factor():
    g = topologies.build("abci", 4, {})
    gpus = [n for n in g if g.nodes[n]["kind"] == "gpu"]
    for prof, k in (("cm02", 1.0), ("smpi", 2.01467)):
        net = Network(SimEnvironment(), g, load_profile(prof).network, "study")
        off = barrier_offsets(net, gpus, load_profile(prof).network)
        assert off[0] == 0.0
        assert off[1] == pytest.approx(9.000e-6 * k, abs=1e-15)      # same node, NVLink
        assert off[4] == pytest.approx(15.464e-6 * k, abs=1e-15)     # n1: other leaves, FBB 0
        assert off[8] == pytest.approx(15.232e-6 * k, abs=1e-15)     # n2: same leaf
        assert off[10] == pytest.approx(24.232e-6 * k, abs=1e-15)    # n2 GPU 2: via n2 GPU 0


def test_timing_study_abci8_ring():
    # docs/study.md: ABCI 8 ring 19.007 -> 19.022 ms under CM02
    base = dict(topology="abci", nodes=2, algorithm="ring", elements=32 * M, dtype="int32", profile="cm02",
                routing="study", verify="symbolic")
    t0 = run_fields(**base)
    t1 = run_fields(**base, timing="study")
    assert t0["time_s"] == pytest.approx(19.006e-3, abs=2e-6)
    assert t1["time_s"] == pytest.approx(19.022e-3, abs=2e-6)
    assert sum(t1["phases"].values()) == pytest.approx(t1["time_s"], rel=1e-12)
    assert t1["timing"] == "study" and t0["timing"] == "simultaneous"


def test_timing_study_is_max_of_finish_minus_own_start():
    r = run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring", elements=M, dtype="int32",
                                profile="cm02", timing="study"))
    res = r.result
    assert res.starts[0] == 0.0 and max(res.starts) > 0
    assert r.fields["time_s"] == max(f - s for f, s in zip(res.finish, res.starts))


def test_the_collector_is_paused_inside_and_restored_as_it_was():
    import gc

    from simcollective.runtime.collector import collector_paused

    was = gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            with collector_paused():
                assert not gc.isenabled()
            assert gc.isenabled() is before
        gc.enable()
        with pytest.raises(ValueError), collector_paused():
            raise ValueError
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_a_large_run_leaves_its_objects_frozen_until_the_next_run(monkeypatch):
    """A run that leaves many objects (past FREEZE_ABOVE) leaves them frozen: the collector
    does not walk them, a reference cycle among them stays; the next run hands them back
    and collects them first. A run that leaves few freezes nothing."""
    import gc
    import weakref

    from simcollective.runtime import collector

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    monkeypatch.setattr(collector, "FREEZE_ABOVE", 1000)
    was = gc.isenabled()
    gc.enable()
    try:
        with collector.collector_paused(freeze=True):
            few = cycle()
        assert gc.get_freeze_count() == 0
        gc.collect()
        assert few() is None
        with collector.collector_paused(freeze=True):
            kept = [Node() for _ in range(5000)]
            ref = cycle()
        assert gc.get_freeze_count() > 0
        del kept
        gc.collect()
        assert ref() is not None          # frozen: never walked
        with collector.collector_paused(freeze=True):
            assert ref() is None          # handed back and collected before the next run
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_a_run_that_leaves_long_lists_in_few_objects_leaves_them_frozen(monkeypatch):
    """The entries a run says it leaves in lists (``pause.held``) count as objects do: a run
    leaving one list of 5,000 integers (one object) past FREEZE_ABOVE = 1000 leaves it
    frozen; the same list, unreported, freezes nothing."""
    import gc

    from simcollective.runtime import collector

    monkeypatch.setattr(collector, "FREEZE_ABOVE", 1000)
    was = gc.isenabled()
    gc.enable()
    try:
        gc.unfreeze()
        with collector.collector_paused(freeze=True):
            rows = list(range(5000))
        assert gc.get_freeze_count() == 0
        with collector.collector_paused(freeze=True) as pause:
            rows = list(range(5000))
            pause.held = len(rows)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_the_link_statistics_are_gathered_with_the_collector_paused(monkeypatch):
    """A run's results (one object a link, thousands at 16,384 GPUs: a collector pass over them
    cost more than the statistics themselves) are gathered with the collector paused, and the
    collector runs again afterwards."""
    import gc

    seen = []
    link_stats = Network.link_stats

    def watched(self):
        seen.append(gc.isenabled())
        return link_stats(self)

    monkeypatch.setattr(Network, "link_stats", watched)
    was = gc.isenabled()
    gc.enable()
    try:
        r = run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring", elements=M, engine="simpy"))
        assert seen == [False] and gc.isenabled() and r.fields["messages"] > 0
    finally:
        (gc.enable if was else gc.disable)()
