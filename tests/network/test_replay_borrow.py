"""Borrowed views (:mod:`simcollective.network.replay_borrow`): the same data, writes kept."""

import numpy as np
from numba import njit

from simcollective.network.replay_borrow import borrow
from simcollective.network.replay_heaps import sdel, sput


@njit
def _put_last(keys, t):
    # the write is the function's last use of the view: numba's dead-code elimination
    # must still see it as a write to the caller's array
    keys = borrow(keys)
    sput(keys, t)


@njit
def _del_last(now, C, mh, keys):
    keys = borrow(keys)
    sdel(keys, now)


@njit
def _through_tuple(h, x, k):
    h, x = borrow(h), borrow(x)
    h[1][k] = 7
    x[k, 0] = 2.5


def test_writes_through_a_borrowed_view_reach_the_array():
    keys = np.full(64, -1.0)
    _put_last(keys, 1.0)
    _put_last(keys, 2.5)
    assert sorted(keys[keys >= 0].tolist()) == [1.0, 2.5]
    C, mh = np.zeros(18, np.int64), (np.zeros(4), np.zeros(4, np.int64))
    _del_last(1.0, C, mh, keys)
    assert keys[keys >= 0].tolist() == [2.5]
    h, x = (np.zeros(3), np.zeros(3, np.int64)), np.zeros((3, 2))
    _through_tuple(h, x, 2)
    assert h[1].tolist() == [0, 0, 7] and x[2, 0] == 2.5 and h[0].sum() == 0


def test_borrow_is_the_identity_in_python():
    a = np.arange(3)
    t = (a, a)
    assert borrow(a) is a and borrow(t) is t
