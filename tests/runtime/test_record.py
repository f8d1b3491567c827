"""Recording per-rank programs as operation arrays (size-only, zero simulated time)."""

from __future__ import annotations

import functools
import os
import struct
from types import SimpleNamespace

import numpy as np
import pytest

import topologies
from simcollective.algorithms import get_algorithm
from simcollective.data import symbolic_input
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from simcollective.runtime.program import Program, packed, release_free_memory
from simcollective.runtime.record import MARK, POST, YIELD, NotCompilable, record


def _gpus(graph):
    return sorted(n for n, d in graph.nodes(data=True) if d.get("kind") == "gpu")


def _record(main, P=4, args=lambda r: ()):
    g = topologies.build("fat-tree", P, {})
    return record(g, _gpus(g)[:P], main, args, load_profile("ideal"))


def test_ring_allreduce_records_its_messages_and_results():
    """Ring allreduce over P = 4 ranks of N = 4000 float32: 2 P (P - 1) messages of N / P
    elements each, every rank's result the size-only sum of all four inputs."""
    P, n = 4, 4000
    algo = get_algorithm("ring", "allreduce")
    prog = _record(functools.partial(algo.func), P, lambda r: (symbolic_input(r, n, np.dtype("float32")),))
    a = prog.arrays()
    assert len(a["bytes"]) == 2 * P * (P - 1)
    assert set(a["bytes"].tolist()) == {n // P * 4}
    assert (a["recv_ev"] >= 0).all() and (a["send_ev"] >= 0).all()
    ops = a["ops"]
    assert (ops[:, 0] == POST).sum() == 2 * P * (P - 1)
    assert (ops[:, 0] == MARK).sum() == 4 * P  # two phases, entered and left, per rank
    assert (ops[:, 0] == YIELD).sum() >= 2 * P * (P - 1)
    # ring neighbours only: rank r sends to r + 1
    assert ((a["dst"] - a["src"]) % P == 1).all()
    for out in prog.outputs:
        assert sum(len(b) for b in out) == n


def test_matching_pairs_the_kth_send_with_the_kth_receive():
    def main(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.isend(1, np.zeros(k + 1, np.int8), tag=7) for k in range(3)])
            return None
        got = yield comm.waitall([comm.irecv(0, tag=7) for _ in range(3)])
        return [len(x) for x in got]

    prog = _record(main, P=2)
    assert prog.outputs[1] == [1, 2, 3]
    assert prog.arrays()["bytes"].tolist() == [1, 2, 3]


def test_time_dependent_programs_are_refused():
    def reads_time(comm):
        if comm.now > 0:
            yield comm.delay(1.0)

    def first_come(comm):
        reqs = [comm.irecv((comm.rank + 1) % comm.size)]
        yield comm.isend((comm.rank - 1) % comm.size, np.zeros(4))
        yield comm.waitany(reqs)

    with pytest.raises(NotCompilable, match="simulated time"):
        _record(reads_time)
    with pytest.raises(NotCompilable, match="waitany"):
        _record(first_come)


def test_unreceived_messages_are_refused():
    def main(comm):
        if comm.rank == 0:
            yield comm.isend(1, np.zeros(4))

    with pytest.raises(NotCompilable, match="never received"):
        _record(main, P=2)


def _program_arrays(prog) -> dict:
    a = prog.arrays()
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in a.items()}


@pytest.mark.parametrize("algorithm", ["ring", "recursive-doubling", "rabenseifner", "binomial-tree"])
def test_rows_moved_in_small_blocks_give_the_same_program(monkeypatch, algorithm):
    """The rows wait in lists and move into arrays in blocks: blocks of a few rows (many
    moves, mid-step) and the default give the same arrays."""
    from simcollective.runtime import program, recorder

    P, n = 8, 1000
    algo = get_algorithm(algorithm, "allreduce")
    args = lambda r: (symbolic_input(r, n, np.dtype("float32")),)  # noqa: E731
    whole = _program_arrays(_record(algo.func, P, args))
    monkeypatch.setattr(recorder, "FLUSH", 4)
    monkeypatch.setattr(program, "FLUSH_MSGS", 3)
    assert _program_arrays(_record(algo.func, P, args)) == whole


