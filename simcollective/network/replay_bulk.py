"""The array store inside the compiled event loop (:mod:`.replay_kernels`).

Where the per-flow engine moves all active flows into the array store (more than
``bulk_min`` active flows and a component past ``walk_limit`` coupled flows: see
:class:`~simcollective.network.array_mode.ArrayModeMixin`), the compiled loop does the same
with the same arrays: :func:`enter` moves the flows in (in activation order, lowest slots
first) and each later wake-up is :func:`wakeup`, one call of the very kernel the SimPy
engine calls (:func:`.bulk_kernels.step`) with the same inputs in the same order, so
every rate and completion time is the same to the last bit. After a solve that leaves
fewer than ``bulk_off`` active flows, :func:`leave` hands them back to the per-flow slots
(completions scheduled in slot order, the per-resource lists and maximum loads rebuilt in
activation order), as ``ArrayModeMixin._leave_bulk`` does.

The store is a tuple ``(sf, si, rf, ri, ctl, msg, tstart, X, sr)``: the arrays of
:class:`~simcollective.network.bulk.BulkStore` (see :mod:`.bulk_kernels`), the message in
each slot (-1: free), its activation time, the solves' scratch (kept across them, grown
by :func:`.bulk_kernels.work` before a step) and the slots' path rows (grown by
:func:`.bulk_kernels.rows` before a step); the path table is ``(pres, pcoef, pwb)``.
``tune`` is ``[bulk_min, walk_limit, level_tol, cutoff_tol, bulk_off, refresh, set_places]``
(the last: the places the loop's sets of due times start with).
Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs the same code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import bulk_kernels as K
from .replay_flows import (ACTIVE, BSINCE, BTIME, CAP, EFF, ENTERS, LOAD, MAXLOAD, NACT, NBKT, NEAR, NFREE, PATH,
                           POOL, PTOP, RATE, RCAP, RECOMP, REM, ROFF, SAT, SEQ, SMSG, SPATH, SPOS, SSEQ, SVER, TLAST,
                           TSTART, ends_clear, schedule_end)
from .replay_heaps import ctake

# NOTE: numba's cache keeps the compiled code of the kernels a cached kernel calls inside its own
# entry and checks only the caller's source file: a change to a callee's module (:mod:`.filling`
# and :mod:`.bulk_kernels` above all) is compiled anew in this file's kernels only with an edit
# of this file too (a cache of this file's kernels older than the store's step and filling it
# inlines, mixed with the new ones, writes out of bounds: edit this note when they change).
# numba cache: callees a1ac73e33aca
__all__ = ["table", "empty", "enter", "wakeup", "leave", "close"]

_INF = np.inf
# tune entries
LEVEL_TOL, CUTOFF_TOL, BULK_OFF, REFRESH, PLACES = 2, 3, 4, 5, 6


@njit(cache=True)
def table(PI, PF, n):
    """The path table of the store from the loop's paths (rows padded with resource ``n``)."""
    P, D = PI.shape[0], max(PI.shape[1] - 1, 1)
    pres, pcoef, pwb = np.full((P, D), n, np.intp), np.zeros((P, D)), np.zeros((2, P))
    for p in range(P):
        pwb[K.W, p], pwb[K.B, p] = PF[p, 0], PF[p, 1]
        for k in range(PI[p, 0]):
            pres[p, k] = PI[p, 1 + k]
            pcoef[p, k] = PF[p, 2 + k]
    return pres, pcoef, pwb


@njit(cache=True)
def empty(n, slots):
    """A store of ``slots`` free slots over ``n`` resources (per-resource rows zero)."""
    sf = np.zeros((K.NSF, slots))
    for s in range(slots):
        sf[K.TDONE, s] = _INF
    ri = np.zeros((2, n + 1), np.intp)
    for r in range(n + 1):
        ri[K.LOOKUP, r] = -1
    return (sf, np.zeros((5, slots), np.intp), np.zeros((8, n + 1)), ri, K.controls(0.0),
            np.full(slots, -1, np.int64), np.zeros(slots), K.no_work(), np.zeros((0, 2), np.int32))


@njit(cache=True, inline="always")
def _size(k, need):
    """The store's slot count after growing to hold ``need`` flows (``BulkStore._grow``)."""
    while k < need:
        k = max(256, 2 * k)
    return k


@njit(cache=True)
def _room(A, need):
    """``A`` with at least ``need`` slots (more slots change no value, only the scans' length)."""
    sf, si, rf, ri, ctl, msg, tstart, X, sr = A
    k0 = si.shape[1]
    if k0 >= need:
        return A
    B = empty(rf.shape[1] - 1, _size(k0, need))
    sf2, si2, _, _, _, msg2, tstart2, _, _ = B
    for s in range(k0):
        for j in range(K.NSF):
            sf2[j, s] = sf[j, s]
        for j in range(5):
            si2[j, s] = si[j, s]
        msg2[s], tstart2[s] = msg[s], tstart[s]
    return sf2, si2, rf, ri, ctl, msg2, tstart2, X, sr


