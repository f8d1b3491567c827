"""The compiled loop's sets of due times (arrays, not typed dicts), and the loop pausing
for room: simulated times stay bit-identical to the SimPy path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcollective.network import replay
from simcollective.network.replay_heaps import cdrop, cfirst, cgrow, cput, ctake, qgrow, qpush, sdel, sgrow, sput
from simcollective.simulate import RunConfig, run

from .test_replay import assert_identical, both

# times that share a first place in a small set (exact multiples, tiny and huge, zero)
TIMES = [0.0, 1.0, 2.0, 0.5, 3.0, 1e-6, 2e-6, 1e-6 + 2e-6, 3e-6, 1e300, 5e-324, 0.1, 0.2, 0.30000000000000004, 0.3]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(TIMES)), max_size=80), st.sampled_from([2, 4, 8]))
def test_set_of_times_matches_a_python_set(steps, places):
    """Adding and removing times (removal only of times in the set) leaves exactly the
    times of a Python set, whatever the collisions and wrap-arounds, with the set grown
    before it is more than half full."""
    keys, ref = np.full(places, -1.0), set()
    for add, t in steps:
        if add:
            if 2 * (len(ref) + 1) > keys.shape[0]:
                keys = sgrow(keys)
            assert sput(keys, t) == (t not in ref)
            ref.add(t)
        elif t in ref:
            sdel(keys, t)
            ref.discard(t)
        assert sorted(k for k in keys.tolist() if k >= 0.0) == sorted(ref)
        for u in TIMES:  # every time is found iff it is in the set (a second put adds nothing)
            if u in ref:
                assert not sput(keys, u)


def test_negative_zero_is_zero():
    keys = np.full(8, -1.0)
    assert sput(keys, 0.0) and not sput(keys, -0.0)



@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "take", "drop"]), st.sampled_from(TIMES)), max_size=120))
def test_calendar_gives_entries_in_time_then_arrival_order(steps):
    """Entries put at times (several at one time, times taken while others come) leave
    in (time, arrival) order, as from a heap of (time, arrival) pairs: ``ctake`` the
    earliest time's list up to a bound, ``cdrop`` the first entry of the earliest time;
    the calendar grows from 2 places before it is more than half full."""
    import heapq

    cal = (np.full(2, -1.0), np.empty((2, 2), np.int64), np.empty(2), np.empty(len(steps), np.int64))
    n, ref, x = 0, [], 0
    for what, t in steps:
        if what == "put":
            if 2 * (n + 1) > cal[0].shape[0]:
                cal = cgrow(cal, n)
            new = cput(cal, n, t, x)
            assert new == (t not in {u for u, _ in ref})
            n += new
            heapq.heappush(ref, (t, x))
            x += 1
        elif what == "take":
            first = ctake(cal, n, t)
            due = ref[0][0] if ref and ref[0][0] <= t else None
            got = []
            while first >= 0:
                got.append(first)
                first = cal[3][first]
            want = []
            while ref and due is not None and ref[0][0] == due:
                want.append(heapq.heappop(ref)[1])
            assert got == want
            n -= bool(want)
        elif ref:
            assert cfirst(cal) == ref[0][1] and cal[2][0] == ref[0][0]
            first, _ = heapq.heappop(ref)
            gone = not ref or ref[0][0] != first  # (its last entry)
            assert cdrop(cal, n) == gone
            n -= gone
        assert sorted(k for k in cal[0].tolist() if k >= 0.0) == sorted({u for u, _ in ref})


def test_queue_keeps_its_order_across_the_ring_and_growth():
    """The queue of entries made now: appended after a wrap-around and grown, it gives them
    back from its first place in the order they came."""
    q, head, n = (np.empty(4), np.empty(4, np.int64), np.empty(4, np.int64)), 3, 0
    for k in range(3):
        n = qpush(q[0], q[1], q[2], head, n, 1.0, k, 10 + k)
    q, head = qgrow(q[0], q[1], q[2], head, n), 0
    n = qpush(q[0], q[1], q[2], head, n, 1.0, 3, 13)
    assert q[1][:n].tolist() == [0, 1, 2, 3] and q[2][:n].tolist() == [10, 11, 12, 13]

CASES = [
    dict(topology="fat-tree", nodes=12, collective="alltoall", algorithm="pairwise", elements=40000),
    dict(topology="fat-tree", nodes=4, collective="alltoall", algorithm="direct", elements=4096),
    dict(topology="abci", nodes=2, collective="allreduce", algorithm="ring", elements=2**16, options={"chunk_size": 4096}),
    dict(topology="fat-tree", nodes=6, collective="allgather", algorithm="bruck", elements=16385, profile="cm02"),
    dict(topology="abci", nodes=2, collective="broadcast", algorithm="pipelined-chain", elements=40000,
         options={"chunk_size": 8192}),
]


@pytest.mark.parametrize("kw", CASES, ids=lambda kw: f"{kw['collective']}-{kw['algorithm']}")
def test_sets_that_start_tiny_grow_mid_run_with_the_same_times(monkeypatch, kw):
    """Sets of 4 places fill at once: ranks pause before a posting (at the start and
    mid-run) until the sets have grown, and every time is still SimPy's to the bit."""
    ref = run(RunConfig(engine="compiled", **kw))
    monkeypatch.setattr(replay, "SET_PLACES", 4)
    a, b = both(**kw)
    assert_identical(a, b)
    assert b.result.finish == ref.result.finish and b.result.events == ref.result.events


def test_many_completions_at_one_instant():
    """A ring over a 32-host fat-tree: the flows of a step start and end together (one
    wake-up takes them all), bit-identical to SimPy."""
    a, b = both(topology="fat-tree", nodes=32, algorithm="ring", elements=2**18)
    assert_identical(a, b)
    # one rate update per wake-up with new flows, as the SimPy engine does: far fewer than flows
    assert b.result.recomputations == a.result.recomputations <= b.result.flows // 8


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 999), st.integers(0, 999), st.integers(0, 2)), max_size=60),
       st.sampled_from([(4, 2), (1000, 3)]))
def test_distinct_messages_pairs_are_numpys_unique(msgs, shape):
    """The distinct (path) keys ``(src P + dst) V + via`` of the messages and each message's
    index among them: the table of places (``P^2 V`` near the messages' count) and the sort
    (far above it) give ``np.unique``'s keys and inverse (int32), shapes included."""
    from simcollective.network.replay import _distinct

    P, V = shape
    msgs = [(s % P, d % P, v % V) for s, d, v in msgs]
    src, dst, via = (np.array([m[i] for m in msgs], np.int32) for i in range(3))
    keys, inverse = _distinct(src, dst, via, P, V)
    ref_keys, ref_inverse = np.unique((src.astype(np.int64) * P + dst) * V + via, return_inverse=True)
    assert keys.dtype == np.int64 and inverse.dtype == np.int32
    assert keys.tolist() == ref_keys.tolist() and inverse.tolist() == ref_inverse.tolist()
    assert inverse.shape == src.shape
