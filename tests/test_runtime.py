"""The SimPy runtime: point-to-point semantics, deadlock reports, phases, communicators,
placement."""

import numpy as np
import pytest

import topologies
from conftest import mesh_graph
from simcollective.errors import DeadlockError, SimCollectiveError, UserInputError
from simcollective.placement import resolve_placement
from simcollective.profiles import Profile, load_profile
from simcollective.runtime import ComputeModel
from simcollective.runtime import run_ranks

IDEAL = load_profile("ideal")


class Blob:
    """A payload of a given size (no data)."""

    def __init__(self, nbytes):
        self.nbytes = nbytes


def run(main, P=4, profile=IDEAL, graph=None, args=lambda r: ()):
    g = graph or mesh_graph(P, bandwidth=1e9, latency=1e-6)
    return run_ranks(g, topologies.gpus(g)[:P] if graph is None else resolve_placement(g, "linear", P), main, args, profile)


def test_deadlock_names_every_blocked_rank_and_what_it_waits_for():
    def main(comm):
        if comm.rank == 0:
            yield comm.recv(1, tag=7)
        elif comm.rank == 1:
            yield comm.send(2, Blob(10**6), tag=3)  # rendezvous: rank 2 never receives
        else:
            return None

    with pytest.raises(DeadlockError) as exc:
        run(main, P=3)
    msg = str(exc.value)
    assert "rank 0 waits for: recv from rank 1 (tag 7, world)" in msg
    assert "rank 1 waits for: send of 1000000 B to rank 2 (tag 3, world)" in msg
    assert "rank 2 waits" not in msg


def test_unreceived_eager_message_is_an_error():
    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, Blob(8))
        return None

    with pytest.raises(SimCollectiveError, match="never received"):
        run(main, P=2)


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


def test_bad_peer_rank_is_an_error():
    def main(comm):
        yield comm.send(5, Blob(1))

    with pytest.raises(SimCollectiveError, match="destination rank 5 is out of range 0..1"):
        run(main, P=2)


def test_placements():
    g = topologies.build("dgx1", 2)
    study = resolve_placement(g, "study")
    assert study[:8] == [f"n0/gpu{i}" for i in (0, 3, 2, 1, 5, 6, 7, 4)]
    assert study[8] == "n1/gpu0"
    assert resolve_placement(g, [3, "n1/gpu2"]) == ["n0/gpu3", "n1/gpu2"]
    with pytest.raises(UserInputError, match="larger than the 16 GPUs"):
        resolve_placement(g, "linear", 17)
    with pytest.raises(UserInputError, match="appears twice"):
        resolve_placement(g, [1, 1])
    with pytest.raises(UserInputError, match="neither a GPU node id"):
        resolve_placement(g, ["n0/plx0"])


def test_same_inputs_give_bit_identical_results():
    from simcollective.simulate import RunConfig, run_allreduce

    cfg = RunConfig(topology="abci", nodes=2, algorithm="ring-ring", elements=10007, dtype="float32", profile="smpi")
    a, b = run_allreduce(cfg), run_allreduce(cfg)
    assert a["time_s"] == b["time_s"] and a["phases"] == b["phases"]
    for x, y in zip(a.result.outputs[3], b.result.outputs[3]):
        assert np.array_equal(x, y)


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


def test_an_error_in_a_rank_propagates():
    def main(comm):
        yield comm.compute(1.0)
        if comm.rank == 1:
            raise ValueError("rank 1 broke")
        return comm.rank

    with pytest.raises(ValueError, match="rank 1 broke"):
        run(main, P=2)


def test_unreceived_messages_report_the_lowest_receiving_rank():
    def main(comm):
        if comm.rank == 3:
            yield comm.send(2, Blob(8), tag=4)
            yield comm.send(1, Blob(8), tag=6)
            yield comm.send(1, Blob(8), tag=6)
        return None

    with pytest.raises(SimCollectiveError, match=r"2 message queue\(s\) never received, e.g. rank 3 -> rank 1 \(tag 6, world\)"):
        run(main, P=4)


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
