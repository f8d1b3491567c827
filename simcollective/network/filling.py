"""Weighted progressive filling over flat arrays, as a plain Python function.

:func:`fill` is the one implementation of the max-min filling: :mod:`.kernels` compiles
this very function with ``@njit(cache=True)``, and :func:`max_min_rates` runs it
interpreted until a process has done enough filling to repay loading numba (about 0.17 s
to import numba and 0.2 s to set up its compiler target before the first cached kernel
loads, measured on issue 17's S1 points; each further cached kernel loads in about 3 ms).
Both run the same operations in the same order on IEEE doubles, so they give bit-identical
rates (a test checks it). The incidence of a problem is three arrays of entries: flow
``fi[e]`` consumes ``av[e]`` units of resource ``rj[e]`` per unit of its rate (``av`` is the
multiplicity of the resource on the flow's route, plus any cross-traffic share).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["fill", "max_min_rates", "interpreted_work"]

_INF = np.inf

# filling work (entries + flows + resources, per pass) this process has run interpreted
_WORK = [0]


def fill(w, b, fi, rj, av, c, rates, level_tol):
    """Progressive filling, one level per pass: raise all unfixed flows together until
    the lowest level (a resource's capacity left / weight of its unfixed flows, or a
    flow's bound / weight) is reached, fix the flows it stops, repeat. Adds the rates to
    ``rates``, uses up ``c``; returns the number of passes. Levels within a relative
    ``level_tol`` count as equal. Sums run in entry order (as ``np.bincount`` does).
    A pass visits only the unfixed flows and their entries (kept in order: same sums)."""
    m, n, k = w.shape[0], c.shape[0], fi.shape[0]
    fl = b / w
    aw = np.empty(k)
    for e in range(k):
        aw[e] = av[e] * w[fi[e]]
    ents, flows = np.arange(k), np.arange(m)  # unfixed: entries ents[:ne], flows flows[:nf]
    ne, nf = k, m
    fix = np.zeros(m, dtype=np.bool_)
    wsum, level, dec = np.empty(n), np.empty(n), np.empty(n)
    passes = 0
    while nf > 0:
        passes += 1
        # per-resource weight sums of the unfixed flows (entry order), the lowest level
        wsum[:] = 0.0
        for q in range(ne):
            wsum[rj[ents[q]]] += aw[ents[q]]
        lam = _INF
        for q in range(nf):
            lam = min(lam, fl[flows[q]])
        for j in range(n):
            level[j] = c[j] / wsum[j] if wsum[j] > 0.0 else _INF
            lam = min(lam, level[j])
        if lam == _INF:
            break
        thresh = lam * (1.0 + level_tol)
        for q in range(nf):
            fix[flows[q]] = fl[flows[q]] <= thresh
        for q in range(ne):
            if level[rj[ents[q]]] <= thresh:
                fix[fi[ents[q]]] = True
        dec[:] = 0.0
        for q in range(nf):
            i = flows[q]
            if fix[i]:
                rates[i] += min(w[i] * lam, b[i])
        for q in range(ne):
            e, i = ents[q], fi[ents[q]]
            if fix[i]:
                dec[rj[e]] += av[e] * min(w[i] * lam, b[i])
        for j in range(n):
            c[j] = max(c[j] - dec[j], 0.0)
        kept = 0  # compact both lists, order kept
        for q in range(ne):
            if not fix[fi[ents[q]]]:
                ents[kept] = ents[q]
                kept += 1
        ne, kept = kept, 0
        for q in range(nf):
            if not fix[flows[q]]:
                flows[kept] = flows[q]
                kept += 1
        nf = kept
    return passes


def interpreted_work() -> int:
    """Filling work this process has run interpreted (see :func:`max_min_rates`)."""
    return _WORK[0]


def _kernel(size: int, jit_after: int):
    """The compiled :func:`fill` once numba is loaded or the interpreted work (with this
    problem's first pass) would pass ``jit_after``; else the plain function."""
    if "simcollective.network.kernels" in sys.modules or _WORK[0] + size > jit_after:
        from .kernels import fill as compiled

        return compiled
    return fill


def max_min_rates(weights, bounds, entries_flow, entries_res, entries_coef, capacities, level_tol=1e-12,
                  jit_after=None):
    """Weighted max-min fair rates by progressive filling.

    Parameters
    ----------
    weights, bounds : array of shape (m,)
        Flow weights (shares are proportional to them) and per-flow upper bounds.
    entries_flow, entries_res, entries_coef : arrays of shape (nnz,)
        Incidence: flow ``entries_flow[e]`` consumes ``entries_coef[e]`` units of resource
        ``entries_res[e]`` per unit of its rate.
    capacities : array of shape (n,)
    level_tol : float
    jit_after : int, optional
        Filling work (entries + flows + resources, per pass) to run interpreted in this
        process before loading the compiled kernel (default
        :attr:`~.tuning.Tuning.jit_after`); the rates are the same either way.

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
        if jit_after is None:
            from .tuning import DEFAULT_TUNING

            jit_after = DEFAULT_TUNING.jit_after
        fi = np.asarray(entries_flow, dtype=np.intp)
        c = np.array(capacities, dtype=np.float64)
        size = fi.shape[0] + w.shape[0] + c.shape[0]
        kernel = _kernel(size, jit_after)
        passes = kernel(w, np.asarray(bounds, dtype=np.float64), fi, np.asarray(entries_res, dtype=np.intp),
                        np.asarray(entries_coef, dtype=np.float64), c, rates, level_tol)
        if kernel is fill:
            _WORK[0] += passes * size
    return rates
