"""Worlds and communicators: node and sub communicators, shared member tuples."""

import numpy as np

import topologies
from simcollective.placement import resolve_placement
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import Blob, mesh_graph


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


class _CountingBoxes(dict):
    """A mailbox dict that counts its lookups (each method call hashes the key once)."""

    lookups = 0

    def setdefault(self, key, default=None):
        _CountingBoxes.lookups += 1
        return super().setdefault(key, default)

    def __setitem__(self, key, value):
        _CountingBoxes.lookups += 1
        super().__setitem__(key, value)

    def __delitem__(self, key):
        _CountingBoxes.lookups += 1
        super().__delitem__(key)


def test_a_message_costs_one_mailbox_lookup_to_wait_and_two_to_match():
    # messages and posted receives share one dict (a key holds one kind at a time): the
    # first of a pair waits in one lookup, the second finds and takes it in two; receives
    # posted first, sends posted first, and a queue of two under one key, all matched in order
    n = 6

    def main(comm):
        if comm.rank == 0:
            comm.world._boxes = _CountingBoxes()   # (rank 0 runs first, before any posting)
            got = [comm.irecv(1, tag=t) for t in range(n)]     # receives first
            got += [comm.irecv(1, tag=99) for _ in range(2)]  # two under one key
            vals = yield comm.waitall(got)
            yield comm.compute(1.0)
            late = yield comm.waitall([comm.irecv(1, tag=t) for t in range(n, 2 * n)])   # sends first
            return [v.nbytes for v in vals + late], dict(comm.world._boxes)
        if comm.rank == 1:
            yield comm.waitall([comm.isend(0, Blob(10 + t), tag=t) for t in range(2 * n)] +
                               [comm.isend(0, Blob(1000 + i), tag=99) for i in range(2)])
        return None

    _CountingBoxes.lookups = 0
    sizes, left = run(main, P=2).outputs[0]
    assert sizes == [10 + t for t in range(n)] + [1000, 1001] + [10 + t for t in range(n, 2 * n)]
    assert left == {}
    # 2n + 2 messages: 3 lookups each, and one more for the queue of two receives under
    # tag 99 (the second finds the first waiting and puts a deque of both in its place)
    assert _CountingBoxes.lookups == 3 * (2 * n + 2) + 1
