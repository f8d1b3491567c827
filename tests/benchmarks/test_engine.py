"""The engine benchmark sends exactly the ring's messages."""

from benchmarks.engine import ring_messages
from simcollective.simulate import run_allreduce, RunConfig


def test_engine_scenario_sends_exactly_the_ring_messages():
    # scenario E (no data operations) must be the ring's message pattern: same number of
    # messages and bytes, and the same simulated time (the ring's sums take no simulated
    # time under the ideal profile)
    e = ring_messages(16, elements=2**20)
    ring = run_allreduce(RunConfig(topology="fat-tree", nodes=16, algorithm="ring", elements=2**20,
                                   dtype="float32")).fields
    assert e["messages"] == ring["messages"] == 2 * 16 * 15
    assert e["time_s"] == ring["time_s"]
