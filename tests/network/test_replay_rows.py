"""The compiled loop's rows of the messages (:func:`simcollective.network.replay_rows.message_rows`)."""

from __future__ import annotations

import numpy as np

from simcollective.network.replay_flows import EAGER
from simcollective.network.replay_rows import message_rows


def test_message_rows_are_32_bit_and_exact():
    """``MI`` holds counts (paths, events, flows) as int32, half of int64's memory; the
    figures of ``MF`` and the bytes per path are those of ``Network.transfer`` (sizes over
    the bandwidth factor, the path's latency) and exact int64 sums past 2**31."""
    pidx = np.array([0, 1, 0], np.int64)
    send_ev, recv_ev = np.array([3, 5, 7], np.int32), np.array([4, 6, 2**31 - 1], np.int32)
    size = np.array([2**40, 10, 0], np.int64)
    MI, MF, sums = message_rows(pidx, send_ev, recv_ev, size, np.int64(64), False, np.zeros(0), np.zeros(0), 0.5,
                                np.array([1e-6, 2e-6]), 2)
    assert MI.dtype == np.int32
    assert MI[:, :3].tolist() == [[0, 3, 4], [1, 5, 6], [0, 7, 2**31 - 1]]
    assert MI[:, 3].tolist() == [0, EAGER, EAGER]
    assert MF.tolist() == [[2**40 / 0.5, 1e-6], [10 / 0.5, 2e-6], [0.0, 1e-6]]
    assert sums.dtype == np.int64 and sums.tolist() == [2**40, 10]
