"""Compiled max-min kernels: weighted progressive filling over flat arrays.

Plain Python functions compiled with ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs
the same code as Python. The incidence of a problem is three arrays of entries: flow
``fi[e]`` consumes ``av[e]`` units of resource ``rj[e]`` per unit of its rate (``av`` is
the multiplicity of the resource on the flow's route, plus any cross-traffic share).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["fill", "max_min_rates"]

_INF = np.inf


@njit(cache=True)
def _lowest_level(w, fl, fixed, fi, rj, aw, c, wsum, level, m, n, k):
    """Per-resource weight sums of the unfixed flows (entry order) and the lowest level."""
    for j in range(n):
        wsum[j] = 0.0
    for e in range(k):
        if not fixed[fi[e]]:
            wsum[rj[e]] += aw[e]
    lam = _INF
    for i in range(m):
        if fl[i] < lam:
            lam = fl[i]
    for j in range(n):
        if wsum[j] > 0.0:
            level[j] = c[j] / wsum[j]
            if level[j] < lam:
                lam = level[j]
        else:
            level[j] = _INF
    return lam


@njit(cache=True)
def fill(w, b, fi, rj, av, c, rates, level_tol):
    """Progressive filling, one level per pass: raise all unfixed flows together until
    the lowest level (a resource's capacity left / weight of its unfixed flows, or a
    flow's bound / weight) is reached, fix the flows it stops, repeat. Adds the rates to
    ``rates``, uses up ``c``; returns the number of passes. Levels within a relative
    ``level_tol`` count as equal. Sums run in entry order (as ``np.bincount`` does)."""
    m, n, k = w.shape[0], c.shape[0], fi.shape[0]
    fl = b / w
    aw = np.empty(k)
    for e in range(k):
        aw[e] = av[e] * w[fi[e]]
    fixed = np.zeros(m, dtype=np.bool_)
    fix = np.zeros(m, dtype=np.bool_)
    wsum = np.empty(n)
    level = np.empty(n)
    dec = np.empty(n)
    left = m
    passes = 0
    while left > 0:
        passes += 1
        lam = _lowest_level(w, fl, fixed, fi, rj, aw, c, wsum, level, m, n, k)
        if lam == _INF:
            break
        thresh = lam * (1.0 + level_tol)
        for i in range(m):
            fix[i] = fl[i] <= thresh
        for e in range(k):
            if not fixed[fi[e]] and level[rj[e]] <= thresh:
                fix[fi[e]] = True
        for j in range(n):
            dec[j] = 0.0
        for i in range(m):
            if fix[i]:
                got = min(w[i] * lam, b[i])
                rates[i] += got
                fixed[i] = True
                fl[i] = _INF
                left -= 1
        for e in range(k):
            i = fi[e]
            if fix[i]:
                dec[rj[e]] += av[e] * min(w[i] * lam, b[i])
        for j in range(n):
            c[j] = max(c[j] - dec[j], 0.0)
    return passes


def max_min_rates(weights, bounds, entries_flow, entries_res, entries_coef, capacities, level_tol=1e-12):
    """Weighted max-min fair rates by progressive filling.

    Parameters
    ----------
    weights, bounds : array of shape (m,)
        Flow weights (shares are proportional to them) and per-flow upper bounds.
    entries_flow, entries_res, entries_coef : arrays of shape (nnz,)
        Incidence: flow ``entries_flow[e]`` consumes ``entries_coef[e]`` units of resource
        ``entries_res[e]`` per unit of its rate.
    capacities : array of shape (n,)

    Returns
    -------
    numpy.ndarray of shape (m,)

    Examples
    --------
    Worked check 3 of the network model: A: x->y, B: y->z, C: x->z, capacities 1.

    >>> max_min_rates([1, 1, 1], [9, 9, 9], [0, 1, 2, 2], [0, 1, 0, 1], [1, 1, 1, 1], [1.0, 1.0])
    array([0.5, 0.5, 0.5])
    """
    w = np.asarray(weights, dtype=np.float64)
    rates = np.zeros(w.shape[0])
    if w.shape[0]:
        fill(w, np.asarray(bounds, dtype=np.float64), np.asarray(entries_flow, dtype=np.intp),
             np.asarray(entries_res, dtype=np.intp), np.asarray(entries_coef, dtype=np.float64),
             np.array(capacities, dtype=np.float64), rates, level_tol)
    return rates
