"""The per-flow engine's steps over arrays, for the compiled event loop
(:mod:`.replay_kernels`): activations, completions, the two rate updates (bounds and
solved component) and the component's solve (the very filling of :mod:`.filling`), each
the same operations in the same order as
:class:`~simcollective.network.engine.Network`'s ``_activate``, ``_per_flow_step``,
``_apply_bounds`` and ``_apply``.

The column names of the state arrays are defined here, once. Plain functions under
``@njit(cache=True)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .kernels import fill
from .replay_heaps import cgrow, cput, ctake, hpush, sput

# NOTE: numba's cache keeps the compiled code of the kernels a cached kernel calls inside its own
# entry and checks only the caller's source file: a change to a callee's module (:mod:`.filling`
# above all, whose ``fill`` runs :func:`~.filling.fill_with`'s code in scratch of its own) is
# compiled anew in this file's kernels only with an edit of this file too (edit this note when
# the filling changes: unit problems now take ``filling.fill_unit``).
# numba cache: callees bf126d7d1d6c
__all__ = ["activate", "take_ends", "apply_bounds", "apply", "solve", "pool_room", "grow_slots", "reorder", "wake_at",
           "schedule_end", "ends", "ends_room", "ends_clear"]

# message flags
SENT, RPOSTED, STARTED, ARRIVED, EAGER = 1, 2, 4, 8, 16
# messages MI (path, send event, receive event, flags, seq), MF (eff, latency)
PATH, SEND, RECV, FLAGS, SEQ = 0, 1, 2, 3, 4
EFF, LAT = 0, 1
# events EVS (left, waiter: rank + 1, -(waitall's event + 2) or 0 for none, state: 0 pending, 1 in the queue,
# 2 processed; all zero at first)
LEFT, WAITER, STATE = 0, 1, 2
# slots (a flow in flight) SI (message, seq, version, path, positions...), SF (rate, remaining, t_last,
# activation time)
SMSG, SSEQ, SVER, SPATH, SPOS = 0, 1, 2, 3, 4
RATE, REM, TLAST, TSTART = 0, 1, 2, 3
# paths PI (resources, resource ids...), PF (weight, bound, coefficients..., loads...)
# resources RF (capacity, saturable above, near, maxload, load, busy since, busy time)
CAP, SAT, NEAR, MAXLOAD, LOAD, BSINCE, BTIME = 0, 1, 2, 3, 4, 5, 6
# counters C
# (ENTERS: moves into the array store; NBKT, NWAKE: times in the sets of activation and wake-up
# times; RESUME: a rank to resume once the sets have room, or -1; NSTART: ranks started; QHEAD,
# NQUEUE: the first place and the entries of the queue of events that succeed at the time they are
# triggered)
EID, FLOWS, NENDT, ACTIVE, RECOMP, NMAIN, NACT, NEND, NFREE, STAMP, STATUS, PTOP, ENTERS, NBKT, NWAKE, RESUME, \
    NSTART, QHEAD, NQUEUE = range(19)
# the flows on each resource: rl = (pool, offset, capacity); resource r's rcnt[r] slots are
# pool[offset[r]:offset[r] + rcnt[r]] (one flat array: no typed list of arrays to index)
POOL, ROFF, RCAP = 0, 1, 2


@njit(cache=True)
def activate(now, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, seeds, fin, free, C, ah):
    """Flows due by ``now`` (the calendar ``ah``) join the active flows (empty ones finish):
    returns (new flows, finished, whether none is on a resource that can saturate, due times
    taken)."""
    D = PI.shape[1] - 1
    ns, nfin, nb, lone, x = 0, 0, 0, True, -1
    while True:
        if x < 0:
            x = ctake(ah, C[NBKT], now)
            if x < 0:
                break
            C[NBKT] -= 1
            nb += 1
        m, x = x, ah[3][x]
        C[NACT] -= 1
        p = MI[m, PATH]
        if MF[m, EFF] <= 0 or PI[p, 0] == 0:
            fin[nfin] = m
            nfin += 1
            continue
        C[NFREE] -= 1
        s = free[C[NFREE]]
        SI[s, SMSG], SI[s, SSEQ], SI[s, SPATH] = m, MI[m, SEQ], p
        SI[s, SVER] += 1
        SF[s, RATE], SF[s, REM], SF[s, TLAST], SF[s, TSTART] = 0.0, MF[m, EFF], now, now
        for k in range(PI[p, 0]):
            r = PI[p, 1 + k]
            n = rcnt[r]
            if n == 0:
                RF[r, BSINCE] = now
            if n == rl[RCAP][r]:
                _relocate(r, n, rl, C)
            rl[POOL][rl[ROFF][r] + n] = s
            SI[s, SPOS + k] = n
            rcnt[r] = n + 1
            ml = RF[r, MAXLOAD] + PF[p, 2 + D + k]
            RF[r, MAXLOAD] = ml
            if ml > RF[r, SAT]:
                lone = False
        seeds[ns] = s
        ns += 1
    C[ACTIVE] += ns
    return ns, nfin, lone, nb


@njit(cache=True, inline="always")
def _relocate(r, n, rl, C):
    """Resource ``r``'s full list of ``n`` flows moves to the pool's end, with room for
    ``2 n + 4`` (the caller keeps room enough: :func:`pool_room`)."""
    pool, off, cap = rl[POOL], rl[ROFF], rl[RCAP]
    new, o = C[PTOP], off[r]
    for i in range(n):  # (a loop: a slice assignment compiles numba's error text)
        pool[new + i] = pool[o + i]
    off[r] = new
    cap[r] = 2 * n + 4
    C[PTOP] = new + cap[r]


@njit(cache=True)
def pool_room(rl, rcnt, C, need):
    """``rl`` with at least ``need`` free entries at the pool's end: the lists compacted
    into a new pool (capacities kept) when the free room is short."""
    pool, off, cap = rl[POOL], rl[ROFF], rl[RCAP]
    if pool.shape[0] - C[PTOP] >= need:
        return rl
    live = cap.sum()
    new = np.empty(live + 2 * need, np.int64)
    top = 0
    for r in range(off.shape[0]):
        n = rcnt[r]
        o = off[r]
        for i in range(n):
            new[top + i] = pool[o + i]
        off[r] = top
        top += cap[r]
    C[PTOP] = top
    return (new, off, cap)


@njit(cache=True, inline="always")
def _leave(s, k, r, SI, PI, rcnt, rl):
    """Slot ``s`` leaves resource ``r`` (its ``k``-th): the last flow there takes its place."""
    i = SI[s, SPOS + k]
    n = rcnt[r] - 1
    pool, o = rl[POOL], rl[ROFF][r]
    g = pool[o + n]
    pool[o + i] = g
    rcnt[r] = n
    if g != s:
        q = SI[g, SPATH]
        for kk in range(PI[q, 0]):
            if PI[q, 1 + kk] == r:
                SI[g, SPOS + kk] = i
                break


@njit(cache=True)
def take_ends(now, nfin, MI, SI, SF, PI, PF, RF, rcnt, rl, fin, touch, tmark, free, C, eh):
    """Completions due by ``now`` (still valid) leave; returns (finished, touched
    resources: saturated ones whose other flows may speed up)."""
    D = PI.shape[1] - 1
    C[STAMP] += 1
    stamp, nt, nd, x = C[STAMP], 0, 0, -1
    while True:
        if x < 0:
            x = ctake((eh[0], eh[1], eh[2], eh[3]), C[NENDT], now)
            if x < 0:
                break
            C[NENDT] -= 1
        e, x = x, eh[3][x]
        s, v = eh[4][e], eh[5][e]
        C[NEND] -= 1
        eh[6][C[NEND]] = e
        if SI[s, SMSG] < 0 or SI[s, SVER] != v:
            continue
        p, rate = SI[s, SPATH], SF[s, RATE]
        for k in range(PI[p, 0]):
            r = PI[p, 1 + k]
            _leave(s, k, r, SI, PI, rcnt, rl)
            ml = RF[r, MAXLOAD]
            if ml > RF[r, SAT] and RF[r, LOAD] >= RF[r, NEAR] and tmark[r] != stamp:
                tmark[r] = stamp
                touch[nt] = r
                nt += 1
            if rcnt[r]:
                RF[r, MAXLOAD] = ml - PF[p, 2 + D + k]
                RF[r, LOAD] -= PF[p, 2 + k] * rate
            else:
                RF[r, MAXLOAD] = 0.0
                RF[r, LOAD] = 0.0
                RF[r, BTIME] += now - RF[r, BSINCE]
        fin[nfin] = SI[s, SMSG]
        nfin += 1
        nd += 1
        SI[s, SMSG] = -1
        free[C[NFREE]] = s
        C[NFREE] += 1
    C[ACTIVE] -= nd
    return nfin, nt


@njit(cache=True, inline="always")
def schedule_end(s, when, SI, C, eh):
    """Slot ``s`` completes at ``when`` (unless its version changes first)."""
    e = eh[6][C[NEND]]
    C[NEND] += 1
    eh[4][e], eh[5][e] = s, SI[s, SVER]
    if cput((eh[0], eh[1], eh[2], eh[3]), C[NENDT], when, e):
        C[NENDT] += 1


# the completions eh = (keys, vals, heap, nxt, slot, version, free): a calendar of their times
# (:func:`.replay_heaps.cput`) over entries ``e`` (slot ``eh[4][e]`` at version ``eh[5][e]``);
# ``eh[6][C[NEND]:]`` are the free entries. A calendar's successors ``nxt`` are int32, in this one
# and in the activations' (one a message: 4 bytes a message; both calendars share the kernels)

@njit(cache=True)
def ends(places, cap):
    """No completions, room for ``cap`` in a calendar of ``places`` places."""
    return (np.full(places, -1.0), np.empty((2, places), np.int64), np.empty(places), np.empty(cap, np.int32),
            np.empty(cap, np.int64), np.empty(cap, np.int64), np.arange(cap))


@njit(cache=True)
def ends_room(eh, C, need):
    """``eh`` with room for ``need`` more completions, at as many more times."""
    keys, vals, heap, nxt, slot, ver, free = eh
    while 2 * (C[NENDT] + need + 2) > keys.shape[0]:
        keys, vals, heap, nxt = cgrow((keys, vals, heap, nxt), C[NENDT])
    cap = slot.shape[0]
    if C[NEND] + need <= cap:
        return keys, vals, heap, nxt, slot, ver, free
    cap2 = max(2 * cap, C[NEND] + need + 16)
    nxt2, slot2, ver2, free2 = np.empty(cap2, np.int32), np.empty(cap2, np.int64), np.empty(cap2, np.int64), \
        np.arange(cap2)
    for e in range(cap):
        nxt2[e], slot2[e], ver2[e], free2[e] = nxt[e], slot[e], ver[e], free[e]
    return keys, vals, heap, nxt2, slot2, ver2, free2


@njit(cache=True, inline="always")
def ends_clear(eh, C):
    """No completions left (every entry free)."""
    keys, free = eh[0], eh[6]
    for i in range(keys.shape[0]):
        keys[i] = -1.0
    for e in range(free.shape[0]):
        free[e] = e
    C[NEND], C[NENDT] = 0, 0


@njit(cache=True)
def apply_bounds(now, seeds, ns, SI, SF, PI, PF, RF, C, eh):
    """New flows take their bounds (``Network._apply_bounds``)."""
    D = PI.shape[1] - 1
    for q in range(ns):
        s = seeds[q]
        p = SI[s, SPATH]
        rate = PF[p, 1]
        for k in range(PI[p, 0]):
            RF[PI[p, 1 + k], LOAD] += PF[p, 2 + D + k]
        SF[s, RATE] = rate
        SI[s, SVER] += 1
        schedule_end(s, now + SF[s, REM] / rate, SI, C, eh)


@njit(cache=True)
def apply(now, comp, nc, rates, SI, SF, PI, PF, RF, C, eh):
    """``comp[:nc]`` takes its new rates; completions of those that changed move
    (``Network._apply``)."""
    for i in range(nc):
        s, rate = comp[i], rates[i]
        old = SF[s, RATE]
        if rate == old:
            continue
        p = SI[s, SPATH]
        if old > 0:
            SF[s, REM] -= old * (now - SF[s, TLAST])
            d = rate - old
            for k in range(PI[p, 0]):
                RF[PI[p, 1 + k], LOAD] += PF[p, 2 + k] * d
        else:
            for k in range(PI[p, 0]):
                RF[PI[p, 1 + k], LOAD] += PF[p, 2 + k] * rate
        SF[s, TLAST] = now
        SF[s, RATE] = rate
        SI[s, SVER] += 1
        rem = SF[s, REM] if SF[s, REM] > 0 else 0.0
        schedule_end(s, now + rem / rate, SI, C, eh)


@njit(cache=True)
def grow_slots(SI, SF, free, scratch, C, need):
    """Room for ``need`` flows in flight (slots and the scratch arrays sized by them)."""
    S = SI.shape[0]
    S2 = max(2 * S, need + 16)
    # (loops, not slice assignments: those compile numba's error text, seconds on a fresh cache)
    SI2 = np.zeros((S2, SI.shape[1]), np.int64)
    SF2 = np.zeros((S2, SF.shape[1]))
    for s in range(S2):
        if s < S:
            for j in range(SI.shape[1]):
                SI2[s, j] = SI[s, j]
            for j in range(SF.shape[1]):
                SF2[s, j] = SF[s, j]
        else:
            SI2[s, SMSG] = -1
    free2 = np.empty(S2, np.int64)
    nf = C[NFREE]
    for s in range(nf):
        free2[s] = free[s]
    for s in range(S2 - 1, S - 1, -1):
        free2[nf] = s
        nf += 1
    C[NFREE] = nf
    sseen = np.zeros(S2, np.int64)
    for s in range(S):
        sseen[s] = scratch[6][s]
    e = np.empty(S2, np.int64)
    scratch2 = (e, e.copy(), scratch[2], e.copy(), e.copy(), scratch[5], sseen, scratch[7], scratch[8])
    return SI2, SF2, free2, scratch2


@njit(cache=True, inline="always")
def wake_at(when, wk, C, mh):
    """One network wake-up at ``when`` (if none is pending there)."""
    if sput(wk, when):
        C[NWAKE] += 1
        C[NMAIN] = hpush(mh[0], mh[1], mh[2], mh[3], C[NMAIN], when, C[EID], -1, 0)
        C[EID] += 1


@njit(cache=True, inline="always")
def reorder(a, n, keys):
    """``a[:n] = a[:n][np.argsort(keys)]``, without a slice assignment (which compiles
    numba's error text: seconds on a fresh cache)."""
    order = np.argsort(keys)
    tmp = np.empty(n, np.int64)
    for i in range(n):
        tmp[i] = a[order[i]]
    for i in range(n):
        a[i] = tmp[i]


@njit(cache=True)
def solve(comp, nc, satl, nsat, SI, PI, PF, RF, rseen, stamp, level_tol):
    """Max-min rates of ``comp[:nc]`` over ``satl[:nsat]``: ``solve_component``'s
    problem, given to the same filling."""
    idx = np.empty(RF.shape[0], np.int64)
    for j in range(nsat):
        idx[satl[j]] = j
    ne = 0
    for i in range(nc):
        ne += PI[SI[comp[i], SPATH], 0]
    fi, rj, av = np.empty(ne, np.intp), np.empty(ne, np.intp), np.empty(ne)
    w, b = np.empty(nc), np.empty(nc)
    e = 0
    for i in range(nc):
        p = SI[comp[i], SPATH]
        w[i], b[i] = PF[p, 0], PF[p, 1]
        for k in range(PI[p, 0]):
            r = PI[p, 1 + k]
            if rseen[r] == stamp:
                fi[e], rj[e], av[e] = i, idx[r], PF[p, 2 + k]
                e += 1
    c = np.empty(nsat)
    for j in range(nsat):
        c[j] = RF[satl[j], CAP]
    rates = np.zeros(nc)
    fill(w, b, fi[:e], rj[:e], av[:e], c, rates, level_tol)
    return rates
