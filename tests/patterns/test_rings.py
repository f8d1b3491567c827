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