@njit(cache=True, inline="always")
def _activation_order(slots, tst, seq):
    """``slots`` sorted by (activation time, creation): the engine's order of active flows."""
    o1 = np.argsort(seq, kind="mergesort")
    o2 = np.argsort(tst[o1], kind="mergesort")
    out = np.empty(slots.shape[0], np.int64)
    for i in range(slots.shape[0]):
        out[i] = slots[o1[o2[i]]]
    return out


@njit(cache=True)
def enter(now, nfin, tune, T, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, fin, free, C, eh):
    """``Network._enter_bulk``: the active flows move from their per-flow slots into a new
    store, then one solve (and back out if fewer than ``bulk_off`` are active). Returns
    (the store, the next completion time, whether the flows are in the store)."""
    n, S = RF.shape[0], SI.shape[0]
    # the flows that completed in this wake-up are the last ones freed (take_ends pushes
    # them in completion order after the activations popped theirs): the lowest level
    # among them bounds what their leaving can change
    nd = 0
    for i in range(nfin):
        m = fin[i]
        if MF[m, EFF] > 0 and PI[MI[m, PATH], 0] > 0:
            nd += 1
    low = _INF
    for i in range(C[NFREE] - nd, C[NFREE]):
        s = free[i]
        low = min(low, SF[s, RATE] / T[2][K.W, SI[s, SPATH]])
    act = np.flatnonzero(SI[:, SMSG] >= 0)
    order = _activation_order(act, SF[act, TSTART], SI[act, SSEQ])
    A = empty(n, _size(np.int64(0), order.shape[0]))
    sf, si, rf, ri, ctl, msg, tstart, X, sr = A
    for r in range(n):
        rf[K.CAP, r], rf[K.SAT, r], rf[K.NEAR, r] = RF[r, CAP], RF[r, SAT], RF[r, NEAR]
        rf[K.SINCE, r], rf[K.BUSY, r] = RF[r, BSINCE], RF[r, BTIME]
        ri[K.COUNT, r] = rcnt[r]
        rcnt[r] = 0
    rf[K.CAP, n] = rf[K.SAT, n] = rf[K.NEAR, n] = _INF
    ctl[K.PERIOD] = tune[REFRESH]
    nnew = order.shape[0]
    rates, tdones = np.empty(nnew), np.empty(nnew)
    for i in range(nnew):
        s = order[i]
        msg[i], tstart[i], si[K.SPID, i], sf[K.EFF, i], si[K.NEW, i] = SI[s, SMSG], SF[s, TSTART], SI[s, SPATH], \
            SF[s, REM], i
        rate = rates[i] = SF[s, RATE]
        if rate > 0:
            rem = SF[s, REM] - rate * (now - SF[s, TLAST])
            tdones[i] = now + (rem if rem > 0 else 0.0) / rate
        else:
            tdones[i] = _INF
    for s in range(S):  # every per-flow slot is free, no completion is in the calendar
        SI[s, SMSG] = -1
        free[s] = S - 1 - s
    C[NFREE] = S
    ends_clear(eh, C)
    X, sr = K.work(X, si.shape[1], T[0].shape[1]), K.rows(sr, si.shape[1], T[0].shape[1])
    A = sf, si, rf, ri, ctl, msg, tstart, X, sr
    _, nxt = K.enter(now, low, nnew, rates, tdones, tune[CUTOFF_TOL], tune[LEVEL_TOL], sf, si, rf, ri, sr, T[0],
                     T[1], T[2], ctl, X)
    C[RECOMP] += 1
    C[ENTERS] += 1
    if C[ACTIVE] < tune[BULK_OFF]:
        leave(now, A, MI, SI, SF, PI, PF, RF, rcnt, rl, free, C, eh)
        return A, nxt, False
    return A, nxt, True


