"""Ring passes on flat lists with blocks cut when reached equal the chunk-list ring."""

import pytest

import topologies
from simcollective.data.symbolic import symbolic_input
from simcollective.data.verify import verify_symbolic
from simcollective.patterns.dense import flatten, split
from simcollective.patterns.rings import ring_allgather, ring_reduce_scatter
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import mesh_graph


IDEAL = load_profile("ideal")


def run(main, P=4, args=lambda r: (), trace=False, profile=IDEAL):
    g = mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P], main, args, profile, trace=trace)


# -- ring passes ------------------------------------------------------------------------------------
@pytest.mark.parametrize("P", [1, 2, 3, 5, 8])
def test_flat_ring_with_blocks_cut_when_reached_equals_the_chunk_list_ring(P):
    """The same ring written with chunk lists and split at the start, and with a flat list
    whose reduce-scatter cuts each block from x when it reaches it: the same results (each
    block holding every rank once), simulated times and message counts."""
    n = 1000 + P  # uneven last block

    def chunk_lists(comm, x):
        blocks = [[b] for b in split(x, comm.size)]
        yield from ring_reduce_scatter(comm, blocks, owns=(comm.rank + 1) % comm.size)
        yield from ring_allgather(comm, blocks, owns=(comm.rank + 1) % comm.size)
        return flatten(blocks)

    def flat(comm, x):
        blocks = [None] * comm.size
        yield from ring_reduce_scatter(comm, blocks, owns=(comm.rank + 1) % comm.size, source=x, flat=True)
        yield from ring_allgather(comm, blocks, owns=(comm.rank + 1) % comm.size, flat=True)
        return blocks

    inputs = lambda r: (symbolic_input(r, n, "float32"),)
    a, b = run(chunk_lists, P, inputs), run(flat, P, inputs)
    assert a.makespan == b.makespan and a.messages == b.messages == 2 * P * (P - 1)
    for out_a, out_b in zip(a.outputs, b.outputs):
        assert [(p.start, p.stop, p.segments) for p in out_a] == [(p.start, p.stop, p.segments) for p in out_b]
        verify_symbolic(out_b, n, P)


class _Ring:
    """What a ring pass reads of a communicator, each message arriving at once (its value
    the payload sent); ``free``: the profile gives sums no time."""

    def __init__(self, P: int, free: bool):
        self.size, self.rank, self.free = P, 0, free

    def sum_now(self, like, op=None):
        return self.sum if self.free else None

    def sendrecv(self, dst, payload, src):
        return ("message", payload)

    def add(self, a, b, op=None):
        return ("sum", a + b)

    def sum(self, a, b, op=None):
        return a + b


def test_a_reduce_pass_takes_free_sums_at_once_and_yields_only_its_messages():
    """Where sums take no time (``comm.sum_now`` gives a function) the reduce pass takes them
    at once: it yields its P - 1 messages and nothing else; otherwise it yields
    every sum's event too (P - 1 of them); the block it ends with is the same."""
    import numpy as np

    P = 5
    x = np.arange(10 * P, dtype=np.int64)
    for cut in (True, False):   # blocks cut from the source when reached, or given
        ends = []
        for free in (True, False):
            blocks = [None] * P if cut else list(np.split(x, P))
            gen = ring_reduce_scatter(_Ring(P, free), blocks, owns=1, source=x if cut else None, flat=True)
            kinds, value = [], None
            try:
                while True:
                    kind, value = gen.send(value)
                    kinds.append(kind)
            except StopIteration:
                pass
            assert kinds.count("message") == P - 1
            assert kinds.count("sum") == (0 if free else P - 1)
            ends.append(blocks[1].tolist())
        assert ends[0] == ends[1] and ends[0] != x[10:20].tolist()
