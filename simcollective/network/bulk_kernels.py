"""Compiled steps of the array store (:mod:`.bulk`): one call per engine event.

State, all NumPy arrays kept between events:

* per path (``pid``): resource row ``pres[pid]`` padded with the dummy resource ``n``
  (infinite capacity), coefficient row ``pcoef[pid]`` (multiplicity of the resource on
  the route plus cross-traffic shares, 0 on padding), weight ``pw`` and rate bound ``pb``;
* per slot (one active flow): ``alive``, ``spid`` (its path), ``rate``, ``tdone``
  (completion time, ``inf`` while unrated) and ``eff`` (bytes to send when first rated);
* per resource (``n + 1``, the dummy last): capacity ``capx``, saturable threshold
  ``satx``, "nearly full" threshold ``nearx`` and three sums over live flows kept up to
  date: coefficient x rate (``load``), x rate bound (``maxl``), x weight (``wsum``).

A rate change moves a completion to ``now + (tdone - now) x old / new``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernels import fill

_INF = np.inf


@njit(cache=True)
def _account(pres, pcoef, pid, vec, x):
    """vec[r] += coef x x over the path's resources."""
    for d in range(pres.shape[1]):
        vec[pres[pid, d]] += pcoef[pid, d] * x


@njit(cache=True)
def refresh(alive, spid, rate, pres, pcoef, pw, pb, load, maxl, wsum):
    """Recompute the per-resource sums from the live flows (no rounding drift)."""
    load[:] = 0.0
    maxl[:] = 0.0
    wsum[:] = 0.0
    for s in range(alive.shape[0]):
        if alive[s]:
            p = spid[s]
            _account(pres, pcoef, p, maxl, pb[p])
            _account(pres, pcoef, p, wsum, pw[p])
            if rate[s] != 0.0:
                _account(pres, pcoef, p, load, rate[s])


@njit(cache=True)
def add_flows(slots, pids, effs, alive, spid, rate, tdone, eff, pres, pcoef, pw, pb, maxl, wsum):
    for i in range(slots.shape[0]):
        s, p = slots[i], pids[i]
        alive[s] = True
        spid[s] = p
        rate[s] = 0.0
        tdone[s] = _INF
        eff[s] = effs[i]
        _account(pres, pcoef, p, maxl, pb[p])
        _account(pres, pcoef, p, wsum, pw[p])


@njit(cache=True)
def remove_due(now, alive, spid, rate, tdone, pres, pcoef, pw, pb, load, maxl, wsum, nearx, due):
    """Remove the flows complete by ``now`` (ascending slots, written to ``due``).
    Returns (count, lowest level rate / weight among them, whether one of them left a
    nearly full resource: its other flows may speed up)."""
    k = 0
    low = _INF
    coupled = False
    for s in range(alive.shape[0]):
        if alive[s] and tdone[s] <= now:
            p = spid[s]
            lvl = rate[s] / pw[p]
            if lvl < low:
                low = lvl
            for d in range(pres.shape[1]):
                r = pres[p, d]
                if load[r] >= nearx[r] and pcoef[p, d] > 0.0:
                    coupled = True
            _account(pres, pcoef, p, maxl, -pb[p])
            _account(pres, pcoef, p, wsum, -pw[p])
            if rate[s] != 0.0:
                _account(pres, pcoef, p, load, -rate[s])
            alive[s] = False
            rate[s] = 0.0
            tdone[s] = _INF
            due[k] = s
            k += 1
    return k, low, coupled


@njit(cache=True)
def bounds_fit(now, slots, spid, rate, tdone, eff, pres, pcoef, pb, load, satx):
    """New flows that fit at their bound take it: nobody else's rate changes (every other
    flow keeps its bottleneck, and a flow at its bound needs none); returns False at the
    first that does not fit. A flow may fill a resource exactly (its bound is often a
    link's capacity)."""
    for i in range(slots.shape[0]):
        s = slots[i]
        p = spid[s]
        x = pb[p]
        for d in range(pres.shape[1]):
            r = pres[p, d]
            if load[r] + pcoef[p, d] * x > satx[r]:
                return False
        rate[s] = x
        tdone[s] = now + eff[s] / x
        _account(pres, pcoef, p, load, x)
    return True


