"""Point-to-point semantics of the communicator: eager and rendezvous, matching order, waitany,
phases, posting paths and their traces, bad peers."""

import numpy as np
import pytest

import topologies
from simcollective.errors import DeadlockError, SimCollectiveError
from simcollective.placement import resolve_placement
from simcollective.profiles import load_profile, Profile
from simcollective.runtime import ComputeModel, run_ranks
from tests.conftest import Blob, mesh_graph


IDEAL = load_profile("ideal")


def run(main, P=4, profile=IDEAL, graph=None, args=lambda r: ()):
    g = graph or mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P] if graph is None else resolve_placement(g, "linear", P), main, args, profile)


def test_eager_send_completes_at_once_rendezvous_waits_for_the_receiver():
    times = {}

    def main(comm, size):
        if comm.rank == 0:
            yield comm.send(1, Blob(size))
            times["send_done"] = comm.now
        else:
            yield comm.compute(1.0)
            yield comm.recv(0)
            times["recv_done"] = comm.now

    run(main, P=2, args=lambda r: (1000,))  # eager: the flow runs while rank 1 computes
    assert times["send_done"] == 0.0
    assert times["recv_done"] == pytest.approx(1.0)
    run(main, P=2, args=lambda r: (10**6,))  # rendezvous: starts when the receive is posted
    assert times["send_done"] == pytest.approx(1.0 + 1e-6 + 1e6 / 1e9)
    assert times["recv_done"] == times["send_done"]


def test_messages_match_in_posting_order_per_source_and_tag():
    def main(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.isend(1, np.array([i])) for i in range(5)] + [comm.isend(1, np.array([9]), tag=1)])
            return None
        late = yield comm.recv(0, tag=1)
        got = []
        for _ in range(5):
            got.append(int((yield comm.recv(0))[0]))
        return got, int(late[0])

    res = run(main, P=2)
    assert res.outputs[1] == ([0, 1, 2, 3, 4], 9)


def test_waitany_returns_the_first_arrival():
    def main(comm):
        if comm.rank == 0:
            reqs = [comm.irecv(1), comm.irecv(2)]
            i, v = yield comm.waitany(reqs)
            rest = yield reqs[1 - i]
            return i, v.nbytes, rest.nbytes
        yield comm.compute(0.5 if comm.rank == 1 else 0.0)
        yield comm.send(0, Blob(100 * comm.rank))

    res = run(main, P=3)
    assert res.outputs[0] == (1, 200, 100)


def _react(comm, by_completions):
    """Rank 0 reacts to the messages of ranks 1..5 (two each; some arrive together, some
    before they are waited for) as they come, posting each source's second receive once
    its first is in; returns what it saw, in order, with the times."""
    if comm.rank:
        yield comm.compute([0.3, 0.1, 0.3, 0.0, 0.2][comm.rank - 1])
        yield comm.send(0, Blob(100 * comm.rank))
        yield comm.compute(0.1 * (comm.rank % 2))
        yield comm.send(0, Blob(1000 + comm.rank), tag=1)
        return None
    yield comm.compute(0.15)  # rank 4's first message is in before it is waited for
    seen = []
    if by_completions:
        inbox = comm.completions()
        for src in range(1, 6):
            inbox.add(comm.irecv(src), (src, 0))
        while inbox:
            (src, tag), got = yield inbox.next()
            seen.append((src, tag, got.nbytes, comm.now))
            if tag == 0:
                inbox.add(comm.irecv(src, tag=1), (src, 1))
        return seen
    reqs = [comm.irecv(src) for src in range(1, 6)]
    keys = [(src, 0) for src in range(1, 6)]
    while reqs:
        i, got = yield comm.waitany(reqs)
        del reqs[i]
        src, tag = keys.pop(i)
        seen.append((src, tag, got.nbytes, comm.now))
        if tag == 0:
            reqs.append(comm.irecv(src, tag=1))
            keys.append((src, 1))
    return seen


def test_completions_choose_as_waitany_over_the_requests_in_the_order_added():
    P = 6
    by_waitany = run(lambda comm: _react(comm, False), P=P)
    by_completions = run(lambda comm: _react(comm, True), P=P)
    seen = by_completions.outputs[0]
    assert seen == by_waitany.outputs[0]
    assert sorted((src, tag) for src, tag, _, _ in seen) == [(s, t) for s in range(1, P) for t in (0, 1)]
    assert [t for *_, t in seen] == sorted(t for *_, t in seen)
    assert by_completions.finish == by_waitany.finish and by_completions.events == by_waitany.events


