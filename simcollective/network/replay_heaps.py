"""Binary heaps, a queue, sets of times and calendars over flat arrays for the compiled event
loop (:mod:`.replay_kernels`).

A heap entry is a float key ``t``, an integer tie-break ``k`` (entries of equal ``t`` leave in
increasing ``k``: SimPy's event id) and two integer payloads. Entries made in increasing
``(t, k)`` (the events that succeed at the time they are triggered) go to a queue instead,
beside the heap: each leaves in its turn without sifting. A set holds distinct due times (one
array, not a typed dict: each typed-dict call costs tens of ns and keeps numba from pruning
the reference counting of the arrays used around it); a calendar is a set of times whose
places also hold the list of entries due at each time (activations and completions: the
flows of a ring step start and end at a few distinct times, so a heap of times stays small
and an entry costs a lookup, where a heap of entries sifted each through its whole depth).
Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs them as Python.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["hpush", "hpop", "qpush", "qgrow", "sput", "sdel", "sgrow", "cput", "ctake", "cfirst", "cdrop", "cgrow"]


@njit(cache=True, inline="always")
def hpush(ht, hk, hv, hw, n, t, k, v, w):
    """Push entry (t, k, v, w) into the heap of ``n`` entries; returns the new count."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < t or (ht[p] == t and hk[p] < k):
            break
        ht[i], hk[i], hv[i], hw[i] = ht[p], hk[p], hv[p], hw[p]
        i = p
    ht[i], hk[i], hv[i], hw[i] = t, k, v, w
    return n + 1


@njit(cache=True, inline="always")
def hpop(ht, hk, hv, hw, n):
    """Drop the top entry (read it at index 0 first); returns the new count."""
    n -= 1
    t, k, v, w = ht[n], hk[n], hv[n], hw[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hk[c + 1] < hk[c])):
            c += 1
        if ht[c] < t or (ht[c] == t and hk[c] < k):
            ht[i], hk[i], hv[i], hw[i] = ht[c], hk[c], hv[c], hw[c]
            i = c
        else:
            break
    if n > 0:
        ht[i], hk[i], hv[i], hw[i] = t, k, v, w
    return n


# -- a queue of entries (t, k, v) pushed in increasing (t, k) order: a ring over three arrays
# (a power of 2 places), its first entry at ``head``; room is the caller's (:func:`qgrow`).

@njit(cache=True, inline="always")
def qpush(qt, qk, qv, head, n, t, k, v):
    """Append entry (t, k, v) to the queue of ``n`` entries from ``head``; returns the new count."""
    i = (head + n) & (qt.shape[0] - 1)
    qt[i], qk[i], qv[i] = t, k, v
    return n + 1


@njit(cache=True)
def qgrow(qt, qk, qv, head, n):
    """The queue in twice the places, its entries from place 0."""
    m = 2 * qt.shape[0]
    nt, nk, nv = np.empty(m), np.empty(m, np.int64), np.empty(m, np.int64)
    mask = qt.shape[0] - 1
    for i in range(n):
        j = (head + i) & mask
        nt[i], nk[i], nv[i] = qt[j], qk[j], qv[j]
    return nt, nk, nv


# -- a set of times (float keys >= 0): open addressing over one array, -1.0 marks an empty
# place; linear probing, and deletion moves the entries after it back (no tombstones).
# Room is the caller's: keep at most half the places filled (:func:`sgrow`).

@njit(cache=True, inline="always")
def _home(keys, t):
    """First place of key ``t`` (from its exact bits: mantissa and exponent)."""
    m, e = math.frexp(t)
    b = np.int64(m * 9007199254740992.0)  # 53 bits
    x = (b & 67108863) ^ (b >> 26) ^ ((e & 2047) << 13)  # < 2**27: the product below fits 64 bits
    return ((x * 2654435761) >> 20) & (keys.shape[0] - 1)


@njit(cache=True, inline="always")
def _place(keys, t):
    """The place of time ``t`` in the set, or the free place it would take."""
    mask = keys.shape[0] - 1
    i = _home(keys, t)
    while keys[i] != t and keys[i] >= 0.0:
        i = (i + 1) & mask
    return i


