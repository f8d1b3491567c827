"""The array store inside the compiled loop against the SimPy engine's: bit-identical times
where the engine moves its flows into the store (and out again), each run entering the store
as often as the engine does."""

from __future__ import annotations

import pytest

from simcollective.network import array_mode, engine
from simcollective.network.tuning import Tuning
from simcollective.simulate import RunConfig, run
from tests.network.test_replay import assert_identical


def both_counted(tuning=None, **kw):
    """(SimPy report, compiled report, moves into the store on each) of one configuration,
    with the engine's thresholds ``tuning`` (None: the defaults)."""
    import simcollective.runtime.compiled as compiled

    enters, replays = [], []
    real_enter, real_replay = array_mode.ArrayModeMixin._enter_bulk, compiled.replay

    def counting_enter(self, now, low):
        enters.append(now)
        return real_enter(self, now, low)

    def keeping_replay(*a, **k):
        replays.append(real_replay(*a, **k))
        return replays[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(array_mode.ArrayModeMixin, "_enter_bulk", counting_enter)
        mp.setattr(compiled, "replay", keeping_replay)
        if tuning is not None:
            mp.setattr(engine, "DEFAULT_TUNING", tuning)
        a = run(RunConfig(engine="simpy", **kw))
        b = run(RunConfig(engine="compiled", **kw))
    return a, b, len(enters), replays[0].arrays


# configurations where the engine's default thresholds switch to the array store: NCCL's
# channels sharing the NICs across servers, all-to-all with every peer in flight at once
SWITCHING = [
    dict(topology="dgx-h100", nodes=2, algorithm="nccl", profile="nccl", elements=2**26),
    dict(topology="dgx-h100", nodes=2, algorithm="nccl-ring", profile="nccl", elements=2**26),
    dict(topology="dgx-h100", nodes=4, collective="alltoall", algorithm="direct", elements=2**14),
    dict(topology="abci", nodes=8, collective="alltoall", algorithm="direct", elements=2**12, profile="cm02"),
]


@pytest.mark.parametrize("kw", SWITCHING, ids=lambda kw: f"{kw['topology']}-{kw['nodes']}-{kw['algorithm']}")
def test_default_thresholds_enter_the_store_bit_identically(kw):
    a, b, simpy_enters, compiled_enters = both_counted(**kw)
    assert_identical(a, b)
    assert simpy_enters > 0 and compiled_enters == simpy_enters
    assert b.result.recomputations == a.result.recomputations


@pytest.mark.parametrize("bulk_off", [0, 3, 40])
def test_moving_in_and_out_is_bit_identical(bulk_off):
    # low thresholds: small runs enter the store and, unless bulk_off is 0, leave it again
    # (with bulk_off 40 right after entering); refresh 2 recomputes the store's sums every
    # other solve; a run may end inside the store (busy times from its arrays)
    tuning = Tuning(bulk_min=4, walk_limit=2, bulk_off=bulk_off, refresh=2)
    for kw in (dict(topology="fat-tree", nodes=16, collective="alltoall", algorithm="direct", elements=5000,
                    profile="cm02", routing="hash", topology_opts={"oversubscription": "4"}),
               dict(topology="dgx-h100", nodes=1, algorithm="nccl-ring", elements=2**18 + 3, profile="nccl"),
               dict(topology="abci", nodes=2, collective="alltoall", algorithm="direct", elements=2**16)):
        a, b, simpy_enters, compiled_enters = both_counted(tuning, **kw)
        assert_identical(a, b)
        assert simpy_enters > 0 and compiled_enters == simpy_enters
        assert b.result.recomputations == a.result.recomputations


def test_a_run_that_stays_in_the_store_keeps_its_busy_times():
    # bulk_off 0: once in, the flows never leave; every link's busy time comes from the store
    tuning = Tuning(bulk_min=0, walk_limit=0, bulk_off=0)
    a, b, simpy_enters, compiled_enters = both_counted(tuning, topology="abci", nodes=2, collective="alltoall",
                                                       algorithm="direct", elements=2**16 + 1)
    assert_identical(a, b)
    assert simpy_enters == compiled_enters == 1
    assert any(ls.busy_time > 0 for ls in b.result.links)