def _fan_in(comm, counted):
    """Ranks 1..3 send rank 0 small (eager) and large (rendezvous) messages, rank 0 posts
    its receives late; the senders wait for their sends by requests or counted."""
    sizes = [10, 10**6, 7, 3 * 10**5]
    if comm.rank == 0:
        yield comm.compute(0.002)
        got = yield comm.waitall([comm.irecv(src, tag=i) for src in range(1, comm.size) for i in range(len(sizes))])
        return [g.nbytes for g in got]
    yield comm.compute(0.0005 * comm.rank)
    if not counted:
        yield comm.waitall([comm.isend(0, Blob(n * comm.rank), tag=i) for i, n in enumerate(sizes)])
        return comm.now
    outbox = comm.completions()
    for i, n in enumerate(sizes):
        outbox.send(0, Blob(n * comm.rank), tag=i)
    yield outbox.sent()
    return comm.now


def test_counted_sends_complete_when_their_requests_would():
    by_requests = run(lambda comm: _fan_in(comm, False))
    counted = run(lambda comm: _fan_in(comm, True))
    assert counted.outputs == by_requests.outputs and counted.finish == by_requests.finish
    assert counted.messages == by_requests.messages and counted.message_bytes == by_requests.message_bytes
    assert by_requests.outputs[1] > 0.002   # the rendezvous sends waited for the late receives

    def nothing_sent(comm):
        yield comm.completions().sent()   # no send: done at once
        return comm.now

    assert run(nothing_sent).outputs == [0.0] * 4


def test_phases_compute_and_other_add_up_to_each_rank_finish_time():
    prof = Profile(name="t", compute=ComputeModel(dense_bytes_per_second=3e9))

    def main(comm):
        x = np.ones(1000, dtype=np.float32)
        with comm.phase("exchange"):
            got = yield comm.sendrecv((comm.rank + 1) % comm.size, x, (comm.rank - 1) % comm.size)
        y = yield comm.add(x, got)  # 3 * 4000 B at 3e9 B/s = 4 us
        yield comm.compute(1e-6 * comm.rank)
        return y

    res = run(main, P=4, profile=prof)
    assert res.phases["compute"] == pytest.approx(4e-6 + 3e-6)
    assert sum(res.phases.values()) == pytest.approx(res.makespan, rel=1e-12)
    assert res.makespan == pytest.approx(1e-6 + 4000 / 1e9 + 4e-6 + 3e-6)
    with pytest.raises(ValueError):
        res.outputs[0][0] = 5  # results of comm.add are immutable


def test_bad_peer_rank_is_an_error():
    def main(comm):
        yield comm.send(5, Blob(1))

    with pytest.raises(SimCollectiveError, match="destination rank 5 is out of range 0..1"):
        run(main, P=2)


def test_receives_posted_first_match_sends_in_posting_order_per_key():
    # three receives wait on the same (source, tag) and one on another tag before any send:
    # the sends match them first-posted first, whatever their sizes (eager or rendezvous)
    def main(comm):
        if comm.rank == 1:
            reqs = [comm.irecv(0) for _ in range(3)] + [comm.irecv(0, tag=5)]
            vals = yield comm.waitall(reqs)
            return [v.nbytes for v in vals], comm.now
        yield comm.compute(1.0)
        for size in (10, 10**6, 20):
            yield comm.send(1, Blob(size))
        yield comm.send(1, Blob(30), tag=5)
        return None

    res = run(main, P=2)
    assert res.outputs[1][0] == [10, 10**6, 20, 30]
    # the rendezvous send (posted at 1.0) blocks rank 0 until its data has arrived
    assert res.outputs[1][1] > 1.0 + 1e-6 + 1e6 / 1e9


def test_unexpected_messages_queue_in_sending_order_then_drain():
    # three rendezvous sends from three non-blocking isends wait unmatched; receives posted
    # later take them in sending order, then the mailbox is empty (no leftover error)
    def main(comm):
        if comm.rank == 0:
            reqs = [comm.isend(1, Blob(10**6 + i)) for i in range(3)]
            assert not any(q.triggered for q in reqs)  # rendezvous: not done at posting
            yield comm.waitall(reqs)
            return None
        yield comm.compute(2.0)
        got = []
        for _ in range(3):
            got.append((yield comm.recv(0)).nbytes)
        return got

    res = run(main, P=2)
    assert res.outputs[1] == [10**6, 10**6 + 1, 10**6 + 2]
    assert res.messages == 3


def test_eager_isend_is_done_at_posting_and_sendrecv_of_arrived_data_continues_at_once():
    def main(comm):
        peer = 1 - comm.rank
        req = comm.isend(peer, Blob(8))
        assert req.processed and req.value is None  # eager: complete when posted
        yield comm.compute(1.0)  # the peer's eager message has arrived meanwhile
        ev = comm.sendrecv(peer, Blob(8), peer)
        assert ev.processed  # both halves done while posting: no trip through the queue
        first = yield comm.recv(peer)
        second = yield ev
        return first.nbytes, second.nbytes, comm.now

    res = run(main, P=2)
    assert res.outputs[0][:2] == (8, 8)
    # the receive waited for the sendrecv's message: latency + 8 B at 1 GB/s after 1.0
    assert res.outputs[0][2] == pytest.approx(1.0 + 1e-6 + 8 / 1e9, rel=1e-12)


