"""Compiled steps of the array store (:mod:`.bulk`): ONE call per engine event.

State, all NumPy arrays kept between events, packed into a few 2-D arrays so that a
call passes a handful of arguments (numba checks the type of every argument on every
call: a dozen separate arrays cost microseconds per call):

* per path (``pid``): resource row ``pres[pid]`` padded with the dummy resource ``n``
  (infinite capacity), coefficient row ``pcoef[pid]`` (multiplicity of the resource on
  the route plus cross-traffic shares, 0 on padding), weight ``pwb[W, pid]`` and rate
  bound ``pwb[B, pid]``;
* per slot (one active flow), floats ``sf[RATE | TDONE | EFF]`` (rate, completion time,
  ``inf`` while unrated, bytes to send when first rated) and ints ``si[ALIVE | SPID]``,
  with scratch rows ``si[NEW]`` (the slots added this event, in order), ``si[DUE]`` (the
  slots that completed) and ``si[CHANGED]`` (the slots whose rate changed);
* per resource (``n + 1``, the dummy last), floats ``rf[CAP | SAT | NEAR]`` (capacity,
  saturable and "nearly full" thresholds), the sums over live flows of coefficient x
  rate ``rf[LOAD]``, x rate bound ``rf[MAXL]``, x weight ``rf[WSUM]``, and the busy-time
  bookkeeping ``rf[SINCE | BUSY]``; ints ``ri[COUNT]`` (live flows on it) and
  ``ri[LOOKUP]`` (scratch, all -1 between calls);
* ``ctl``: ints ``[solves so far, refresh period]``;
* ``X``: the solves' scratch, kept across solves (fresh arrays of this size cost page
  faults at every solve): ``X[0]`` ints (rows of :func:`.filling.fill_with`, then the
  live slots and the incidence), ``X[1]`` floats (the filling's row, then coefficients,
  weights, bounds and new rates), ``X[2]`` booleans (the filling's), at least max(slots x
  path width, slots + 1) long (:func:`work`). Their contents between calls do not matter.

A rate change moves a completion to ``now + (tdone - now) x old / new``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .filling import NIW
from .kernels import fill_with

# NOTE: numba's cache keeps the compiled code of the kernels a cached kernel calls inside its own
# entry and checks only the caller's source file: a change to a callee's module (:mod:`.filling`
# above all, whose :func:`~.filling.fill_with` the solve calls) is compiled anew in this file's
# kernels only with an edit of this file too.
__all__ = ["RATE", "TDONE", "EFF", "ALIVE", "SPID", "NEW", "DUE", "CHANGED", "CAP", "SAT", "NEAR", "LOAD",
           "MAXL", "WSUM", "SINCE", "BUSY", "COUNT", "LOOKUP", "W", "B", "step", "enter", "loads_on", "work",
           "no_work"]

_INF = np.inf
RATE, TDONE, EFF = 0, 1, 2
ALIVE, SPID, NEW, DUE, CHANGED = 0, 1, 2, 3, 4
CAP, SAT, NEAR, LOAD, MAXL, WSUM, SINCE, BUSY = 0, 1, 2, 3, 4, 5, 6, 7
COUNT, LOOKUP = 0, 1
W, B = 0, 1
#: what :func:`step` did about rates: nothing, new flows at their bounds, a solve
NOTHING, BOUNDS, SOLVED = 0, 1, 2
# scratch rows after the filling's: X[0] live slots, entries' flows, resources, the resources;
# X[1] entries' coefficients, weights, bounds, new rates
_XLIVE, _XFI, _XRJ, _XUNIQ = NIW, NIW + 1, NIW + 2, NIW + 3
_XAV, _XW, _XB, _XNEW = 1, 2, 3, 4
# padding of the scratch rows: rows a power of two of pages apart (the slots double, so would
# the rows) share cache sets, and the filling reads several rows at the same flow
_PAD = 1032


@njit(cache=True)
def no_work():
    """Scratch of no size (:func:`work` grows it)."""
    return np.empty((NIW + 4, 0), np.intp), np.empty((5, 0)), np.empty((2, 0), np.bool_)


@njit(cache=True)
def work(X, slots, D):
    """``X`` if it holds the solves of ``slots`` slots on paths ``D`` resources wide, else
    new scratch that does (the slots double as they grow: so does the scratch)."""
    k = max(slots * D, slots + 1)
    if X[0].shape[1] >= k:
        return X
    k += _PAD
    return np.empty((NIW + 4, k), np.intp), np.empty((5, k)), np.empty((2, k), np.bool_)


@njit(cache=True, inline="always")
def _account(pres, pcoef, p, vec, x):
    """vec[r] += coef x x over the path's resources."""
    for d in range(pres.shape[1]):
        vec[pres[p, d]] += pcoef[p, d] * x


