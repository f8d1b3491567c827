"""The compiled loop's rows of the messages (:mod:`simcollective.network.replay_rows`)."""

from __future__ import annotations

import numpy as np
from simcollective.network.replay_flows import EAGER
from simcollective.network.replay_kernels import DELAY_SINCE, MARK, NOW, POST, TIMEOUT, WAITALL, YIELD
from simcollective.network.replay_rows import loop_order, message_rows


def test_message_rows_are_32_bit_and_exact():
    """``MI`` holds counts (paths, events, flows) as int32, half of int64's memory; the
    figures of ``MF`` and the bytes per path are those of ``Network.transfer`` (sizes over
    the bandwidth factor, the path's latency) and exact int64 sums past 2**31."""
    pidx = np.array([0, 1, 0], np.int32)
    send_ev, recv_ev = np.array([3, 5, 7], np.int32), np.array([4, 6, 2**31 - 1], np.int32)
    size = np.array([2**40, 10, 0], np.int64)
    MI, MF, sums = message_rows(pidx, send_ev, recv_ev, size, np.int64(64), False, np.zeros(0), np.zeros(0), 0.5,
                                np.array([1e-6, 2e-6]), 2, np.arange(3, dtype=np.int32))
    assert MI.dtype == np.int32
    assert MI[:, :3].tolist() == [[0, 3, 4], [1, 5, 6], [0, 7, 2**31 - 1]]
    assert MI[:, 3].tolist() == [0, EAGER, EAGER]
    assert MF.tolist() == [[2**40 / 0.5, 1e-6], [10 / 0.5, 2e-6], [0.0, 1e-6]]
    assert sums.dtype == np.int64 and sums.tolist() == [2**40, 10]


def test_message_rows_go_to_their_new_numbers():
    """Message ``m`` is row ``mnew[m]``."""
    pidx = np.array([1, 0, 1], np.int32)
    send_ev, recv_ev = np.array([5, 4, 3], np.int32), np.array([2, 1, 0], np.int32)
    size = np.array([100, 200, 300], np.int64)
    MI, MF, sums = message_rows(pidx, send_ev, recv_ev, size, np.int64(0), False, np.zeros(0), np.zeros(0), 2.0,
                                np.array([1.0, 3.0]), 2, np.array([2, 0, 1], np.int32))
    assert MI[:, :3].tolist() == [[0, 4, 1], [1, 3, 0], [1, 5, 2]]
    assert MF.tolist() == [[100.0, 1.0], [150.0, 3.0], [50.0, 3.0]]
    assert sums.tolist() == [200, 400]


def _program():
    """Two ranks: rank 0 sends message 0 (event 0), waits for it, takes a timeout (event 1)
    and a delay since an earlier row (event 2); rank 1 marks a phase, receives message 0
    and sends message 1 in one posting (event 3), then posts a receive of message 2 (event
    4) and sends message 2 (event 5) and waits for both (event 6); rank 0 receives message 1
    last (event 7)."""
    ops = np.array([
        [POST, 0, 0, -1], [YIELD, 0, 0, 0], [TIMEOUT, 1, 0, 1], [NOW, 0, 0, 0], [DELAY_SINCE, 2, 1, 2],
        [POST, 7, -1, 1], [YIELD, 7, 0, 0],
        [MARK, 0, 0, 0], [POST, 3, 1, 0], [POST, 4, -1, 2], [POST, 5, 2, -1], [WAITALL, 6, 0, 2],
        [YIELD, 6, 0, 0], [YIELD, 3, 0, 0]], np.int32)
    ptr = np.array([0, 7, 14], np.int64)
    members = np.array([4, 5, 1, 0], np.int32)  # a waitall's events, then the delay's row offsets
    return ops, ptr, members


def test_loop_order_numbers_by_place_then_rank():
    """Messages and events are numbered by the place of the row that makes them in its
    rank's rows, then by rank; ``ops`` and the ``waitall``'s members take the new numbers,
    and the messages' send and receive events too; what is not an event or message (marks,
    timeouts' and delays' figures, the delay's row offsets) stays."""
    ops, ptr, members = _program()
    old = ops.copy()
    send_ev, recv_ev = np.array([0, 3, 5], np.int32), np.array([3, 7, 4], np.int32)
    mnew = loop_order(ops, ptr, np.int64(3), np.int64(8), members, send_ev, recv_ev)
    enew = [0, 2, 5, 1, 3, 4, 6, 7]
    # places: rank 0 makes events 0, 1, 2 at 0, 2, 4 and 7 at 5 (message 0 at 0); rank 1
    # makes 3, 4, 5, 6 at 1, 2, 3, 4 (messages 1 at 1, 2 at 3)
    assert mnew.tolist() == [0, 1, 2]
    assert send_ev.tolist() == [enew[0], enew[3], enew[5]] and recv_ev.tolist() == [enew[3], enew[7], enew[4]]
    assert (ops[:, 0] == old[:, 0]).all()
    assert ops[:, 1].tolist() == [0, 0, 2, 0, 5, 7, 7, 0, 1, 3, 4, 6, 6, 1]
    assert ops[:, 2:].tolist() == old[:, 2:].tolist()   # (messages 0 to 2 keep their numbers here)
    assert members.tolist() == [3, 4, 1, 0]


def test_loop_order_renumbers_messages_by_place():
    # two ranks sending two messages each, the recording's numbers rank after rank
    ops = np.array([[POST, 0, 0, 2], [POST, 1, 1, 3], [POST, 2, 2, 0], [POST, 3, 3, 1]], np.int32)
    ptr = np.array([0, 2, 4], np.int64)
    send_ev, recv_ev = np.array([0, 1, 2, 3], np.int32), np.array([2, 3, 0, 1], np.int32)
    mnew = loop_order(ops, ptr, np.int64(4), np.int64(4), np.zeros(0, np.int32), send_ev, recv_ev)
    assert mnew.tolist() == [0, 2, 1, 3]
    assert send_ev.tolist() == [0, 2, 1, 3] and recv_ev.tolist() == [1, 3, 0, 2]
    assert ops[:, 1:].tolist() == [[0, 0, 1], [2, 2, 3], [1, 1, 0], [3, 3, 2]]