def run_on_mesh(main, P=4, args=lambda r: (), trace=False, profile=IDEAL):
    g = mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P], main, args, profile, trace=trace)


# -- point to point -------------------------------------------------------------------------------
def test_trace_spans_of_sendrecv_give_each_side_its_posting_time_and_bytes():
    """Rank 1 posts its receive 1 ms late: its recv span starts then; rank 0's send span
    starts at 0 and both end when the 10 MB have arrived (1e-6 s latency + 10 ms)."""
    def main(comm):
        if comm.rank == 0:
            yield comm.sendrecv(1, Blob(10**7), 1)
        else:
            yield comm.delay(1e-3)
            yield comm.sendrecv(0, Blob(8), 0)

    res = run_on_mesh(main, P=2, trace=True)
    s0 = {kind: (t0, t1, info) for kind, _, t0, t1, info in res.spans[0]}
    s1 = {kind: (t0, t1, info) for kind, _, t0, t1, info in res.spans[1]}
    assert s0["send"][0] == 0.0 and s0["send"][2] == {"peer": 1, "bytes": 10**7}
    assert s1["recv"][0] == pytest.approx(1e-3) and s1["recv"][2] == {"peer": 0, "bytes": 10**7}
    assert s0["send"][1] == s1["recv"][1] == pytest.approx(1e-3 + 1e-6 + 1e-2)
    # rank 1's 8-byte message is eager: its send span is empty, at its posting
    assert s1["send"][0] == s1["send"][1] == pytest.approx(1e-3)
    assert s0["recv"][2] == {"peer": 1, "bytes": 8}


def test_receive_of_an_arrived_message_completes_at_posting_with_the_payload():
    got = {}

    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, Blob(8))          # eager: arrives after the latency
        else:
            yield comm.delay(1.0)
            t = comm.now
            x = yield comm.irecv(0)
            got["x"], got["dt"] = x, comm.now - t

    run_on_mesh(main, P=2)
    assert isinstance(got["x"], Blob) and got["x"].nbytes == 8 and got["dt"] == 0.0


def test_two_receives_waiting_on_one_key_are_reported_and_matched_in_order():
    def main(comm):
        if comm.rank == 0:
            a = comm.irecv(1, tag=5)
            b = comm.irecv(1, tag=5)
            first = yield a
            second = yield b
            return first.nbytes, second.nbytes
        yield comm.send(0, Blob(3), tag=5)
        yield comm.send(0, Blob(4), tag=5)

    assert run_on_mesh(main, P=2).outputs[0] == (3, 4)

    def stuck(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.irecv(1, tag=5), comm.irecv(1, tag=5)])
        return None

    with pytest.raises(DeadlockError, match=r"rank 0 waits for: recv from rank 1 \(tag 5, world\); "
                                            r"recv from rank 1 \(tag 5, world\)"):
        run_on_mesh(stuck, P=2)


def test_gpus_lists_every_rank_gpu_once_for_all_ranks_of_a_communicator():
    seen = {}

    def main(comm):
        sub = comm.sub([3, 1], "pair") if comm.rank in (1, 3) else None
        seen[comm.rank] = (comm.gpus(), sub.gpus() if sub else None)
        yield comm.compute(0.0)

    g = mesh_graph(4, bandwidth=1e9, latency=1e-6)
    gpus = topologies.gpus(g)[:4]
    run(main, P=4, graph=None)
    assert seen[0][0] == tuple(gpus)
    assert all(seen[r][0] is seen[0][0] for r in range(4))   # one tuple, shared by every rank
    assert seen[1][1] == (gpus[3], gpus[1]) and seen[1][1] is seen[3][1]


def test_sum_now_takes_free_sums_at_once_numpy_ones_read_only():
    """Where the profile gives reductions no time, ``comm.sum_now(like)`` is the function a
    pattern takes sums with at once: Python's ``+`` for payloads that are not NumPy arrays,
    a read-only sum for arrays (``comm.add``'s value, without its event), ``op`` when given;
    where reductions take time it is None (the pattern yields ``comm.add``)."""
    import operator

    from simcollective.data.symbolic import symbolic_input

    seen = {}

    def main(comm):
        a = np.arange(4.0)
        s = comm.sum_now(a)
        seen["array"] = (s(a, a).tolist(), s(a, a).flags.writeable)
        seen["other"] = comm.sum_now(symbolic_input(comm.rank, 8, "float32"))
        seen["op"] = comm.sum_now(a, op=np.maximum)(a, -a).tolist()
        return None
        yield

    def timed(comm):
        seen["timed"] = comm.sum_now(np.zeros(2))
        return None
        yield

    run(main, P=1)
    assert seen == {"array": ([0.0, 2.0, 4.0, 6.0], False), "other": operator.add, "op": [0.0, 1.0, 2.0, 3.0]}
    run(timed, P=1, profile=Profile(name="t", compute=ComputeModel(dense_bytes_per_second=3e9)))
    assert seen["timed"] is None