@njit(cache=True, inline="always")
def _occupy(pres, pcoef, p, rf, ri, now, k):
    """A flow joins (k = 1) or leaves (k = -1) its resources: their busy time."""
    for d in range(pres.shape[1]):
        if pcoef[p, d] > 0.0:
            r = pres[p, d]
            c = ri[COUNT, r]
            if k > 0 and c == 0:
                rf[SINCE, r] = now
            elif k < 0 and c == 1:
                rf[BUSY, r] += now - rf[SINCE, r]
            ri[COUNT, r] = c + k


@njit(cache=True, inline="always")
def refresh(sf, si, rf, pres, pcoef, pwb):
    """Recompute the per-resource sums from the live flows (no rounding drift)."""
    rf[LOAD, :] = 0.0
    rf[MAXL, :] = 0.0
    rf[WSUM, :] = 0.0
    for s in range(si.shape[1]):
        if si[ALIVE, s]:
            p = si[SPID, s]
            _account(pres, pcoef, p, rf[MAXL], pwb[B, p])
            _account(pres, pcoef, p, rf[WSUM], pwb[W, p])
            if sf[RATE, s] != 0.0:
                _account(pres, pcoef, p, rf[LOAD], sf[RATE, s])


@njit(cache=True, inline="always")
def _add(now, nnew, sf, si, rf, ri, pres, pcoef, pwb, occupy):
    """The slots ``si[NEW, :nnew]`` (path and bytes already written) become live (and
    count on their resources if ``occupy``: not when moving in, counted already)."""
    for i in range(nnew):
        s = si[NEW, i]
        p = si[SPID, s]
        si[ALIVE, s] = 1
        sf[RATE, s] = 0.0
        sf[TDONE, s] = _INF
        _account(pres, pcoef, p, rf[MAXL], pwb[B, p])
        _account(pres, pcoef, p, rf[WSUM], pwb[W, p])
        if occupy:
            _occupy(pres, pcoef, p, rf, ri, now, 1)


@njit(cache=True, inline="always")
def _remove_due(now, sf, si, rf, ri, pres, pcoef, pwb):
    """Remove the flows complete by ``now`` (ascending slots, written to ``si[DUE]``).
    Returns (count, lowest level rate / weight among them, whether one of them left a
    nearly full resource: its other flows may speed up)."""
    k = 0
    low = _INF
    coupled = False
    for s in range(si.shape[1]):
        if si[ALIVE, s] and sf[TDONE, s] <= now:
            p = si[SPID, s]
            lvl = sf[RATE, s] / pwb[W, p]
            if lvl < low:
                low = lvl
            for d in range(pres.shape[1]):
                r = pres[p, d]
                if rf[LOAD, r] >= rf[NEAR, r] and pcoef[p, d] > 0.0:
                    coupled = True
            _account(pres, pcoef, p, rf[MAXL], -pwb[B, p])
            _account(pres, pcoef, p, rf[WSUM], -pwb[W, p])
            if sf[RATE, s] != 0.0:
                _account(pres, pcoef, p, rf[LOAD], -sf[RATE, s])
            _occupy(pres, pcoef, p, rf, ri, now, -1)
            si[ALIVE, s] = 0
            sf[RATE, s] = 0.0
            sf[TDONE, s] = _INF
            si[DUE, k] = s
            k += 1
    return k, low, coupled