def test_receives_posted_before_and_after_their_message_are_paired():
    """Rank 1 posts a receive before rank 0 sends its message (a late match, through two
    nested waitalls) and one after the message was sent (it waits): each POST row names
    its message, each message the events of its POSTs."""
    def main(comm):
        if comm.rank == 0:
            yield comm.irecv(1, tag=0)
            yield comm.isend(1, np.zeros(3, np.int8), tag=1)
            yield comm.isend(1, np.zeros(5, np.int8), tag=2)
            return None
        early = comm.irecv(0, tag=1)
        yield comm.isend(0, np.zeros(1, np.int8), tag=0)
        got = yield comm.waitall([comm.waitall([early])])
        later = yield comm.irecv(0, tag=2)
        return [len(got[0][0]), len(later)]

    prog = _record(main, P=2)
    assert prog.outputs[1] == [3, 5]
    a = prog.arrays()
    ops, ptr = a["ops"].tolist(), a["rank_ptr"].tolist()
    posts = [[row for row in ops[ptr[r]:ptr[r + 1]] if row[0] == POST] for r in (0, 1)]
    # (kind, event, message sent, message received) of each rank's postings
    assert [row[2:] for row in posts[0]] == [[-1, 0], [1, -1], [2, -1]]
    assert [row[2:] for row in posts[1]] == [[-1, 1], [0, -1], [-1, 2]]
    assert a["src"].tolist() == [1, 0, 0] and a["dst"].tolist() == [0, 1, 1] and a["bytes"].tolist() == [1, 3, 5]
    assert a["send_ev"].tolist() == [posts[1][1][1], posts[0][1][1], posts[0][2][1]]
    assert a["recv_ev"].tolist() == [posts[0][0][1], posts[1][0][1], posts[1][2][1]]


def test_channels_queue_in_order_by_tag_and_communicator():
    """Several messages wait on one channel, in both directions (sends before their
    receives, receives before their sends); tags equal to 0 (0, 0.0, False) share a
    channel, a tuple tag has its own, and a sub-communicator over other ranks (its own
    channel numbers) never takes the world's messages: the k-th send of a channel goes
    to its k-th receive, as on the SimPy path."""
    def main(comm):
        sub = comm.sub([1, 0], "swapped")   # rank r of the world is rank 1 - r here
        if comm.rank == 0:
            yield comm.waitall([comm.isend(1, np.zeros(k, np.int8), tag=t)
                                for k, t in ((1, 0), (4, (1, 2)), (2, 0.0), (5, (1, 2)), (3, False))])
            yield sub.isend(0, np.zeros(6, np.int8))
            late = [comm.irecv(1, tag=(3,)), comm.irecv(1), comm.irecv(1, tag=(3,))]
            return [len(x) for x in (yield comm.waitall(late))]
        early = [comm.irecv(0, tag=0.0), comm.irecv(0, tag=(1, 2)), sub.irecv(1)]
        rest = [comm.irecv(0, tag=(1, 2)), comm.irecv(0, tag=False), comm.irecv(0)]
        got = yield comm.waitall(early + rest)
        yield comm.waitall([comm.isend(0, np.zeros(k, np.int8), tag=t) for k, t in ((7, (3,)), (8, 0), (9, (3,)))])
        return [len(x) for x in got]

    prog = _record(main, P=2)
    assert prog.outputs == [[7, 8, 9], [1, 4, 6, 5, 2, 3]]
    assert prog.arrays()["bytes"].tolist() == [1, 4, 2, 5, 3, 6, 7, 8, 9]
    g = topologies.build("fat-tree", 2, {})
    assert run_ranks(g, _gpus(g)[:2], main, lambda r: (), load_profile("ideal")).outputs == prog.outputs


@pytest.mark.parametrize("dst, src, what", [(0, 5, "source rank 5"), (5, 0, "destination rank 5"),
                                            (1, -1, "source rank -1")])
def test_sendrecv_refuses_peers_out_of_range(dst, src, what):
    from simcollective.errors import SimCollectiveError

    def main(comm):
        yield comm.sendrecv(dst, np.zeros(3), src)

    with pytest.raises(SimCollectiveError, match=f"{what} is out of range"):
        _record(main, P=2)


@pytest.mark.parametrize("post, peer, what", [("isend", 2, "destination rank 2"), ("isend", -1, "destination rank -1"),
                                              ("irecv", 2, "source rank 2"), ("irecv", -3, "source rank -3")])
