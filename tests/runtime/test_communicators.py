"""Sub-communicators: the groups of the named rules and of MPI_Comm_split, their errors, and
message spaces (communicators of different contexts never match each other's messages)."""

import doctest
import functools

import numpy as np
import pytest

from simcollective.errors import UserInputError
from simcollective.profiles import load_profile
from simcollective.runtime import communicators
from simcollective.runtime.communicators import group_of, rule_groups, split
from simcollective.runtime.tasks import Task, run_tasks
from tests.conftest import mesh_graph


def test_doctests():
    assert doctest.testmod(communicators).failed == 0


def test_named_rules_are_megatrons_layout():
    # tp 2 x dp 2 x pp 2 over 8 ranks: rank = tp + 2 * (dp + 2 * pp)
    assert rule_groups("tp", 2, 8) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert rule_groups("dp", 2, 8, stride=2) == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert rule_groups("pp", 2, 8) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert rule_groups("ep", 4, 8) == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert rule_groups("dp", 8, 8) == [tuple(range(8))]
    # every rule is a partition: each rank in exactly one group, at its key's position
    for rule, size in (("tp", 4), ("dp", 4), ("pp", 2), ("ep", 2)):
        groups = rule_groups(rule, size, 8)
        assert sorted(r for g in groups for r in g) == list(range(8))
        assert all(len(g) == size for g in groups)


def test_split_orders_by_key_then_rank_and_leaves_out_none():
    assert split([1, 0, 1, None, 0], [5, 0, 5, 0, -1]) == [(0, 2), (4, 1)]
    assert group_of([(0, 2), (4, 1)], 1) == (1, 1)
    assert group_of([(0, 2), (4, 1)], 3) is None


@pytest.mark.parametrize("rule, size, stride, needle", [
    ("tp", 3, None, "size 3 does not divide the 8 ranks; allowed: 1, 2, 4, 8"),
    ("dp", 0, None, "size 0 must be a positive integer"),
    ("dp", 2, 3, "size 2 x stride 3 does not divide the 8 ranks; allowed strides: 1, 2, 4"),
    ("zz", 2, None, "rule 'zz' is not one of: tp, dp, pp, ep, split"),
])
def test_bad_rules_are_one_line_errors_naming_the_value(rule, size, stride, needle):
    with pytest.raises(UserInputError) as exc:
        rule_groups(rule, size, 8, stride, where="communicator 'x'")
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_split_refuses_bad_colours():
    with pytest.raises(UserInputError, match="colour 'a' of rank 1"):
        split([0, "a"])
    with pytest.raises(UserInputError, match="2 keys for 3 colours"):
        split([0, 0, 1], [0, 1])


def _exchange(comm, x, wait=0.0):
    """Rank 0 sends its payload to rank 1 with tag 0 (after ``wait`` s); rank 1 returns what it got."""
    if comm.rank == 0:
        yield comm.delay(wait)
        yield comm.send(1, x)
        return None
    return (yield comm.recv(0))


def test_tasks_over_the_same_ranks_never_match_each_others_messages():
    # two tasks over the very same two ranks, same tag; task a's receive is posted first and
    # task b's send comes first: each receive still gets its own task's payload (one message
    # space per task; in one space a's receive would take b's message)
    graph = mesh_graph(2)
    placement = sorted(n for n, d in graph.nodes(data=True) if d["kind"] == "gpu")
    small, large = np.zeros(10, np.float32), np.ones(1000, np.float32)
    tasks = [Task("a", "a", (0, 1), functools.partial(_exchange, wait=1e-3), lambda r: small),
             Task("b", "b", (0, 1), _exchange, lambda r: large)]
    run_tasks(graph, placement, tasks, load_profile("ideal"))
    assert tasks[0].outputs[1] is small and tasks[1].outputs[1] is large