@njit(cache=True, inline="always")
def _bounds_fit(now, nnew, sf, si, rf, pres, pcoef, pwb):
    """New flows that fit at their bound take it: nobody else's rate changes (every other
    flow keeps its bottleneck, and a flow at its bound needs none); returns False at the
    first that does not fit. A flow may fill a resource exactly (its bound is often a
    link's capacity)."""
    for i in range(nnew):
        s = si[NEW, i]
        p = si[SPID, s]
        x = pwb[B, p]
        for d in range(pres.shape[1]):
            r = pres[p, d]
            if rf[LOAD, r] + pcoef[p, d] * x > rf[SAT, r]:
                return False
        sf[RATE, s] = x
        sf[TDONE, s] = now + sf[EFF, s] / x
        _account(pres, pcoef, p, rf[LOAD], x)
    return True


@njit(cache=True, inline="always")
def _cutoff(low, sf, si, rf, pres, pwb):
    """The lowest level a change can reach: ``low`` (the lowest level of the flows that
    ended: removing them cannot change any lower level, progressive filling reaches those
    through the same saturations) and, for each new flow, the lowest level it can get
    (its bound, or capacity / total weight on one of its saturable resources)."""
    cut = low
    for s in range(si.shape[1]):
        if si[ALIVE, s] and sf[RATE, s] == 0.0:
            p = si[SPID, s]
            f = pwb[B, p] / pwb[W, p]
            for d in range(pres.shape[1]):
                r = pres[p, d]
                if rf[MAXL, r] > rf[SAT, r]:
                    f = min(f, rf[CAP, r] / rf[WSUM, r])
            cut = min(cut, f)
    return cut


@njit(cache=True, inline="always")
def _live(cut, tol, sf, si, pwb, live):
    """Slots to re-solve: new flows and those at or above the cutoff level (written to
    the scratch ``live``)."""
    m = 0
    total = 0
    lim = cut * (1.0 - tol)
    for s in range(si.shape[1]):
        if si[ALIVE, s]:
            total += 1
            if sf[RATE, s] == 0.0 or sf[RATE, s] / pwb[W, si[SPID, s]] >= lim:
                live[m] = s
                m += 1
    return live[:m], m == total


@njit(cache=True, inline="always")
def _incidence(live, si, rf, ri, pres, pcoef, X):
    """Entries of the live flows on saturable resources, resources numbered compactly
    in order of first appearance (``ri[LOOKUP]`` is scratch, all -1 on entry and exit),
    written to the scratch ``X``."""
    D = pres.shape[1]
    lookup = ri[LOOKUP]
    fi, rj, uniq, av = X[0][_XFI], X[0][_XRJ], X[0][_XUNIQ], X[1][_XAV]
    k = 0
    u = 0
    for i in range(live.shape[0]):
        p = si[SPID, live[i]]
        for d in range(D):
            r = pres[p, d]
            if rf[MAXL, r] > rf[SAT, r]:
                if lookup[r] < 0:
                    lookup[r] = u
                    uniq[u] = r
                    u += 1
                fi[k] = i
                rj[k] = lookup[r]
                av[k] = pcoef[p, d]
                k += 1
    for j in range(u):
        lookup[uniq[j]] = -1
    return fi[:k], rj[:k], av[:k], uniq[:u]


@njit(cache=True, inline="always")
def _apply(now, live, new, sf, si, rf, pres, pcoef):
    """Give the live flows their new rates; returns how many changed (in ``si[CHANGED]``)."""
    k = 0
    for i in range(live.shape[0]):
        s = live[i]
        o, x = sf[RATE, s], new[i]
        if x == o:
            continue
        left = sf[EFF, s] if o == 0.0 else max(sf[TDONE, s] - now, 0.0) * o
        sf[TDONE, s] = now + left / x
        sf[RATE, s] = x
        _account(pres, pcoef, si[SPID, s], rf[LOAD], x - o)
        si[CHANGED, k] = s
        k += 1
    return k