@njit(cache=True)
def wakeup(now, tune, A, T, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, fin, free, C, ah, eh):
    """One network wake-up in the store (``Network._on_wakeup`` in array mode, up to the
    arrivals): the flows due start (lowest free slots first; the store grows as they
    come), then one :func:`.bulk_kernels.step`, and the flows leave the store if a solve
    left fewer than ``bulk_off``. ``ah``: the calendar of activations. Returns (the store,
    how many messages arrived (in ``fin``), the next completion time, whether the flows
    are still in the store)."""
    sf, si, rf, ri, ctl, msg, tstart, X, sr = A
    nnew, nfin, j, x = np.int64(0), 0, 0, -1  # (typed: a literal 0 would specialise the step once more)
    while True:
        if x < 0:
            x = ctake(ah, C[NBKT], now)
            if x < 0:
                break
            C[NBKT] -= 1
        m, x = x, ah[3][x]
        C[NACT] -= 1
        p = MI[m, PATH]
        if MF[m, EFF] <= 0 or PI[p, 0] == 0:
            fin[nfin] = m
            nfin += 1
            continue
        if C[ACTIVE] + nnew >= si.shape[1]:  # (the set holds times, not counts: room as flows come)
            A = _room(A, C[ACTIVE] + nnew + 1)
            sf, si, rf, ri, ctl, msg, tstart, X, sr = A
        while si[K.ALIVE, j]:
            j += 1
        msg[j], tstart[j], si[K.SPID, j], sf[K.EFF, j], si[K.NEW, nnew] = m, now, p, MF[m, EFF], j
        j += 1
        nnew += 1
    C[ACTIVE] += nnew
    X, sr = K.work(X, si.shape[1], T[0].shape[1]), K.rows(sr, si.shape[1], T[0].shape[1])
    A = sf, si, rf, ri, ctl, msg, tstart, X, sr
    k, _, what, nxt = K.step(now, nnew, tune[CUTOFF_TOL], tune[LEVEL_TOL], sf, si, rf, ri, sr, T[0], T[1], T[2], ctl,
                             X)
    for i in range(k):
        s = si[K.DUE, i]
        fin[nfin] = msg[s]
        nfin += 1
        msg[s] = -1
    C[ACTIVE] -= k
    if what != K.NOTHING:
        C[RECOMP] += 1
    if what == K.SOLVED and C[ACTIVE] < tune[BULK_OFF]:
        leave(now, A, MI, SI, SF, PI, PF, RF, rcnt, rl, free, C, eh)
        return A, nfin, nxt, False
    return A, nfin, nxt, True


@njit(cache=True)
def leave(now, A, MI, SI, SF, PI, PF, RF, rcnt, rl, free, C, eh):
    """``Network._leave_bulk``: the store's flows back to per-flow slots, their completions
    scheduled in slot order; the per-resource lists and maximum loads rebuilt in
    activation order (the caller leaves room in the pool for 2 x entries + 4 n)."""
    sf, si, rf, ri, ctl, msg, tstart, X, sr = A
    n, D = RF.shape[0], PI.shape[1] - 1
    live = np.flatnonzero(si[K.ALIVE])
    slot = np.empty(live.shape[0], np.int64)
    seq = np.empty(live.shape[0], np.int64)
    for i in range(live.shape[0]):
        s = live[i]
        C[NFREE] -= 1
        q = slot[i] = free[C[NFREE]]
        m = msg[s]
        x, t = sf[K.RATE, s], sf[K.TDONE, s]
        SI[q, SMSG], SI[q, SSEQ], SI[q, SPATH] = m, MI[m, SEQ], si[K.SPID, s]
        seq[i] = MI[m, SEQ]
        SI[q, SVER] += 1
        SF[q, RATE], SF[q, REM], SF[q, TLAST], SF[q, TSTART] = x, (t - now) * x, now, tstart[s]
        schedule_end(q, t, SI, C, eh)
    for r in range(n):
        RF[r, LOAD], RF[r, BSINCE], RF[r, BTIME], RF[r, MAXLOAD] = rf[K.LOAD, r], rf[K.SINCE, r], rf[K.BUSY, r], 0.0
    pool, off, cap = rl[POOL], rl[ROFF], rl[RCAP]
    for r in range(n):  # fresh lists at the pool's end, with room for as many more
        if ri[K.COUNT, r]:
            off[r], cap[r] = C[PTOP], 2 * ri[K.COUNT, r] + 4
            C[PTOP] += cap[r]
    for q in _activation_order(slot, SF[slot, TSTART], seq):
        p = SI[q, SPATH]
        for k in range(PI[p, 0]):
            r = PI[p, 1 + k]
            c = rcnt[r]
            pool[off[r] + c] = q
            SI[q, SPOS + k] = c
            rcnt[r] = c + 1
            RF[r, MAXLOAD] += PF[p, 2 + D + k]


@njit(cache=True)
def close(A, RF, rcnt):
    """The store's busy-time bookkeeping into the loop's (a run that ends in the store)."""
    rf, ri = A[2], A[3]
    for r in range(RF.shape[0]):
        RF[r, BSINCE], RF[r, BTIME], rcnt[r] = rf[K.SINCE, r], rf[K.BUSY, r], ri[K.COUNT, r]