@njit(cache=True)
def _cutoff(low, alive, spid, rate, pres, pw, pb, capx, satx, maxl, wsum):
    """The lowest level a change can reach: ``low`` (the lowest level of the flows that
    ended: removing them cannot change any lower level, progressive filling reaches those
    through the same saturations) and, for each new flow, the lowest level it can get
    (its bound, or capacity / total weight on one of its saturable resources)."""
    cut = low
    for s in range(alive.shape[0]):
        if alive[s] and rate[s] == 0.0:
            p = spid[s]
            f = pb[p] / pw[p]
            for d in range(pres.shape[1]):
                r = pres[p, d]
                if maxl[r] > satx[r]:
                    f = min(f, capx[r] / wsum[r])
            cut = min(cut, f)
    return cut


@njit(cache=True)
def _live(cut, tol, alive, spid, rate, pw):
    """Slots to re-solve: new flows and those at or above the cutoff level."""
    live = np.empty(alive.shape[0], dtype=np.intp)
    m = 0
    total = 0
    lim = cut * (1.0 - tol)
    for s in range(alive.shape[0]):
        if alive[s]:
            total += 1
            if rate[s] == 0.0 or rate[s] / pw[spid[s]] >= lim:
                live[m] = s
                m += 1
    return live[:m], m == total


@njit(cache=True)
def _incidence(live, spid, pres, pcoef, maxl, satx, lookup):
    """Entries of the live flows on saturable resources, resources numbered compactly
    in order of first appearance (``lookup`` is scratch, all -1 on entry and exit)."""
    D = pres.shape[1]
    fi = np.empty(live.shape[0] * D, dtype=np.intp)
    rj = np.empty(live.shape[0] * D, dtype=np.intp)
    av = np.empty(live.shape[0] * D)
    uniq = np.empty(live.shape[0] * D, dtype=np.intp)
    k = 0
    u = 0
    for i in range(live.shape[0]):
        p = spid[live[i]]
        for d in range(D):
            r = pres[p, d]
            if maxl[r] > satx[r]:
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


@njit(cache=True)
def _apply(now, live, new, spid, rate, tdone, eff, pres, pcoef, load, changed):
    """Give the live flows their new rates; returns how many changed (in ``changed``)."""
    k = 0
    for i in range(live.shape[0]):
        s = live[i]
        o, x = rate[s], new[i]
        if x == o:
            continue
        left = eff[s] if o == 0.0 else max(tdone[s] - now, 0.0) * o
        tdone[s] = now + left / x
        rate[s] = x
        _account(pres, pcoef, spid[s], load, x - o)
        changed[k] = s
        k += 1
    return k


@njit(cache=True)
def solve(now, low, cutoff_tol, level_tol, alive, spid, rate, tdone, eff, pres, pcoef, pw, pb,
          capx, satx, load, maxl, wsum, lookup, changed):
    """Max-min rates of the live flows: those below the cutoff keep their rates, the
    others are solved by progressive filling on the capacity the kept flows leave.
    Returns the number of changed slots (written to ``changed``)."""
    cut = _cutoff(low, alive, spid, rate, pres, pw, pb, capx, satx, maxl, wsum)
    live, every = _live(cut, cutoff_tol, alive, spid, rate, pw)
    m = live.shape[0]
    if m == 0:
        return 0
    fi, rj, av, uniq = _incidence(live, spid, pres, pcoef, maxl, satx, lookup)
    w = np.empty(m)
    b = np.empty(m)
    for i in range(m):
        w[i] = pw[spid[live[i]]]
        b[i] = pb[spid[live[i]]]
    resid = np.empty(uniq.shape[0])
    if every:
        for j in range(uniq.shape[0]):
            resid[j] = capx[uniq[j]]
    else:
        # capacity left by the kept flows: the load minus what the live flows use
        mine = np.zeros(uniq.shape[0])
        for e in range(fi.shape[0]):
            mine[rj[e]] += av[e] * rate[live[fi[e]]]
        for j in range(uniq.shape[0]):
            r = uniq[j]
            resid[j] = max(capx[r] - (load[r] - mine[j]), 0.0)
    new = np.zeros(m)
    fill(w, b, fi, rj, av, resid, new, level_tol)
    return _apply(now, live, new, spid, rate, tdone, eff, pres, pcoef, load, changed)


@njit(cache=True)
def next_time(alive, tdone):
    t = _INF
    for s in range(alive.shape[0]):
        if alive[s] and tdone[s] < t:
            t = tdone[s]
    return t