@njit(cache=True, inline="always")
def _gap(keys, i, vals):
    """Place ``i`` left empty: the entries after it whose first place is not in between move
    back (the columns of ``vals`` with them)."""
    mask = keys.shape[0] - 1
    j = i
    while True:
        j = (j + 1) & mask
        k = keys[j]
        if k < 0.0:
            break
        h = _home(keys, k)
        # k stays unless its first place is outside (i, j] (cyclically): then it moves to i
        if (h <= i or h > j) if i < j else (h <= i and h > j):
            keys[i] = k
            for r in range(vals.shape[0]):
                vals[r, i] = vals[r, j]
            i = j
    keys[i] = -1.0


@njit(cache=True, inline="always")
def sput(keys, t):
    """Add time ``t`` to the set; returns whether it was not there."""
    i = _place(keys, t)
    if keys[i] == t:
        return False
    keys[i] = t
    return True


@njit(cache=True, inline="always")
def sdel(keys, t):
    """Remove time ``t`` (in the set)."""
    _gap(keys, _place(keys, t), keys[:0].reshape((0, 0)))


@njit(cache=True)
def sgrow(keys):
    """The set in twice the places."""
    new = np.full(2 * keys.shape[0], -1.0)
    for i in range(keys.shape[0]):
        if keys[i] >= 0.0:
            sput(new, keys[i])
    return new


# -- a calendar: due times, each with the list of its entries in the order they came (``cal =
# (keys, vals, heap, nxt)``: the set of times above, whose ``vals`` hold each time's first and
# last entries; a heap of the times; entry ``x``'s successor ``nxt[x]``, -1 for none). The
# caller counts the times (``n``) and keeps the set at most half full (:func:`cgrow`). Entries
# leave in (time, arrival) order, as from a heap of (time, arrival) pairs, with one heap entry
# a distinct time.

@njit(cache=True, inline="always")
def cput(cal, n, t, x):
    """Entry ``x`` joins time ``t``'s list (at its end); returns whether ``t`` is new to
    the calendar of ``n`` times."""
    keys, vals, heap, nxt = cal
    nxt[x] = -1
    i = _place(keys, t)
    if keys[i] == t:
        nxt[vals[1, i]] = x
        vals[1, i] = x
        return False
    keys[i] = t
    vals[0, i] = vals[1, i] = x
    i = n  # the heap of times (distinct: no tie-break)
    while i > 0:
        p = (i - 1) >> 1
        if heap[p] < t:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = t
    return True


@njit(cache=True, inline="always")
def ctake(cal, n, now):
    """The first entry of the earliest of the ``n`` times if it is due by ``now`` (the
    time leaves the calendar; its other entries follow through ``nxt``), else -1."""
    keys, vals, heap, nxt = cal
    if n == 0 or heap[0] > now:
        return -1
    t, last = heap[0], heap[n - 1]
    n -= 1
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] < heap[c]:
            c += 1
        if heap[c] < last:
            heap[i] = heap[c]
            i = c
        else:
            break
    heap[i] = last
    i = _place(keys, t)
    x = vals[0, i]
    _gap(keys, i, vals)
    return x


@njit(cache=True, inline="always")
def cfirst(cal):
    """The first entry of the earliest time (the calendar holds one)."""
    keys, vals, heap, nxt = cal
    return vals[0, _place(keys, heap[0])]


@njit(cache=True, inline="always")
def cdrop(cal, n):
    """Drop the first entry of the earliest of the ``n`` times; returns whether the time
    left the calendar (its last entry dropped)."""
    keys, vals, heap, nxt = cal
    i = _place(keys, heap[0])
    x = vals[0, i]
    if x == vals[1, i]:
        ctake(cal, n, heap[0])
        return True
    vals[0, i] = nxt[x]
    return False


@njit(cache=True)
def cgrow(cal, n):
    """The calendar of ``n`` times in twice the places."""
    keys, vals, heap, nxt = cal
    m = 2 * keys.shape[0]
    k2, v2, h2 = np.full(m, -1.0), np.empty((2, m), np.int64), np.empty(m)
    for i in range(keys.shape[0]):
        if keys[i] >= 0.0:
            j = _place(k2, keys[i])
            k2[j], v2[0, j], v2[1, j] = keys[i], vals[0, i], vals[1, i]
    for i in range(n):
        h2[i] = heap[i]
    return k2, v2, h2, nxt