@njit(cache=True, inline="always")
def _solve(now, low, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, X):
    """Max-min rates of the live flows: those below the cutoff keep their rates, the
    others are solved by progressive filling on the capacity the kept flows leave.
    Returns the number of changed slots (written to ``si[CHANGED]``)."""
    cut = _cutoff(low, sf, si, rf, pres, pwb)
    live, every = _live(cut, cutoff_tol, sf, si, pwb, X[0][_XLIVE])
    m = live.shape[0]
    if m == 0:
        return 0
    fi, rj, av, uniq = _incidence(live, si, rf, ri, pres, pcoef, X)
    w, b, new = X[1][_XW, :m], X[1][_XB, :m], X[1][_XNEW, :m]
    for i in range(m):
        w[i] = pwb[W, si[SPID, live[i]]]
        b[i] = pwb[B, si[SPID, live[i]]]
        new[i] = 0.0
    resid = np.empty(uniq.shape[0])
    if every:
        for j in range(uniq.shape[0]):
            resid[j] = rf[CAP, uniq[j]]
    else:
        # capacity left by the kept flows: the load minus what the live flows use
        mine = np.zeros(uniq.shape[0])
        for e in range(fi.shape[0]):
            mine[rj[e]] += av[e] * sf[RATE, live[fi[e]]]
        for j in range(uniq.shape[0]):
            r = uniq[j]
            resid[j] = max(rf[CAP, r] - (rf[LOAD, r] - mine[j]), 0.0)
    fill_with(w, b, fi, rj, av, resid, new, level_tol, X[0], X[1], X[2])
    return _apply(now, live, new, sf, si, rf, pres, pcoef)


@njit(cache=True)
def _counted_solve(now, low, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, ctl, X):
    """:func:`_solve`, with the sums recomputed every ``ctl[1]`` solves."""
    ctl[0] += 1
    if ctl[0] % ctl[1] == 0:
        refresh(sf, si, rf, pres, pcoef, pwb)
    return _solve(now, low, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, X)


@njit(cache=True, inline="always")
def _next_time(sf, si):
    t = _INF
    for s in range(si.shape[1]):
        if si[ALIVE, s] and sf[TDONE, s] < t:
            t = sf[TDONE, s]
    return t


@njit(cache=True)
def step(now, nnew, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, ctl, X):
    """One engine event: add the new slots, remove the flows complete by ``now``, then
    give the new flows their bounds if they fit, else re-solve what the change reaches.
    Returns (flows removed (in ``si[DUE]``), slots changed (in ``si[CHANGED]``) when
    solved, what was done (NOTHING, BOUNDS, SOLVED), the next completion time)."""
    _add(now, nnew, sf, si, rf, ri, pres, pcoef, pwb, True)
    k, low, coupled = _remove_due(now, sf, si, rf, ri, pres, pcoef, pwb)
    what = NOTHING
    nch = 0
    if not coupled and nnew > 0:
        coupled = not _bounds_fit(now, nnew, sf, si, rf, pres, pcoef, pwb)
        if not coupled:
            what = BOUNDS
    if coupled:
        nch = _counted_solve(now, low, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, ctl, X)
        what = SOLVED
    return k, nch, what, _next_time(sf, si)


@njit(cache=True)
def enter(now, low, nnew, rates, tdones, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, ctl, X):
    """Flows moving in with their rates (``rates``, ``tdones`` in ``si[NEW]`` order), then
    a solve; returns (slots changed, the next completion time)."""
    _add(now, nnew, sf, si, rf, ri, pres, pcoef, pwb, False)
    for i in range(nnew):
        s = si[NEW, i]
        sf[RATE, s] = rates[i]
        sf[TDONE, s] = tdones[i]
    refresh(sf, si, rf, pres, pcoef, pwb)
    nch = _counted_solve(now, low, cutoff_tol, level_tol, sf, si, rf, ri, pres, pcoef, pwb, ctl, X)
    return nch, _next_time(sf, si)


@njit(cache=True)
def loads_on(rs, sf, si, pres, pcoef, out):
    """out[i] = coefficient x rate summed over the live flows on resource rs[i] (slot order)."""
    for i in range(rs.shape[0]):
        out[i] = 0.0
    for s in range(si.shape[1]):
        if si[ALIVE, s] and sf[RATE, s] != 0.0:
            p = si[SPID, s]
            for d in range(pres.shape[1]):
                for i in range(rs.shape[0]):
                    if pres[p, d] == rs[i]:
                        out[i] += pcoef[p, d] * sf[RATE, s]
