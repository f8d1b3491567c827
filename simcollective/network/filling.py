"""Weighted progressive filling over flat arrays, as a plain Python function.

:func:`fill` is the one implementation of the max-min filling: :mod:`.kernels` compiles
this very function with ``@njit(cache=True)``, and :func:`max_min_rates` runs it
interpreted until a process has done enough filling to repay loading numba (about 0.17 s
to import numba and 0.2 s to set up its compiler target before the first cached kernel
loads, measured on the benchmarks' S1 points; each further cached kernel loads in about 3 ms).
Both run the same operations in the same order on IEEE doubles, so they give bit-identical
rates (a test checks it). The incidence of a problem is three arrays of entries: flow
``fi[e]`` consumes ``av[e]`` units of resource ``rj[e]`` per unit of its rate (``av`` is the
multiplicity of the resource on the flow's route, plus any cross-traffic share).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["fill", "fill_with", "fill_unit", "NIW", "max_min_rates", "interpreted_work"]

_INF = np.inf
#: rows of :func:`fill_with`'s int scratch: entries by resource and by flow, the flows'
#: group starts and fill positions, the unfixed flows
_RENT, _FENT, _FPTR, _FPOS, _FLOWS = 0, 1, 2, 3, 4
NIW = 5

# filling work (entries + flows + resources, per pass) this process has run interpreted
_WORK = [0]


def fill(w, b, fi, rj, av, c, rates, level_tol):
    """Progressive filling, one level per pass: raise all unfixed flows together until
    the lowest level (a resource's capacity left / weight of its unfixed flows, or a
    flow's bound / weight) is reached, fix the flows it stops, repeat. Adds the rates to
    ``rates``, uses up ``c``; returns the number of passes. Levels within a relative
    ``level_tol`` count as equal. A pass visits the unfixed flows, the resources they
    use, and the entries of the resources of the flows it fixed: each such resource's
    sums run over its entries in entry order (as ``np.bincount`` does).

    Where every weight and coefficient is 1.0 and the entries come in flow order (the
    engines' problems under a profile without penalty weights or cross traffic), a
    resource's weight sum is the count of its unfixed entries (a sum of ones is exact)
    and the capacity its fixed flows take is summed as they are fixed, in flow order,
    which is its entry order: the same numbers without grouping the entries by resource,
    a pass walking the unfixed flows, each over its own entries (:func:`_fill_unit`)."""
    m = w.shape[0]
    k = max(fi.shape[0], m + 1)
    return fill_with(w, b, fi, rj, av, c, rates, level_tol, np.empty((NIW, k), np.intp), np.empty((1, k)),
                     np.empty((2, k), np.bool_))


def fill_with(w, b, fi, rj, av, c, rates, level_tol, iw, fw, bw):
    """:func:`fill` in caller-owned scratch (kept across solves: large fresh arrays cost
    page faults each time): rows ``iw[:NIW]`` (ints), ``fw[0]`` (floats) and ``bw[:2]``
    (booleans), each at least max(entries, flows + 1) long; their contents on entry do
    not matter."""
    if _unit(w, fi, av):
        return _fill_unit(b, fi, rj, c, rates, level_tol, iw)
    m, n = w.shape[0], c.shape[0]
    rptr, rent = _csr(rj, n, np.empty(n + 1, np.intp), np.empty(n, np.intp), iw[_RENT])
    fptr, fent = _csr(fi, m, iw[_FPTR], iw[_FPOS], iw[_FENT])
    rlen = rptr[1:] - rptr[:n]  # entries of unfixed flows: rent[rptr[j]:rptr[j] + rlen[j]]
    fl, fixed, fix, flows = fw[0], bw[0], bw[1], iw[_FLOWS]
    for i in range(m):
        fl[i], fixed[i], fix[i], flows[i] = b[i] / w[i], False, False, i
    level, touched = np.empty(n), np.zeros(n, np.bool_)
    res, tl = np.arange(n), np.arange(n)  # resources, touched
    nf, nr, nt, lam, passes = m, n, n, 0.0, 0
    while True:
        _settle(tl, nt, lam, w, b, fi, av, c, rptr, rlen, rent, fix, level, touched)
        kept = 0
        for q in range(nf):
            fix[flows[q]] = False
            if not fixed[flows[q]]:
                flows[kept] = flows[q]
                kept += 1
        nf, kept = kept, 0
        for q in range(nr):
            if level[res[q]] < np.inf:
                res[kept] = res[q]
                kept += 1
        nr = kept
        if nf == 0:
            break
        passes += 1
        lam = np.inf
        for q in range(nf):
            lam = min(lam, fl[flows[q]])
        for q in range(nr):
            lam = min(lam, level[res[q]])
        if lam == np.inf:
            break
        nt = _fix(lam * (1.0 + level_tol), lam, flows, nf, res, nr, w, b, fl, fi, rj, rptr, rlen, rent, fptr, fent,
                  rates, fix, fixed, level, touched, tl)
    return passes


def _fill_unit(b, fi, rj, c, rates, level_tol, iw):
    """:func:`fill_with` where every weight and coefficient is 1.0 and the entries come in
    flow order (:func:`fill_unit`)."""
    m, k = b.shape[0], fi.shape[0]
    fptr = iw[_FPTR]
    e = 0
    for i in range(m):
        fptr[i] = e
        while e < k and fi[e] == i:
            e += 1
    fptr[m] = e
    rlen = np.zeros(c.shape[0], np.intp)
    for e in range(k):
        rlen[rj[e]] += 1
    return fill_unit(b, fptr, rj, rlen, c, rates, level_tol, iw[_FLOWS])


def fill_unit(b, fptr, rj, rlen, c, rates, level_tol, flows):
    """:func:`fill` where every weight and coefficient is 1.0, the entries given by flow
    (flow ``i`` uses resources ``rj[fptr[i]:fptr[i + 1]]``) with their count on each
    resource (``rlen``, used up): a pass walks the unfixed flows in order, each over its
    own entries (a flow stops at its bound or on a resource at the pass's level), and a
    resource keeps only its count of unfixed entries and the capacity the flows fixed in
    the pass take (summed in flow order, its entry order). ``flows`` is scratch, at least
    one per flow."""
    m, n = b.shape[0], c.shape[0]
    lamf = np.inf  # the lowest bound of the unfixed flows
    for i in range(m):
        flows[i] = i
        lamf = min(lamf, b[i])
    level, touched, dec = np.empty(n), np.zeros(n, np.bool_), np.zeros(n)
    res, tl = np.arange(n), np.arange(n)  # resources, touched
    nf, nr, nt, passes = m, n, n, 0
    while True:
        _settle_unit(tl, nt, c, rlen, dec, level, touched)
        kept, lamr = 0, np.inf
        for q in range(nr):
            j = res[q]
            if level[j] < np.inf:
                res[kept] = j
                kept += 1
                lamr = min(lamr, level[j])
        nr = kept
        if nf == 0:
            break
        passes += 1
        lam = min(lamf, lamr)
        if lam == np.inf:
            break
        nt, nf, lamf = _pass_unit(lam * (1.0 + level_tol), lam, flows, nf, b, rj, fptr, rates, rlen, dec, level,
                                  touched, tl)
    return passes


def _pass_unit(thresh, lam, flows, nf, b, rj, fptr, rates, rlen, dec, level, touched, tl):
    """One pass of :func:`_fill_unit`: fix the flows at or under ``thresh`` (their bound,
    or on a resource at that level) at ``lam``, in flow order, summing what they take
    per resource in ``dec``, counting them off ``rlen`` and listing their resources in
    ``tl``. Returns (touched resources, unfixed flows (kept in ``flows``, in order), their
    lowest bound)."""
    nt, kept, low = 0, 0, np.inf
    for q in range(nf):
        i = flows[q]
        stop = b[i] <= thresh
        e = fptr[i]
        while not stop and e < fptr[i + 1]:
            stop = level[rj[e]] <= thresh
            e += 1
        if not stop:
            flows[kept] = i
            kept += 1
            low = min(low, b[i])
            continue
        x = min(lam, b[i])
        rates[i] += x
        for e in range(fptr[i], fptr[i + 1]):
            j = rj[e]
            dec[j] += x
            rlen[j] -= 1
            if not touched[j]:
                touched[j] = True
                tl[nt] = j
                nt += 1
    return nt, kept, low


def _unit(w, fi, av):
    """Whether every weight and coefficient is 1.0 and the entries are in flow order."""
    for i in range(w.shape[0]):
        if w[i] != 1.0:
            return False
    for e in range(fi.shape[0]):
        if av[e] != 1.0 or (e and fi[e] < fi[e - 1]):
            return False
    return True


def _csr(idx, size, ptr, pos, ent):
    """Entries grouped by ``idx`` (entry order kept within a group), written into the
    scratch ``ptr`` (at least ``size + 1`` long), ``pos`` (``size``) and ``ent`` (one per
    entry): (start of each group in ``ent``, ``ent``), cut to length."""
    for j in range(size + 1):
        ptr[j] = 0
    for e in range(idx.shape[0]):
        ptr[idx[e] + 1] += 1
    for j in range(size):
        ptr[j + 1] += ptr[j]
        pos[j] = ptr[j]
    for e in range(idx.shape[0]):
        ent[pos[idx[e]]] = e
        pos[idx[e]] += 1
    return ptr[: size + 1], ent[: idx.shape[0]]


def _settle(tl, nt, lam, w, b, fi, av, c, rptr, rlen, rent, fix, level, touched):
    """For each touched resource: take the capacity its flows fixed at ``lam`` use,
    then its level (capacity left / weight of its unfixed flows, or inf); its list of
    entries keeps those of unfixed flows (in order)."""
    for q in range(nt):
        j, dec, ws = tl[q], 0.0, 0.0
        kept = rptr[j]
        for p in range(rptr[j], rptr[j] + rlen[j]):
            e = rent[p]
            i = fi[e]
            if fix[i]:
                dec += av[e] * min(w[i] * lam, b[i])
            else:
                ws += av[e] * w[i]
                rent[kept] = e
                kept += 1
        rlen[j] = kept - rptr[j]
        c[j] = max(c[j] - dec, 0.0)
        level[j] = c[j] / ws if ws > 0.0 else np.inf
        touched[j] = False


def _settle_unit(tl, nt, c, rlen, dec, level, touched):
    """:func:`_settle` where weights and coefficients are 1.0: the capacity taken is
    ``dec`` (summed by :func:`_pass_unit` in entry order), the weight the unfixed count."""
    for q in range(nt):
        j = tl[q]
        c[j] = max(c[j] - dec[j], 0.0)
        ws = float(rlen[j])
        level[j] = c[j] / ws if ws > 0.0 else np.inf
        touched[j] = False
        dec[j] = 0.0


def _fix(thresh, lam, flows, nf, res, nr, w, b, fl, fi, rj, rptr, rlen, rent, fptr, fent, rates, fix, fixed,
         level, touched, tl):
    """Fix the flows at or under ``thresh`` (their bound, or on a resource at that
    level) at ``lam``; list their resources in ``tl``; returns how many."""
    for q in range(nf):
        fix[flows[q]] = fl[flows[q]] <= thresh
    for q in range(nr):
        j = res[q]
        if level[j] <= thresh:
            for p in range(rptr[j], rptr[j] + rlen[j]):
                fix[fi[rent[p]]] = True
    nt = 0
    for q in range(nf):
        i = flows[q]
        if fix[i]:
            x = min(w[i] * lam, b[i])
            rates[i] += x
            fixed[i] = True
            for p in range(fptr[i], fptr[i + 1]):
                j = rj[fent[p]]
                if not touched[j]:
                    touched[j] = True
                    tl[nt] = j
                    nt += 1
    return nt


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
