"""The array store's arrays (:mod:`.bulk_kernels`) and their per-flow bookkeeping, compiled.

State, all NumPy arrays kept between events, packed into a few 2-D arrays so that a
call passes a handful of arguments (numba checks the type of every argument on every
call: a dozen separate arrays cost microseconds per call):

* per path (``pid``): resource row ``pres[pid]`` padded with the dummy resource ``n``
  (infinite capacity), coefficient row ``pcoef[pid]`` (multiplicity of the resource on
  the route plus cross-traffic shares, 0 on padding), weight ``pwb[W, pid]`` and rate
  bound ``pwb[B, pid]``;
* per slot (one active flow), floats ``sf[RATE | TDONE | EFF]`` (rate, completion time,
  ``inf`` while unrated, bytes to send when first rated) and ``sf[WEIGHT | BOUND]`` (its
  path's), ints ``si[ALIVE | SPID]``, with scratch rows ``si[NEW]`` (the slots added this
  event, in order), ``si[DUE]`` (the slots that completed) and ``si[CHANGED]`` (the slots
  whose rate changed), and its path's row ``sr[s]`` (int32: the number of resources
  ``sr[s, LEN]``, whether its weight and every coefficient are 1.0 ``sr[s, UNIT]``, then
  the resources from ``sr[s, R0]`` on, without the padding), written when the flow
  starts (:func:`copy_row`; :func:`rows` grows the array): the walks over the slots read
  their flows' paths in slot order rather than scattered over the path table, and a flow
  of unit weight and coefficients reads no coefficient;
* per resource (``n + 1``, the dummy last), floats ``rf[CAP | SAT | NEAR]`` (capacity,
  saturable and "nearly full" thresholds), the sums over live flows of coefficient x
  rate ``rf[LOAD]``, x rate bound ``rf[MAXL]``, x weight ``rf[WSUM]``, and the busy-time
  bookkeeping ``rf[SINCE | BUSY]``; ints ``ri[COUNT]`` (live flows on it) and
  ``ri[LOOKUP]`` (scratch: a solve marks the saturable resources there, then numbers them);
  the padding's terms (coefficient 0 on the dummy) are left out of the sums: nothing reads
  the dummy's;
* ``ctl``: floats ``[solves so far, refresh period, the next completion, live unrated
  flows]`` (the last two as the last step or move-in left them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["RATE", "TDONE", "EFF", "WEIGHT", "BOUND", "NSF", "ALIVE", "SPID", "NEW", "DUE", "CHANGED", "CAP", "SAT",
           "NEAR", "LOAD", "MAXL", "WSUM", "SINCE", "BUSY", "COUNT", "LOOKUP", "W", "B", "LEN", "UNIT", "R0",
           "SOLVES", "PERIOD", "NEXT", "UNRATED", "controls", "rows", "copy_row", "coef", "account", "occupy",
           "refresh", "loads_on"]

RATE, TDONE, EFF, WEIGHT, BOUND = 0, 1, 2, 3, 4
NSF = 5  # rows of sf
ALIVE, SPID, NEW, DUE, CHANGED = 0, 1, 2, 3, 4
CAP, SAT, NEAR, LOAD, MAXL, WSUM, SINCE, BUSY = 0, 1, 2, 3, 4, 5, 6, 7
COUNT, LOOKUP = 0, 1
W, B = 0, 1
LEN, UNIT, R0 = 0, 1, 2
SOLVES, PERIOD, NEXT, UNRATED = 0, 1, 2, 3


@njit(cache=True, inline="always")
def controls(refresh):
    """A new store's ``ctl``: no solve yet, no completion known (its first step walks the
    slots)."""
    ctl = np.zeros(4)
    ctl[PERIOD], ctl[NEXT] = refresh, -np.inf
    return ctl


@njit(cache=True)
def rows(sr, slots, D):
    """``sr`` if it holds the path rows of ``slots`` slots on paths ``D`` resources wide,
    else a larger copy."""
    if sr.shape[0] >= slots and sr.shape[1] >= D + R0:
        return sr
    out = np.zeros((max(slots, sr.shape[0]), max(D + R0, sr.shape[1])), np.int32)
    for i in range(sr.shape[0]):  # (a loop: a slice assignment compiles numba's error text)
        for j in range(sr.shape[1]):
            out[i, j] = sr[i, j]
    return out


@njit(cache=True, inline="always")
def copy_row(s, p, sf, sr, pres, pcoef, pwb, dummy):
    """Slot ``s`` takes path ``p``: its row ``sr[s]`` and ``sf[WEIGHT | BOUND, s]``."""
    unit = pwb[W, p] == 1.0
    n = 0
    while n < pres.shape[1] and pres[p, n] != dummy:
        sr[s, R0 + n] = pres[p, n]
        unit = unit and pcoef[p, n] == 1.0
        n += 1
    sr[s, LEN], sr[s, UNIT] = n, unit
    sf[WEIGHT, s], sf[BOUND, s] = pwb[W, p], pwb[B, p]


@njit(cache=True, inline="always")
def coef(sr, pcoef, si, s, d):
    """The coefficient of slot ``s``'s path on its ``d``-th resource."""
    return 1.0 if sr[s, UNIT] else pcoef[si[SPID, s], d]


@njit(cache=True, inline="always")
def account(sr, pcoef, si, s, vec, x):
    """vec[r] += coef x x over the slot's resources (1.0 x x is x)."""
    if sr[s, UNIT]:
        for d in range(sr[s, LEN]):
            vec[sr[s, R0 + d]] += x
    else:
        p = si[SPID, s]
        for d in range(sr[s, LEN]):
            vec[sr[s, R0 + d]] += pcoef[p, d] * x


@njit(cache=True, inline="always")
def occupy(sr, pcoef, si, s, rf, ri, now, k):
    """A flow joins (k = 1) or leaves (k = -1) its resources: their busy time."""
    for d in range(sr[s, LEN]):
        if coef(sr, pcoef, si, s, d) > 0.0:
            r = sr[s, R0 + d]
            c = ri[COUNT, r]
            if k > 0 and c == 0:
                rf[SINCE, r] = now
            elif k < 0 and c == 1:
                rf[BUSY, r] += now - rf[SINCE, r]
            ri[COUNT, r] = c + k


@njit(cache=True, inline="always")
def refresh(sf, si, rf, sr, pcoef):
    """Recompute the per-resource sums from the live flows (no rounding drift)."""
    rf[LOAD, :] = 0.0
    rf[MAXL, :] = 0.0
    rf[WSUM, :] = 0.0
    for s in range(si.shape[1]):
        if si[ALIVE, s]:
            account(sr, pcoef, si, s, rf[MAXL], sf[BOUND, s])
            account(sr, pcoef, si, s, rf[WSUM], sf[WEIGHT, s])
            if sf[RATE, s] != 0.0:
                account(sr, pcoef, si, s, rf[LOAD], sf[RATE, s])


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
