"""Binary heaps, and a set of times, over flat arrays for the compiled event loop
(:mod:`.replay_kernels`).

A heap entry is a float key ``t``, an integer tie-break ``k`` (entries of equal ``t`` leave in
increasing ``k``: SimPy's event id, or the order entries were made) and two integer
payloads. A set holds the due times that have pending activations, or wake-ups (one
array, not a typed dict: each typed-dict call costs tens of ns and keeps numba from pruning
the reference counting of the arrays used around it). Plain functions under
``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs them as Python.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["hpush", "hpop", "hgrow", "sput", "sdel", "sgrow"]


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


@njit(cache=True, inline="always")
def hgrow(ht, hk, hv, hw):
    """The heap's arrays with twice the room (entries kept)."""
    m = 2 * ht.shape[0] + 16
    nt, nk, nv, nw = np.empty(m), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    n = ht.shape[0]
    for i in range(n):  # (a loop: a slice assignment compiles numba's error text)
        nt[i], nk[i], nv[i], nw[i] = ht[i], hk[i], hv[i], hw[i]
    return nt, nk, nv, nw


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
def sput(keys, t):
    """Add time ``t`` to the set; returns whether it was not there."""
    mask = keys.shape[0] - 1
    i = _home(keys, t)
    while True:
        k = keys[i]
        if k == t:
            return False
        if k < 0.0:
            keys[i] = t
            return True
        i = (i + 1) & mask


@njit(cache=True, inline="always")
def sdel(keys, t):
    """Remove time ``t`` (in the set)."""
    mask = keys.shape[0] - 1
    i = _home(keys, t)
    while keys[i] != t:
        i = (i + 1) & mask
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
            i = j
    keys[i] = -1.0


@njit(cache=True)
def sgrow(keys):
    """The set in twice the places."""
    new = np.full(2 * keys.shape[0], -1.0)
    for i in range(keys.shape[0]):
        if keys[i] >= 0.0:
            sput(new, keys[i])
    return new
