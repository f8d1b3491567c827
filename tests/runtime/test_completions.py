"""Comm.completions()'s receives: ``recv`` and ``recv_all`` choose, time and order as
``add(irecv)`` and ``add(waitall([irecv, ...]))`` do, with fewer events."""

import pytest

import topologies
from simcollective.errors import DeadlockError, SimCollectiveError
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import Blob, mesh_graph

IDEAL = load_profile("ideal")
GROUP = (10, 11, 12)
SIZES = {10: 1000, 11: 10**6, 12: 500, 1: 10**6}   # eager, rendezvous, eager; the single one


def run(main, P):
    g = mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P], main, lambda r: (), IDEAL)


def _react(comm, how):
    """Ranks 1..4 send rank 0 a group of three messages (tags 10-12) and a single one (tag
    1), ranks 1 and 2 before rank 0 posts its receives (their eager messages are in by
    then), ranks 3 and 4 after (the last message of each group and the single one arrive at
    one instant, from both ranks); rank 0 answers each group and each single message as it
    comes (the order of its reactions and answers shows in what it sees and in the times). ``how``: ``"fast"`` (recv, recv_all) or ``"requests"`` (add of irecv and waitall)."""
    if comm.rank:
        yield comm.compute([0.01, 0.01, 0.3, 0.3][comm.rank - 1])
        out = comm.completions()
        for tag in (*GROUP, 1):
            out.send(0, Blob(SIZES[tag]), tag=tag)
        yield out.sent()
        got = yield comm.waitall([comm.irecv(0, tag=2), comm.irecv(0, tag=3)])
        return [g.nbytes for g in got], comm.now
    yield comm.compute(0.15)
    inbox = comm.completions()
    for src in range(1, comm.size):
        if how == "fast":
            inbox.recv_all(src, GROUP, (src, "group"))
            inbox.recv(src, 1, (src, "one"))
        else:
            inbox.add(comm.waitall([comm.irecv(src, tag) for tag in GROUP]), (src, "group"))
            inbox.add(comm.irecv(src, 1), (src, "one"))
    seen = []
    while inbox:
        (src, kind), got = yield inbox.next()
        sizes = [g.nbytes for g in got] if kind == "group" else got.nbytes
        seen.append((src, kind, sizes, comm.now))
        inbox.send(src, Blob(3 * 10**5 + src), tag=2 if kind == "group" else 3)
    yield inbox.sent()
    return seen


def test_recv_and_recv_all_react_and_time_as_requests_do():
    fast = run(lambda comm: _react(comm, "fast"), P=5)
    requests = run(lambda comm: _react(comm, "requests"), P=5)
    assert fast.outputs == requests.outputs and fast.finish == requests.finish
    seen = fast.outputs[0]
    assert sorted((src, kind) for src, kind, _, _ in seen) == [(s, k) for s in range(1, 5) for k in ("group", "one")]
    assert all(sizes == [SIZES[tag] for tag in GROUP] for src, kind, sizes, _ in seen if kind == "group")
    # an event less for each receive of a group but its last that completes through the
    # queue: ranks 3 and 4 (three each); ranks 1 and 2 had their eager messages in (one left)
    assert requests.events - fast.events == 2 * 2


def test_recv_all_when_every_message_is_in_completes_at_once():
    def main(comm):
        if comm.rank == 1:
            for tag in (5, 6):
                yield comm.send(0, Blob(100 * tag), tag=tag)
            return None
        yield comm.compute(0.5)
        inbox = comm.completions()
        inbox.recv_all(1, (6, 5), "both")
        key, got = yield inbox.next()
        return key, [g.nbytes for g in got], comm.now

    assert run(main, P=2).outputs[0] == ("both", [600, 500], 0.5)


def test_recv_all_refuses_repeated_tags_and_bad_peers():
    def main(comm, tags, src):
        comm.completions().recv_all(src, tags, None)
        yield comm.compute(0.0)

    with pytest.raises(SimCollectiveError, match="repeats a tag"):
        run(lambda comm: main(comm, (1, 1), 0), P=2)
    with pytest.raises(SimCollectiveError, match="source rank 2 is out of range"):
        run(lambda comm: main(comm, (1, 2), 2), P=2)


def test_a_recv_all_never_matched_names_each_receive():
    def stuck(comm):
        if comm.rank == 0:
            inbox = comm.completions()
            inbox.recv_all(1, (5, 7), None)
            yield inbox.next()
        return None

    with pytest.raises(DeadlockError, match=r"rank 0 waits for: recv from rank 1 \(tag 5, world\); "
                                            r"recv from rank 1 \(tag 7, world\)"):
        run(stuck, P=2)


def test_receives_of_completions_share_one_callback_and_hold_their_key():
    # a receive posted through recv or recv_all is one event that carries its key and order
    # and shares the completion's callback with the others (no partial made per receive)
    def main(comm):
        if comm.rank == 1:
            yield comm.compute(0.1)
            for tag in (1, 2, 3):
                yield comm.send(0, Blob(100 * tag), tag=tag)
            return None
        inbox = comm.completions()
        inbox.recv(1, 1, "one")
        inbox.recv_all(1, (2, 3), "two")
        posted = [box for box in comm.world._boxes.values() if box.__class__.__name__ == "Watched"]
        gather = {box.done for box in comm.world._boxes.values() if box.__class__.__name__ == "Gather"}
        events = posted + list(gather)
        shared = len(events) == 2 and events[0].callbacks is events[1].callbacks
        got = []
        while inbox:
            key, value = yield inbox.next()
            got.append((key, value.nbytes if key == "one" else [v.nbytes for v in value]))
        return shared, [e.key for e in events], got

    assert run(main, P=2).outputs[0] == (True, ["one", "two"], [("one", 100), ("two", [200, 300])])