def test_isend_and_irecv_refuse_peers_out_of_range(post, peer, what):
    """A peer past the last rank or below 0 is refused as on the SimPy path (a negative
    index would otherwise pick a rank from the end of the communicator's members)."""
    from simcollective.errors import SimCollectiveError

    def main(comm):
        req = comm.isend(peer, np.zeros(3)) if post == "isend" else comm.irecv(peer)
        yield comm.waitall([req])

    with pytest.raises(SimCollectiveError, match=f"{what} is out of range"):
        _record(main, P=2)


def test_a_recording_leaves_no_tokens_in_cycles():
    """A receive waited for in a ``waitall`` before its message arrives links to the
    ``waitall``, whose requests hold it: the link is cut when it is done, so a recording
    (the cyclic collector paused) leaves no token for that collector to free."""
    import gc

    from simcollective.runtime.recorder import Token

    def main(comm):   # rank 0's receives wait in a waitall (nested too) before rank 1 sends
        if comm.rank == 0:
            got = yield comm.waitall([comm.waitall([comm.irecv(1, tag=k)]) for k in range(3)])
            return len(got)
        yield comm.waitall([comm.isend(0, np.zeros(k + 1, np.int8), tag=k) for k in range(3)])
        return None

    gc.collect()
    gc.disable()
    try:
        prog = _record(main, P=2)
        assert prog.outputs[0] == 3
        left = [o for o in gc.get_objects() if type(o) is Token]
    finally:
        gc.enable()
    assert left == []


def test_waitall_members_are_its_requests_events_in_order_a_free_one_minus_one():
    """A waitall's row names its members (``members[first:first + count]``): the event of
    each request in the order given, -1 for a completion without an event (a zero-time
    compute); its value lists the requests' values in that order (None for a send)."""
    from simcollective.runtime.record import WAITALL

    def main(comm):
        peer = 1 - comm.rank
        send = comm.isend(peer, np.zeros(2 + comm.rank, np.int8), tag=3)
        recv = comm.irecv(peer, tag=3)
        got = yield comm.waitall([recv, comm.compute(0.0, "free"), send])
        return [len(got[0]), got[1], got[2]]

    prog = _record(main, P=2)
    assert prog.outputs == [[3, "free", None], [2, "free", None]]
    a = prog.arrays()
    ops, ptr, members = a["ops"].tolist(), a["rank_ptr"].tolist(), a["members"].tolist()
    for r in (0, 1):
        rows = ops[ptr[r]:ptr[r + 1]]
        send_ev, recv_ev = (row[1] for row in rows if row[0] == POST)
        (_, _, first, count), = (row for row in rows if row[0] == WAITALL)
        assert members[first:first + count] == [recv_ev, -1, send_ev]


def test_generators_delegating_with_yield_from_get_their_values_and_exceptions():
    """The recorder resumes the innermost of a rank's ``yield from`` chain directly: what a
    delegated generator returns (through three levels, a phase around one) and raises (caught
    by the one delegating to it) reaches the generator that delegated, a delegation begun
    after other yields and one to a generator expression are followed, as on the SimPy path."""
    def exchange(comm, k):
        got = yield comm.sendrecv(1 - comm.rank, np.zeros(k + comm.rank, np.int8), 1 - comm.rank)
        return len(got)

    def failing(comm):
        yield comm.sendrecv(1 - comm.rank, np.zeros(1, np.int8), 1 - comm.rank)
        raise ValueError("inner")

    def middle(comm):
        first = yield from exchange(comm, 2)
        try:
            yield from failing(comm)
        except ValueError as e:
            caught = str(e)
        with comm.phase("inner"):
            second = yield from exchange(comm, 5)
        return first, caught, second

    def main(comm):
        a = yield from middle(comm)
        b = yield from (q for q in [comm.sendrecv(1 - comm.rank, np.zeros(9, np.int8), 1 - comm.rank)])
        c = yield from exchange(comm, 7)
        return [a, b, c]

    prog = _record(main, P=2)
    assert prog.outputs == [[(3, "inner", 6), None, 8], [(2, "inner", 5), None, 7]]
    g = topologies.build("fat-tree", 2, {})
    assert run_ranks(g, _gpus(g)[:2], main, lambda r: (), load_profile("ideal")).outputs == prog.outputs


