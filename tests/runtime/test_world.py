"""Worlds and communicators: node and sub communicators, shared member tuples."""

import numpy as np

import topologies
from simcollective.placement import resolve_placement
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import mesh_graph


IDEAL = load_profile("ideal")


def run(main, P=4, profile=IDEAL, graph=None, args=lambda r: ()):
    g = graph or mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P] if graph is None else resolve_placement(g, "linear", P), main, args, profile)


def test_groups_node_comm_and_sub_communicators():
    g = topologies.build("abci", 2)

    def main(comm):
        intra, inter = comm.groups(2)
        node = comm.node_comm()
        local = comm.local_comm()
        assert local.members == tuple(range(comm.rank % 4, 8, 4))
        got = yield inter.sendrecv((inter.rank + 1) % inter.size, np.array([comm.rank]), (inter.rank - 1) % inter.size)
        return intra.size, intra.rank, inter.size, node.size, node.global_index(0), int(got[0])

    res = run_ranks(g, resolve_placement(g, "linear"), main, lambda r: (), IDEAL)
    assert res.outputs[5] == (2, 1, 4, 4, 4, 3)
    assert res.outputs[0] == (2, 0, 4, 4, 0, 6)


def test_communicators_over_the_same_ranks_share_one_members_tuple():
    # a members tuple per rank would be P^2 integers scattered in memory (at 1024 ranks,
    # every message's peer lookup touched a different 8 KiB tuple): one tuple per group
    seen = {}

    def main(comm):
        intra, inter = comm.groups(2)
        seen[comm.rank] = (comm.members, intra.members, inter.members)
        yield comm.compute(0.0)
        return None

    run(main, P=4)
    world = {id(m[0]) for m in seen.values()}
    intra = {id(m[1]) for m in seen.values()}
    inter = {id(m[2]) for m in seen.values()}
    assert len(world) == 1 and len(intra) == 2 and len(inter) == 2
    assert seen[0][0] == (0, 1, 2, 3) and seen[1][1] == (0, 1) and seen[3][2] == (1, 3)
