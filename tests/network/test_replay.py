"""The compiled event loop against the SimPy path: bit-identical simulated times.

Every case runs the same configuration twice, ``engine="simpy"`` (the reference) and
``engine="compiled"``, and compares every rank's finish time, the phases, the messages and
every link's bytes and busy time with ``==`` (no tolerance).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simcollective.errors import UserInputError
from simcollective.network import engine
from simcollective.network.tuning import Tuning
from simcollective.simulate import RunConfig, run

# (collective, algorithm, options) the compiled path takes (data-independent communication)
CASES = [
    ("allreduce", "ring", {}), ("allreduce", "ring", {"chunk_size": 4096}), ("allreduce", "recursive-doubling", {}),
    ("allreduce", "rabenseifner", {}), ("allreduce", "binomial-tree", {}), ("allreduce", "ring-ring", {"group_size": 2}),
    ("allreduce", "nccl-ring", {}), ("allgather", "ring", {}), ("allgather", "bruck", {}),
    ("allgather", "recursive-doubling", {}), ("allgather", "direct", {}), ("reduce-scatter", "ring", {}),
    ("reduce-scatter", "recursive-halving", {}), ("reduce-scatter", "direct", {}), ("broadcast", "binomial-tree", {}),
    ("broadcast", "pipelined-chain", {"chunk_size": 8192}), ("broadcast", "scatter-allgather", {}),
    ("broadcast", "nccl-ring", {}), ("reduce", "reduce-scatter-gather", {}), ("reduce", "pipelined-chain", {}),
    ("alltoall", "pairwise", {}), ("alltoall", "bruck", {}), ("alltoall", "direct", {}),
]
MACHINES = [("abci", 1), ("abci", 2), ("fat-tree", 4), ("fat-tree", 6), ("fat-tree", 12), ("dgx-h100", 1)]
# around the eager threshold (64 KiB) and the chunk sizes; odd counts split unevenly
ELEMENTS = [1, 5, 1000, 4096, 16384, 16385, 40000, 2**18 + 3]
# the engine's thresholds: the defaults, and low ones that take small runs into the array
# store and out of it (refresh 2: the store recomputes its sums every other solve)
TUNINGS = [None, Tuning(bulk_min=4, walk_limit=2, bulk_off=3, refresh=2), Tuning(bulk_min=0, walk_limit=0, bulk_off=0)]


def both(**kw):
    """(SimPy report, compiled report) of one configuration."""
    simpy = run(RunConfig(engine="simpy", **kw))
    compiled = run(RunConfig(engine="compiled", **kw))
    return simpy, compiled


def assert_identical(a, b) -> None:
    ra, rb = a.result, b.result
    assert b.fields["engine"] == "compiled" and a.fields["engine"] == "simpy"
    assert ra.finish == rb.finish
    assert a.fields["time_s"] == b.fields["time_s"]
    assert ra.phases == rb.phases and ra.phases_max == rb.phases_max
    assert (ra.messages, ra.message_bytes, ra.flows) == (rb.messages, rb.message_bytes, rb.flows)
    links = lambda r: sorted((ls.name, ls.bytes, ls.busy_time) for ls in r.links)  # noqa: E731
    assert links(ra) == links(rb)
    assert a.fields["verification"] == b.fields["verification"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), machine=st.sampled_from(MACHINES), elements=st.sampled_from(ELEMENTS),
       profile=st.sampled_from(["ideal", "cm02"]), routing=st.sampled_from(["first", "hash"]),
       tuning=st.sampled_from(TUNINGS))
def test_compiled_times_are_bit_identical(case, machine, elements, profile, routing, tuning):
    coll, algo, options = case
    topo, nodes = machine
    if algo.startswith("nccl"):
        profile = "nccl"
    kw = dict(topology=topo, nodes=nodes, collective=coll, algorithm=algo, elements=elements, options=options,
              profile=profile, routing=routing)
    try:
        with pytest.MonkeyPatch.context() as mp:
            if tuning is not None:
                mp.setattr(engine, "DEFAULT_TUNING", tuning)
            a, b = both(**kw)
    except UserInputError:  # sizes an algorithm refuses
        assume(False)
    assert_identical(a, b)


def test_contention_is_solved_identically():
    """All-to-all over 2 ABCI nodes (8 GPUs sharing PCIe switches and NICs): rates come from the max-min filling (more rate
    updates than rounds), and both paths agree to the bit."""
    a, b = both(topology="abci", nodes=2, collective="alltoall", algorithm="direct", elements=2**16)
    assert_identical(a, b)
    assert b.result.recomputations == a.result.recomputations > 1


def test_size_only_and_real_data_verify_the_same():
    for verify in ("full", "symbolic"):
        a, b = both(topology="abci", nodes=2, algorithm="ring", elements=2**16 + 1, verify=verify)
        assert_identical(a, b)
        assert b.fields["verified"] is True


def test_array_store_regime_runs_compiled(monkeypatch):
    """Past bulk_min active flows with a large coupled component the SimPy engine moves its
    flows into the array store; the compiled loop does too, and auto takes it."""
    monkeypatch.setattr("simcollective.simulate.AUTO_MIN_MESSAGES", 0)  # (auto: small runs take SimPy)
    kw = dict(topology="dgx-h100", nodes=2, collective="alltoall", algorithm="direct", elements=2**18)
    rep = run(RunConfig(engine="auto", **kw))
    assert rep.fields["engine"] == "compiled"
    assert_identical(run(RunConfig(engine="simpy", **kw)), rep)
