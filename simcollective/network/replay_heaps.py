"""Binary heaps over flat arrays for the compiled event loop (:mod:`.replay_kernels`).

An entry is a float key ``t``, an integer tie-break ``k`` (entries of equal ``t`` leave in
increasing ``k``: SimPy's event id, or the order entries were made) and two integer
payloads. Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs them as
Python.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["hpush", "hpop", "hgrow"]


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
