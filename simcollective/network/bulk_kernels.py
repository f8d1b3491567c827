"""Compiled steps of the array store (:mod:`.bulk`): ONE call per engine event.

The arrays (per path, per slot, per resource, controls) are :mod:`.bulk_rows`'s. ``X``:
the solves' scratch, kept across solves (fresh arrays of this size cost page faults at
every solve): ``X[0]`` ints (rows of :func:`.filling.fill_with`, then the live slots, the
incidence and the unrated slots), ``X[1]`` floats (the filling's row, then coefficients,
weights, bounds, new rates and capacities left), ``X[2]`` booleans (the filling's), at
least max(slots x path width, slots + 1) long (:func:`work`). Their contents between
calls do not matter.

A step walks the slots at most twice: once to remove the flows complete (listing the
unrated ones and the earliest completion of the others on the way; not at all when the
step comes before the next completion the last one found and no flow was left unrated:
nothing is due, and the unrated flows are the new ones), once for a solve to list the
flows it re-solves with their entries on saturable resources (and the earliest completion
of the others). Where every weight and coefficient is 1.0 (no penalty weights, no cross
traffic) that listing is all :func:`.filling.fill_unit` needs; else the solve is
:func:`.filling.fill_with`'s. A rate change moves a completion to
``now + (tdone - now) x old / new``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bulk_rows import (ALIVE, B, BOUND, BUSY, CAP, CHANGED, COUNT, DUE, EFF, LEN, LOAD, LOOKUP, MAXL, NEAR, NEW,
                        NEXT, NSF, PERIOD, R0, RATE, SAT, SINCE, SOLVES, SPID, TDONE, UNRATED, W, WEIGHT, WSUM,
                        account, coef, controls, copy_row, loads_on, occupy, refresh, rows)
from .filling import NIW
from .kernels import fill_unit, fill_with

# NOTE: numba's cache keeps the compiled code of the kernels a cached kernel calls inside its own
# entry and checks only the caller's source file: a change to a callee's module (:mod:`.filling`
# above all, whose :func:`~.filling.fill_with` the solve calls) is compiled anew in this file's
# kernels only with an edit of this file too.
# numba cache: callees 76717027143a
__all__ = ["RATE", "TDONE", "EFF", "WEIGHT", "BOUND", "NSF", "ALIVE", "SPID", "NEW", "DUE", "CHANGED", "CAP", "SAT",
           "NEAR", "LOAD", "MAXL", "WSUM", "SINCE", "BUSY", "COUNT", "LOOKUP", "W", "B", "SOLVES", "PERIOD", "NEXT",
           "UNRATED", "R0", "step", "enter", "loads_on", "work", "no_work", "rows", "controls"]

_INF = np.inf
#: what :func:`step` did about rates: nothing, new flows at their bounds, a solve
NOTHING, BOUNDS, SOLVED = 0, 1, 2
# scratch rows after the filling's: X[0] live slots, entries' flows, resources, the resources,
# unrated slots, each live flow's first entry, entries on each resource; X[1] entries'
# coefficients, weights, bounds, new rates, capacity left
_XLIVE, _XFI, _XRJ, _XUNIQ, _XZERO, _XFPTR, _XCNT = NIW, NIW + 1, NIW + 2, NIW + 3, NIW + 4, NIW + 5, NIW + 6
_XAV, _XW, _XB, _XNEW, _XRES = 1, 2, 3, 4, 5
_NX0, _NX1 = NIW + 7, 6
# padding of the scratch rows: rows a power of two of pages apart (the slots double, so would
# the rows) share cache sets, and the filling reads several rows at the same flow
_PAD = 1032


@njit(cache=True)
def no_work():
    """Scratch of no size (:func:`work` grows it)."""
    return np.empty((_NX0, 0), np.intp), np.empty((_NX1, 0)), np.empty((2, 0), np.bool_)


@njit(cache=True)
def work(X, slots, D):
    """``X`` if it holds the solves of ``slots`` slots on paths ``D`` resources wide, else
    new scratch that does (the slots double as they grow: so does the scratch)."""
    k = max(slots * D, slots + 1)
    if X[0].shape[1] >= k:
        return X
    k += _PAD
    return np.empty((_NX0, k), np.intp), np.empty((_NX1, k)), np.empty((2, k), np.bool_)


@njit(cache=True, inline="always")
def _add(now, nnew, sf, si, rf, ri, sr, pres, pcoef, pwb, count):
    """The slots ``si[NEW, :nnew]`` (path and bytes already written) become live (and
    count on their resources if ``count``: not when moving in, counted already)."""
    for i in range(nnew):
        s = si[NEW, i]
        copy_row(s, si[SPID, s], sf, sr, pres, pcoef, pwb, rf.shape[1] - 1)
        si[ALIVE, s] = 1
        sf[RATE, s] = 0.0
        sf[TDONE, s] = _INF
        account(sr, pcoef, si, s, rf[MAXL], sf[BOUND, s])
        account(sr, pcoef, si, s, rf[WSUM], sf[WEIGHT, s])
        if count:
            occupy(sr, pcoef, si, s, rf, ri, now, 1)


@njit(cache=True, inline="always")
def _remove_due(now, sf, si, rf, ri, sr, pcoef, zero):
    """Remove the flows complete by ``now`` (ascending slots, written to ``si[DUE]``) and
    list the unrated live slots in ``zero``. Returns (count, lowest level rate / weight
    among them, whether one of them left a nearly full resource: its other flows may
    speed up, how many unrated, the earliest completion of the others)."""
    k, nz = 0, 0
    low, t = _INF, _INF
    coupled = False
    for s in range(si.shape[1]):
        if not si[ALIVE, s]:
            continue
        if not sf[TDONE, s] <= now:
            if sf[TDONE, s] < t:
                t = sf[TDONE, s]
            if sf[RATE, s] == 0.0:
                zero[nz] = s
                nz += 1
            continue
        lvl = sf[RATE, s] / sf[WEIGHT, s]
        if lvl < low:
            low = lvl
        for d in range(sr[s, LEN]):
            r = sr[s, R0 + d]
            if rf[LOAD, r] >= rf[NEAR, r] and coef(sr, pcoef, si, s, d) > 0.0:
                coupled = True
        account(sr, pcoef, si, s, rf[MAXL], -sf[BOUND, s])
        account(sr, pcoef, si, s, rf[WSUM], -sf[WEIGHT, s])
        if sf[RATE, s] != 0.0:
            account(sr, pcoef, si, s, rf[LOAD], -sf[RATE, s])
        occupy(sr, pcoef, si, s, rf, ri, now, -1)
        si[ALIVE, s] = 0
        sf[RATE, s] = 0.0
        sf[TDONE, s] = _INF
        si[DUE, k] = s
        k += 1
    return k, low, coupled, nz, t


@njit(cache=True, inline="always")
def _bounds_fit(now, nnew, sf, si, rf, sr, pcoef):
    """New flows that fit at their bound take it: nobody else's rate changes (every other
    flow keeps its bottleneck, and a flow at its bound needs none); returns False at the
    first that does not fit. A flow may fill a resource exactly (its bound is often a
    link's capacity)."""
    for i in range(nnew):
        s = si[NEW, i]
        x = sf[BOUND, s]
        for d in range(sr[s, LEN]):
            r = sr[s, R0 + d]
            if rf[LOAD, r] + coef(sr, pcoef, si, s, d) * x > rf[SAT, r]:
                return False
        sf[RATE, s] = x
        sf[TDONE, s] = now + sf[EFF, s] / x
        account(sr, pcoef, si, s, rf[LOAD], x)
    return True


@njit(cache=True, inline="always")
def _cutoff(low, zero, sf, rf, sr):
    """The lowest level a change can reach: ``low`` (the lowest level of the flows that
    ended: removing them cannot change any lower level, progressive filling reaches those
    through the same saturations) and, for each new flow (the slots of ``zero`` still
    unrated), the lowest level it can get (its bound, or capacity / total weight on one
    of its saturable resources)."""
    cut = low
    for q in range(zero.shape[0]):
        s = zero[q]
        if sf[RATE, s] == 0.0:
            f = sf[BOUND, s] / sf[WEIGHT, s]
            for d in range(sr[s, LEN]):
                r = sr[s, R0 + d]
                if rf[MAXL, r] > rf[SAT, r]:
                    f = min(f, rf[CAP, r] / rf[WSUM, r])
            cut = min(cut, f)
    return cut


@njit(cache=True, inline="always")
def _saturable(rf, lookup):
    """``lookup[r]`` = -1 for the saturable resources (their flows' bounds exceed them),
    -2 for the others."""
    for r in range(lookup.shape[0]):
        lookup[r] = -1 if rf[MAXL, r] > rf[SAT, r] else -2


@njit(cache=True)
def _gather(cut, tol, sf, si, rf, ri, sr, pcoef, X):
    """The slots to re-solve (new flows and those at or above the cutoff level, in slot
    order, to ``X[0][_XLIVE]``), their weights and bounds, their entries on saturable
    resources (in flow order, each flow's first in ``X[0][_XFPTR]``; resources numbered
    compactly in order of first appearance through ``ri[LOOKUP]``), the resources, their
    entries' count and what the live flows use of each (summed in entry order). Returns
    (live slots, entries, resources, whether every flow is live, whether every weight
    and coefficient is 1.0, the earliest completion of the others). The entries' flows
    and coefficients are written only where a weight or coefficient is not 1.0 (from
    the first such on, then filled in before it): the unit filling reads neither."""
    lookup = ri[LOOKUP]
    _saturable(rf, lookup)
    live, fi, rj, uniq = X[0][_XLIVE], X[0][_XFI], X[0][_XRJ], X[0][_XUNIQ]
    fptr, cnt = X[0][_XFPTR], X[0][_XCNT]
    av, w, b, mine = X[1][_XAV], X[1][_XW], X[1][_XB], X[1][_XRES]
    lim = cut * (1.0 - tol)
    m, k, u, total, unit, k1, t = 0, 0, 0, 0, True, 0, _INF
    for s in range(si.shape[1]):
        if not si[ALIVE, s]:
            continue
        total += 1
        x, ws = sf[RATE, s], sf[WEIGHT, s]
        if not (x == 0.0 or x / ws >= lim):
            if sf[TDONE, s] < t:
                t = sf[TDONE, s]
            continue
        live[m], w[m], b[m], fptr[m] = s, ws, sf[BOUND, s], k
        if unit and ws != 1.0:
            unit, k1 = False, k
        for d in range(sr[s, LEN]):
            j = lookup[sr[s, R0 + d]]
            if j == -2:
                continue
            if j == -1:
                r = sr[s, R0 + d]
                j = lookup[r] = u
                uniq[u], mine[u], cnt[u] = r, 0.0, 0
                u += 1
            a = coef(sr, pcoef, si, s, d)
            if unit and a != 1.0:
                unit, k1 = False, k
            if not unit:
                fi[k], av[k] = m, a
            rj[k] = j
            mine[j] += a * x
            cnt[j] += 1
            k += 1
        m += 1
    fptr[m] = k
    if not unit:  # the entries before the first weight or coefficient other than 1.0
        for i in range(m):
            for e in range(fptr[i], min(fptr[i + 1], k1)):
                fi[e], av[e] = i, 1.0
    return m, k, u, m == total, unit, t


@njit(cache=True)
def _apply(now, live, new, sf, si, rf, sr, pcoef, t):
    """Give the live flows their new rates; returns (how many changed (in
    ``si[CHANGED]``), the earliest of ``t`` and their completions, how many are unrated)."""
    k, z = 0, 0
    for i in range(live.shape[0]):
        s = live[i]
        o, x = sf[RATE, s], new[i]
        if x != o:
            left = sf[EFF, s] if o == 0.0 else max(sf[TDONE, s] - now, 0.0) * o
            sf[TDONE, s] = now + left / x
            sf[RATE, s] = x
            account(sr, pcoef, si, s, rf[LOAD], x - o)
            si[CHANGED, k] = s
            k += 1
        if sf[TDONE, s] < t:
            t = sf[TDONE, s]
        if sf[RATE, s] == 0.0:
            z += 1
    return k, t, z


@njit(cache=True)
def _solve(now, low, zero, cutoff_tol, level_tol, sf, si, rf, ri, sr, pcoef, X):
    """Max-min rates of the live flows: those below the cutoff keep their rates, the
    others are solved by progressive filling on the capacity the kept flows leave.
    ``zero`` lists the live unrated slots (and maybe some rated since).
    Returns (the number of changed slots (written to ``si[CHANGED]``), the next
    completion time, how many live flows are unrated: every unrated flow is re-solved)."""
    cut = _cutoff(low, zero, sf, rf, sr)
    m, k, u, every, unit, t = _gather(cut, cutoff_tol, sf, si, rf, ri, sr, pcoef, X)
    if m == 0:
        return 0, t, 0
    uniq, resid, new = X[0][_XUNIQ, :u], X[1][_XRES, :u], X[1][_XNEW, :m]
    for j in range(u):
        r = uniq[j]
        # every flow live: the capacities; else the capacity left by the kept flows, the
        # load minus what the live flows use (written over the latter)
        resid[j] = rf[CAP, r] if every else max(rf[CAP, r] - (rf[LOAD, r] - resid[j]), 0.0)
    for i in range(m):
        new[i] = 0.0
    if unit:  # (the filling's own scratch rows are free)
        fill_unit(X[1][_XB, :m], X[0][_XFPTR, : m + 1], X[0][_XRJ, :k], X[0][_XCNT, :u], resid, new, level_tol, X[0][0])
    else:
        fill_with(X[1][_XW, :m], X[1][_XB, :m], X[0][_XFI, :k], X[0][_XRJ, :k], X[1][_XAV, :k], resid, new,
                  level_tol, X[0], X[1], X[2])
    return _apply(now, X[0][_XLIVE, :m], new, sf, si, rf, sr, pcoef, t)


@njit(cache=True)
def _counted_solve(now, low, zero, cutoff_tol, level_tol, sf, si, rf, ri, sr, pcoef, ctl, X):
    """:func:`_solve`, with the sums recomputed every ``ctl[PERIOD]`` solves; keeps the
    next completion and how many flows are unrated in ``ctl``. Returns (the number of
    changed slots, the next completion time)."""
    ctl[SOLVES] += 1
    if ctl[SOLVES] % ctl[PERIOD] == 0:
        refresh(sf, si, rf, sr, pcoef)
    nch, t, z = _solve(now, low, zero, cutoff_tol, level_tol, sf, si, rf, ri, sr, pcoef, X)
    ctl[NEXT], ctl[UNRATED] = t, z
    return nch, t


@njit(cache=True)
def step(now, nnew, cutoff_tol, level_tol, sf, si, rf, ri, sr, pres, pcoef, pwb, ctl, X):
    """One engine event: add the new slots, remove the flows complete by ``now``, then
    give the new flows their bounds if they fit, else re-solve what the change reaches.
    Returns (flows removed (in ``si[DUE]``), slots changed (in ``si[CHANGED]``) when
    solved, what was done (NOTHING, BOUNDS, SOLVED), the next completion time)."""
    _add(now, nnew, sf, si, rf, ri, sr, pres, pcoef, pwb, True)
    zero = X[0][_XZERO]
    if now < ctl[NEXT] and ctl[UNRATED] == 0.0:  # nothing due, the new flows the only unrated ones
        for i in range(nnew):
            zero[i] = si[NEW, i]
        k, low, coupled, nz, t = 0, _INF, False, nnew, ctl[NEXT]
    else:
        k, low, coupled, nz, t = _remove_due(now, sf, si, rf, ri, sr, pcoef, zero)
    what = NOTHING
    nch = 0
    if not coupled and nnew > 0:
        coupled = not _bounds_fit(now, nnew, sf, si, rf, sr, pcoef)
        if not coupled:
            what = BOUNDS
            for i in range(nnew):
                if sf[TDONE, si[NEW, i]] < t:
                    t = sf[TDONE, si[NEW, i]]
                if sf[RATE, si[NEW, i]] != 0.0:
                    nz -= 1
    if coupled:
        nch, t = _counted_solve(now, low, zero[:nz], cutoff_tol, level_tol, sf, si, rf, ri, sr, pcoef, ctl, X)
        return k, nch, SOLVED, t
    ctl[NEXT], ctl[UNRATED] = t, nz
    return k, nch, what, t


@njit(cache=True)
def enter(now, low, nnew, rates, tdones, cutoff_tol, level_tol, sf, si, rf, ri, sr, pres, pcoef, pwb, ctl, X):
    """Flows moving in with their rates (``rates``, ``tdones`` in ``si[NEW]`` order), then
    a solve; returns (slots changed, the next completion time)."""
    _add(now, nnew, sf, si, rf, ri, sr, pres, pcoef, pwb, False)
    zero, nz = X[0][_XZERO], 0
    for i in range(nnew):
        s = si[NEW, i]
        sf[RATE, s] = rates[i]
        sf[TDONE, s] = tdones[i]
        if rates[i] == 0.0:
            zero[nz] = s
            nz += 1
    refresh(sf, si, rf, sr, pcoef)
    return _counted_solve(now, low, zero[:nz], cutoff_tol, level_tol, sf, si, rf, ri, sr, pcoef, ctl, X)
