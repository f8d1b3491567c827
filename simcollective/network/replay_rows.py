"""The compiled loop's rows of the messages (:func:`.replay.replay`): their paths, their
numbers in the order the loop meets them, and their rows.

The recording numbers messages and events as they are made, a rank at a time (a ring's
rank runs many of its steps in a row), while the loop meets them a step of every rank at
a time: with the recording's numbers each message of a step lies in other pages of each
of the loop's per-message and per-event arrays (about 4,096 pages a step of a ring at
4,096 ranks, in each of half a dozen arrays). :func:`loop_order` numbers them again by the
place of the row that makes them in its rank's rows, then by rank: a ring's step is then
a run of consecutive rows. Numbers are labels to the loop (its order is that of times and
of its own counters), so the simulated times do not change.

Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs the same code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .replay_flows import EAGER
from .replay_kernels import DELAY_SINCE, MARK, NOW, POST, TIMEOUT, WAITALL

__all__ = ["message_rows", "pair_index", "loop_order"]


@njit(cache=True)
def pair_index(src, dst, via, P, V):
    """The distinct keys ``(src P + dst) V + via`` of the messages, in increasing order
    (int64), and each message's index among them (int32): through a table of ``P^2 V``
    places (the caller keeps that near the messages' count)."""
    table = np.zeros(P * P * V, np.int32)
    M = src.shape[0]
    for m in range(M):
        table[(np.int64(src[m]) * P + dst[m]) * V + via[m]] = 1
    n = 0
    for k in range(table.shape[0]):
        if table[k]:
            n += 1
            table[k] = n
    keys = np.empty(n, np.int64)
    for k in range(table.shape[0]):
        if table[k]:
            keys[table[k] - 1] = k
    idx = np.empty(M, np.int32)
    for m in range(M):
        idx[m] = table[(np.int64(src[m]) * P + dst[m]) * V + via[m]] - 1
    return keys, idx


@njit(cache=True)
def loop_order(ops, ptr, M, E, members, send_ev, recv_ev):
    """New numbers (int32) of the ``M`` messages and ``E`` events of the rows ``ops`` (rank
    ``r``'s are ``ops[ptr[r]:ptr[r + 1]]``): by the place in its rank's rows of the row that
    makes each (the posting that sends a message; the posting, ``waitall``, timeout or
    delay of an event), then by rank. ``ops``, the events of the ``waitall`` lists in
    ``members`` and each message's ``send_ev`` and ``recv_ev`` take the new numbers of the
    events in place. Returns the new number of each message."""
    P, L = ptr.shape[0] - 1, 0
    for r in range(P):
        L = max(L, ptr[r + 1] - ptr[r])
    mfirst, efirst = np.zeros(L + 1, np.int64), np.zeros(L + 1, np.int64)
    for r in range(P):  # how many are made at each place
        for i in range(ptr[r], ptr[r + 1]):
            k = ops[i, 0]
            if k == POST or k == WAITALL or k == TIMEOUT or k == DELAY_SINCE:
                efirst[i - ptr[r] + 1] += 1
                if k == POST and ops[i, 2] >= 0:
                    mfirst[i - ptr[r] + 1] += 1
    for j in range(L):
        mfirst[j + 1] += mfirst[j]
        efirst[j + 1] += efirst[j]
    mnew, enew = np.full(M, -1, np.int32), np.full(E, -1, np.int32)
    for r in range(P):  # (ranks in increasing order: each place's numbers go by rank)
        for i in range(ptr[r], ptr[r + 1]):
            k, j = ops[i, 0], i - ptr[r]
            if k == POST or k == WAITALL or k == TIMEOUT or k == DELAY_SINCE:
                enew[ops[i, 1]] = efirst[j]
                efirst[j] += 1
                if k == POST and ops[i, 2] >= 0:
                    mnew[ops[i, 2]] = mfirst[j]
                    mfirst[j] += 1
    if mfirst[L] != M or efirst[L] != E:
        raise ValueError("loop_order: a message or an event without the row that makes it")
    for i in range(ops.shape[0]):
        k = ops[i, 0]
        if k == MARK or k == NOW:
            continue
        ops[i, 1] = enew[ops[i, 1]]
        if k == POST:
            if ops[i, 2] >= 0:
                ops[i, 2] = mnew[ops[i, 2]]
            if ops[i, 3] >= 0:
                ops[i, 3] = mnew[ops[i, 3]]
        elif k == WAITALL:
            for q in range(ops[i, 2], ops[i, 2] + ops[i, 3]):
                if members[q] >= 0:
                    members[q] = enew[members[q]]
    for m in range(M):
        send_ev[m], recv_ev[m] = enew[send_ev[m]], enew[recv_ev[m]]
    return mnew


@njit(cache=True)
def message_rows(pidx, send_ev, recv_ev, size, limit, smpi, eff, lat, bw_k, path_lat, npaths, mnew):
    """The loop's rows of the messages: ``MI`` (path, send event, receive event, flags,
    0; int32, as the recording's rows: counts it bounds), ``MF`` (bytes over the bandwidth
    factor, latency), and the bytes carried on each of the ``npaths`` paths. Message ``m``
    is row ``mnew[m]`` (:func:`loop_order`). A message is eager below ``limit`` bytes
    (``smpi``), else up to it. ``eff`` and ``lat`` are each message's figures, or empty:
    then they are ``size / bw_k`` (0 for an empty message) and its path's ``path_lat``
    (``Network.transfer``'s operations: the same bits)."""
    M = pidx.shape[0]
    MI, MF, sums = np.empty((M, 5), np.int32), np.empty((M, 2)), np.zeros(npaths, np.int64)
    given = eff.shape[0] > 0
    for m in range(M):
        p, s, q = pidx[m], size[m], mnew[m]
        MI[q, 0], MI[q, 1], MI[q, 2], MI[q, 4] = p, send_ev[m], recv_ev[m], 0
        MI[q, 3] = EAGER if (s < limit if smpi else s <= limit) else 0
        if given:
            MF[q, 0], MF[q, 1] = eff[m], lat[m]
        else:
            MF[q, 0], MF[q, 1] = s / bw_k if s > 0 else 0.0, path_lat[p]
        sums[p] += s
    return MI, MF, sums