def test_channels_of_tag_0_follow_each_peer_in_turn():
    """A rank that alternates between peers on channels of tag 0 (each communicator keeps
    the last peers' channels), receives posted before their messages and after, by
    ``irecv`` and by ``sendrecv``: each message reaches the receive posted for it in order."""
    def main(comm):
        P, r = comm.size, comm.rank
        early = [comm.irecv((r - 1) % P), comm.irecv((r + 1) % P)]   # (rank 0's: before any message)
        sent = [comm.isend((r + 1) % P, np.zeros(r, np.int8)), comm.isend((r - 1) % P, np.zeros(r + 1, np.int8))]
        out = [len(x) for x in (yield comm.waitall(early + sent))[:2]]
        for k in range(3):   # to the right, then to the left, and again
            for d in (1, -1):
                got = yield comm.sendrecv((r + d) % P, np.zeros(10 * r + 2 * k + (d < 0), np.int8), (r - d) % P)
                out.append(len(got))
        return out

    prog = _record(main, P=3)
    g = topologies.build("fat-tree", 3, {})
    assert run_ranks(g, _gpus(g)[:3], main, lambda r: (), load_profile("ideal")).outputs == prog.outputs
    assert prog.outputs[0] == [2, 2, 20, 11, 22, 13, 24, 15]


def test_a_recording_that_leaves_many_objects_leaves_them_frozen(monkeypatch):
    """What a recording leaves (its programs and every rank's results) is frozen when it is
    much (past ``FREEZE_ABOVE`` objects), as a simulation's run leaves it: the collector's
    passes during the replay and verification that follow do not walk it."""
    import gc

    from simcollective.runtime import collector

    monkeypatch.setattr(collector, "FREEZE_ABOVE", 100)
    algo = get_algorithm("ring", "allreduce")
    was = gc.isenabled()
    gc.enable()
    try:
        gc.unfreeze()
        prog = _record(functools.partial(algo.func), 16, lambda r: (symbolic_input(r, 1600, np.dtype("float32")),))
        assert len(prog.outputs) == 16
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_program_columns_are_32_bit_but_bytes():
    """The operation rows, ``members`` and every message column but ``bytes`` are int32 (half
    the memory of int64); ``bytes`` and ``rank_ptr`` stay int64 (a message may exceed 2 GiB)."""
    algo = get_algorithm("ring", "allreduce")
    prog = _record(algo.func, 4, lambda r: (symbolic_input(r, 4000, np.dtype("float32")),))
    a = prog.arrays()
    narrow = ("ops", "src", "dst", "via", "send_ev", "recv_ev", "members")
    assert {k: a[k].dtype for k in narrow} == {k: np.dtype(np.int32) for k in narrow}
    assert a["bytes"].dtype == np.int64 and a["rank_ptr"].dtype == np.int64


def test_a_message_of_more_than_2_gib_keeps_its_bytes():
    def main(comm):
        if comm.rank == 0:
            yield comm.isend(1, SimpleNamespace(nbytes=3 * 2**31))
        else:
            yield comm.irecv(0)

    assert _record(main, P=2).arrays()["bytes"].tolist() == [3 * 2**31]


def test_a_count_past_32_bits_refuses_the_recording():
    """A row holding an integer past int32's range (an event, message or index count over
    2**31) is refused loudly where it is packed, never wrapped around."""
    prog = Program(1)
    prog.ops[0].extend((POST, 2**31, -1, -1))
    with pytest.raises(NotCompilable, match="32-bit rows"):
        prog.flush(0)
    with pytest.raises(NotCompilable, match="-2,147,483,649"):
        packed([0, -(2**31) - 1, 5], "i")
    assert packed([2**31 - 1, -(2**31)], "i") == struct.pack("2i", 2**31 - 1, -(2**31))


def test_arrays_let_the_recording_go():
    """Once the arrays are made, the recording's lists and blocks are empty."""
    algo = get_algorithm("ring", "allreduce")
    prog = _record(algo.func, 4, lambda r: (symbolic_input(r, 4000, np.dtype("float32")),))
    prog.arrays()
    assert prog.blocks == [] and prog.msg_blocks == [] and prog.late_blocks == []
    assert not any(prog.ops) and prog.msgs == [] and prog.late == []


def _rss() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status") or not release_free_memory(),
                    reason="glibc on Linux only")
def test_released_blocks_leave_the_process():
    """Blocks of kilobytes freed between objects that stay are kept by the C heap until
    :func:`release_free_memory` hands their pages back."""
    blocks, keep = [], []
    for i in range(8192):    # 64 MiB of 8 KiB blocks, a small object kept after each
        blocks.append(struct.pack("1024q", *range(i, i + 1024)))
        keep.append(str(i) * 40)
    before = _rss()
    del blocks
    assert release_free_memory()
    assert before - _rss() > 48 * 2**20
