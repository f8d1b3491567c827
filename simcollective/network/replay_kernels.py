"""The compiled event loop: recorded operations (:mod:`simcollective.runtime.record`)
executed over the flow model, with no Python per message.

It performs, in the same order, the same floating-point operations as the SimPy path
(:class:`~simcollective.runtime.world.World` over the per-flow
:class:`~simcollective.network.engine.Network`), so the simulated times are bit-identical:

* the event queue orders entries by (time, SimPy event id), as SimPy's does: rank
  resumptions, completions of postings and ``waitall`` groups, timeouts, and the
  network's one wake-up per distinct due time;
* matching, eager and rendezvous sends follow ``World.post`` (the k-th send on a channel
  meets the k-th receive: the recording paired them);
* a wake-up activates the flows due (in due-time then creation order), takes the
  completions due, and updates rates as the per-flow engine does: new flows alone on
  resources that cannot saturate take their bounds, otherwise the component of what
  changed is solved by the very max-min filling of :mod:`.filling` (compiled by
  :mod:`.kernels`). Where the SimPy engine moves its flows into the array store (more
  than ``bulk_min`` active flows and a component past ``walk_limit``), so does the loop,
  each wake-up there being the store's compiled step (:mod:`.replay_bulk`).

Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs the same code.
State lives in arrays (the column names below); a flow in flight occupies a *slot*.
:func:`events` runs the loop until the arrays need room; :func:`execute` grows them and
calls it again (the arrays are fixed within a call, and a wake-up is one call).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .replay_borrow import borrow
from .replay_bulk import PLACES, close, empty, enter, table
from .replay_bulk import wakeup as store_wakeup
from .replay_flows import (ACTIVE, ARRIVED, EAGER, EID, ENTERS, FLAGS, FLOWS, LAT, LEFT, MAXLOAD, NACT, NBKT, NEND,
                           NENDT, NMAIN, NQUEUE, NSTART, NWAKE, POOL, PTOP, QHEAD, RECOMP, RECV, RESUME, ROFF, RPOSTED,
                           SAT, SEND, SENT, SEQ, SMSG, SPATH, SPOS, SSEQ, STAMP, STARTED, STATE, STATUS, SVER, WAITER,
                           activate, apply, apply_bounds, ends, ends_room, grow_slots, pool_room, reorder, solve,
                           take_ends, wake_at)
from .replay_heaps import cdrop, cfirst, cgrow, cput, hpop, hpush, qgrow, qpush, sdel, sgrow

# NOTE: numba's cache keeps the compiled code of the kernels a cached kernel calls inside its own
# entry and checks only the caller's source file: a change to a callee's module (:mod:`.filling`,
# :mod:`.bulk_kernels`, :mod:`.replay_bulk` above all) is compiled anew in this file's kernels only
# with an edit of this file too (a stale cache mixed with new callees writes out of bounds: edit
# this note when they change).
# numba cache: callees 3dbe8db6b7ad
__all__ = ["OK", "DEADLOCK", "execute", "wakeup", "run_rank", "component"]

OK, DEADLOCK = 0, 2
# what :func:`events` returns: the run is over, or the next event needs room (grown by the caller)
DONE, ROOM = 0, 1
# operations (as in runtime/record.py)
POST, WAITALL, TIMEOUT, YIELD, MARK, DELAY_SINCE, NOW = 0, 1, 2, 3, 4, 5, 6


@njit(cache=True, inline="always")
def trigger(ev, now, EVS, C, mh):
    """``ev`` succeeds now: it is processed after what is already due now (entries made now
    come in increasing (time, id): they queue in ``mh[4:]``, beside the heap ``mh[:4]``)."""
    EVS[ev, STATE] = 1
    C[NQUEUE] = qpush(mh[4], mh[5], mh[6], C[QHEAD], C[NQUEUE], now, C[EID], ev)
    C[EID] += 1


@njit(cache=True, inline="always")
def transfer(m, now, MI, MF, C, ah, mh, wk):
    """Message ``m``'s flow starts: it activates after its latency."""
    when = now + MF[m, LAT]
    MI[m, SEQ] = C[FLOWS]
    C[FLOWS] += 1
    if cput(ah, C[NBKT], when, m):
        C[NBKT] += 1
        wake_at(when, wk, C, mh)
    C[NACT] += 1


@njit(cache=True, inline="always")
def post(ev, send, recv, smpi, now, MI, MF, EVS, C, ah, mh, wk):
    """``World.post``: the send of message ``send`` and/or the receive of ``recv``."""
    left = 1
    if send >= 0:
        f = MI[send, FLAGS] | SENT
        if f & RPOSTED or (f & EAGER and not smpi):
            f |= STARTED
            MI[send, FLAGS] = f
            transfer(send, now, MI, MF, C, ah, mh, wk)
        MI[send, FLAGS] = f
        if not f & EAGER:
            left += 1
    if recv >= 0:
        f = MI[recv, FLAGS]
        if f & SENT:
            if not f & ARRIVED:
                f |= RPOSTED
                left += 1
                if not f & STARTED:
                    f |= STARTED
                    MI[recv, FLAGS] = f
                    transfer(recv, now, MI, MF, C, ah, mh, wk)
            MI[recv, FLAGS] = f
        else:
            left += 1
            MI[recv, FLAGS] = f | RPOSTED
    left -= 1
    if left:
        EVS[ev, LEFT] = left
    else:
        EVS[ev, STATE] = 2


@njit(cache=True, inline="always")
def run_rank(r, now, pc, rank_end, ops, members, seconds, op_time, finish, smpi, MI, MF, EVS, C, ah, mh, wk):
    """Rank ``r`` goes on from its next operation until it waits or ends (or, before a
    posting, until the sets of times have room: ``C[RESUME] = r``)."""
    i, end = pc[r], rank_end[r]
    while i < end:
        k = ops[i, 0]
        ev = np.int64(ops[i, 1])  # (the rows are int32: the kernels below take int64s)
        if k == POST and (2 * (C[NBKT] + 2) > ah[0].shape[0] or 2 * (C[NWAKE] + 2) > wk.shape[0]):
            C[RESUME] = r
            break
        i += 1
        if k == POST:
            post(ev, np.int64(ops[i - 1, 2]), np.int64(ops[i - 1, 3]), smpi, now, MI, MF, EVS, C, ah, mh, wk)
        elif k == YIELD:
            if EVS[ev, STATE] != 2:
                EVS[ev, WAITER] = r + 1
                pc[r] = i
                return
        elif k == WAITALL:
            left = 0
            for q in members[ops[i - 1, 2]:ops[i - 1, 2] + ops[i - 1, 3]]:
                if q >= 0 and EVS[q, STATE] != 2:
                    EVS[q, WAITER] = -(ev + 2)
                    left += 1
            if left:
                EVS[ev, LEFT] = left
            else:
                EVS[ev, STATE] = 2
        elif k == TIMEOUT or k == DELAY_SINCE:
            op_time[i - 1] = now
            if k == TIMEOUT:
                sec = seconds[ops[i - 1, 2]]
            else:  # fraction x (time of one earlier row - time of another)
                j = ops[i - 1, 3]
                sec = seconds[ops[i - 1, 2]] * (op_time[i - 1 - members[j]] - op_time[i - 1 - members[j + 1]])
            if sec > 0:
                EVS[ev, STATE] = 1
                C[NMAIN] = hpush(mh[0], mh[1], mh[2], mh[3], C[NMAIN], now + sec, C[EID], ev, 0)
                C[EID] += 1
            else:  # a zero-time delay: processed at once
                EVS[ev, STATE] = 2
        else:
            op_time[i - 1] = now
    pc[r] = i
    if i == end:
        finish[r] = now


@njit(cache=True, inline="always")
def arrive(m, now, MI, EVS, C, mh):
    """A message's last byte arrived: its receive (and rendezvous send) count down."""
    f = MI[m, FLAGS] | ARRIVED
    MI[m, FLAGS] = f
    if f & RPOSTED:
        e = MI[m, RECV]
        EVS[e, LEFT] -= 1
        if EVS[e, LEFT] == 0:
            trigger(e, now, EVS, C, mh)
    if not f & EAGER:
        e = MI[m, SEND]
        EVS[e, LEFT] -= 1
        if EVS[e, LEFT] == 0:
            trigger(e, now, EVS, C, mh)


@njit(cache=True)
def component(seeds, ns, touch, nt, limit, SI, PI, RF, rcnt, rl, sseen, rseen, stack, comp, satl, C):
    """The flows linked to the new flows ``seeds[:ns]`` and to the flows on the touched
    resources ``touch[:nt]`` through saturable resources, sorted by creation, and those
    resources (sorted): ``(flows, resources)``, or ``(-1, 0)`` past ``limit`` coupled
    flows (``limit`` < 0: none)."""
    C[STAMP] += 1
    stamp = C[STAMP]
    top = 0
    for q in range(ns):
        s = seeds[q]
        if SI[s, SMSG] >= 0 and sseen[s] != stamp:
            sseen[s] = stamp
            stack[top] = s
            top += 1
    for q in range(nt):
        pool, o = rl[POOL], rl[ROFF][touch[q]]
        for j in range(rcnt[touch[q]]):
            s = pool[o + j]
            if sseen[s] != stamp:
                sseen[s] = stamp
                stack[top] = s
                top += 1
    nc, nsat, coupled = 0, 0, 0
    while top:
        top -= 1
        s = stack[top]
        comp[nc] = s
        nc += 1
        p = SI[s, SPATH]
        linked = False
        for k in range(PI[p, 0]):
            r = PI[p, 1 + k]
            if RF[r, MAXLOAD] > RF[r, SAT]:
                linked = True
                if rseen[r] == stamp:
                    continue
                rseen[r] = stamp
                satl[nsat] = r
                nsat += 1
                pool, o = rl[POOL], rl[ROFF][r]
                for j in range(rcnt[r]):
                    g = pool[o + j]
                    if sseen[g] != stamp:
                        sseen[g] = stamp
                        stack[top] = g
                        top += 1
        if linked and limit >= 0:
            coupled += 1
            if coupled > limit:
                return -1, 0
    reorder(comp, nc, SI[comp[:nc], SSEQ])
    reorder(satl, nsat, satl[:nsat])
    return nc, nsat


@njit(cache=True, inline="always")
def wakeup(now, tune, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, scratch, free, C, ah, eh, mh, wk, EVS, A, T, bulk):
    """One network wake-up (``Network._on_wakeup``), in the array store ``A`` if ``bulk``;
    returns (the store, whether the flows are in it)."""
    MI, MF, SI = borrow(MI), borrow(MF), borrow(SI)  # (no reference counting: see .replay_borrow)
    SF, PI, PF = borrow(SF), borrow(PI), borrow(PF)
    RF, rcnt, rl = borrow(RF), borrow(rcnt), borrow(rl)
    scratch, free, C = borrow(scratch), borrow(free), borrow(C)
    ah, eh, mh = borrow(ah), borrow(eh), borrow(mh)
    wk, EVS = borrow(wk), borrow(EVS)
    T = borrow(T)
    sdel(wk, now)
    C[NWAKE] -= 1
    seeds, fin, touch = scratch[0], scratch[1], scratch[2]
    nxt = np.inf
    if bulk:
        A, nfin, nxt, bulk = store_wakeup(now, tune, A, T, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, fin, free, C, ah, eh)
        ns, nt, lone, nb = 0, 0, True, 0
    else:
        ns, nfin, lone, nb = activate(now, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, seeds, fin, free, C, ah)
        nfin, nt = take_ends(now, nfin, MI, SI, SF, PI, PF, RF, rcnt, rl, fin, touch, scratch[8], free, C, eh)
    if ns or nt:
        if nt == 0 and lone:
            if nb > 1 and ns > 1:
                reorder(seeds, ns, SI[seeds[:ns], SSEQ])
            C[RECOMP] += 1
            apply_bounds(now, seeds, ns, SI, SF, PI, PF, RF, C, eh)
        else:
            comp, stack, satl = scratch[3], scratch[4], scratch[5]
            limit = np.int64(tune[1]) if C[ACTIVE] > tune[0] else np.int64(-1)
            nc, nsat = component(seeds, ns, touch, nt, limit, SI, PI, RF, rcnt, rl, scratch[6], scratch[7],
                                 stack, comp, satl, C)
            if nc < 0:  # all active flows move into the array store
                A, nxt, bulk = enter(now, nfin, tune, T, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, fin, free, C, eh)
            elif nc:
                C[RECOMP] += 1
                if nc == 1 or nsat == 0:
                    rates = np.empty(nc)
                    for i in range(nc):
                        rates[i] = PF[SI[comp[i], SPATH], 1]
                else:
                    rates = solve(comp, nc, satl, nsat, SI, PI, PF, RF, scratch[7], C[STAMP], tune[2])
                apply(now, comp, nc, rates, SI, SF, PI, PF, RF, C, eh)
    for i in range(nfin):
        arrive(fin[i], now, MI, EVS, C, mh)
    if bulk and nxt < np.inf:
        wake_at(nxt, wk, C, mh)
    while C[NEND]:  # the earliest valid completion gets a wake-up (none in the store)
        e = cfirst((eh[0], eh[1], eh[2], eh[3]))
        s = eh[4][e]
        if SI[s, SMSG] >= 0 and SI[s, SVER] == eh[5][e]:
            wake_at(eh[2][0], wk, C, mh)
            break
        if cdrop((eh[0], eh[1], eh[2], eh[3]), C[NENDT]):
            C[NENDT] -= 1
        C[NEND] -= 1
        eh[6][C[NEND]] = e
    return A, bulk


@njit(cache=True)
def events(clock, tune, smpi, ops, members, seconds, pc, rend, op_time, finish, MI, MF, SI, SF, PI, PF, RF, EVS,
           rcnt, rl, scratch, free, C, ah, eh, mh, wk, A, T, bulk):
    """Run the ranks (at time 0 in rank order, then each when its event is processed) and
    the events in order until the queue is empty (DONE), or until the next step needs room
    (ROOM: the caller grows the arrays and calls again). Returns (that, the array store,
    whether the flows are in it: the caller passes both back). Now: ``clock[0]``."""
    ops, members, seconds = borrow(ops), borrow(members), borrow(seconds)  # (see .replay_borrow)
    pc, rend, op_time = borrow(pc), borrow(rend), borrow(op_time)
    finish, clock, C = borrow(finish), borrow(clock), borrow(C)
    MI, MF, EVS = borrow(MI), borrow(MF), borrow(EVS)
    ah, eh, mh = borrow(ah), borrow(eh), borrow(mh)
    wk = borrow(wk)
    D, n, P = PI.shape[1] - 1, RF.shape[0], pc.shape[0]
    while True:
        if C[RESUME] >= 0 or C[NSTART] < P:
            r = C[RESUME] if C[RESUME] >= 0 else C[NSTART]
            C[NSTART] += C[RESUME] < 0
            C[RESUME] = -1
            run_rank(r, clock[0], pc, rend, ops, members, seconds, op_time, finish, smpi, MI, MF, EVS, C, ah, mh, wk)
            if C[RESUME] >= 0:
                return ROOM, A, bulk
            continue
        if C[NMAIN] == 0 and C[NQUEUE] == 0:
            return DONE, A, bulk
        need = C[ACTIVE] + C[NACT] + 1
        if need > SI.shape[0] or C[NEND] + need > eh[4].shape[0] or 2 * (C[NENDT] + need + 2) > eh[0].shape[0] \
                or C[NQUEUE] + 2 * need + 4 > mh[4].shape[0]:
            return ROOM, A, bulk
        q = C[QHEAD]
        if C[NQUEUE] and (C[NMAIN] == 0 or mh[4][q] < mh[0][0] or (mh[4][q] == mh[0][0] and mh[5][q] < mh[1][0])):
            now, v = mh[4][q], mh[6][q]  # the queue's first entry comes before the heap's
            C[QHEAD] = (q + 1) & (mh[4].shape[0] - 1)
            C[NQUEUE] -= 1
        else:
            now, v = mh[0][0], mh[2][0]
            # a wake-up's relocations take at most 4 x (flows after it) x D + 8 n entries
            if v < 0 and (rl[POOL].shape[0] - C[PTOP] < 4 * need * D + 8 * n or 2 * (C[NWAKE] + 2) > wk.shape[0]):
                return ROOM, A, bulk
            C[NMAIN] = hpop(mh[0], mh[1], mh[2], mh[3], C[NMAIN])
        clock[0] = now
        if v < 0:
            A, bulk = wakeup(now, tune, MI, MF, SI, SF, PI, PF, RF, rcnt, rl, scratch, free, C, ah, eh, mh, wk, EVS,
                             A, T, bulk)
            continue
        EVS[v, STATE] = 2
        w = EVS[v, WAITER]
        if w > 0:
            C[RESUME] = w - 1  # (runs at the loop's top)
        elif w <= -2:
            g = -(w + 2)
            EVS[g, LEFT] -= 1
            if EVS[g, LEFT] == 0:
                trigger(g, now, EVS, C, mh)


# NOTE: the driver is plain Python: it runs once a run, calling :func:`events` again only when the
# arrays need room (a few dozen times in a run of millions of messages); compiled, it would carry a
# second copy of the loop's machine code, seconds of numba's compilation on a fresh cache.
def execute(ops, rank_ptr, members, seconds, smpi, tune, MI, MF, PI, PF, RF, EVS):
    """Run the recorded operations: returns (counters, finish per rank, time of each
    operation (marks and timeouts), busy resources, the last event's time)."""
    P, M, E, n, D = rank_ptr.shape[0] - 1, MI.shape[0], EVS.shape[0], RF.shape[0], PI.shape[1] - 1
    C = np.zeros(19, np.int64)
    C[RESUME] = -1
    hm, places = E + M + 16, int(tune[PLACES])
    mh = (np.empty(hm), np.empty(hm, np.int64), np.empty(hm, np.int64), np.empty(hm, np.int64), np.empty(64),
          np.empty(64, np.int64), np.empty(64, np.int64))
    ah = (np.full(places, -1.0), np.empty((2, places), np.int64), np.empty(places), np.empty(M, np.int32))
    eh = ends(places, 64)
    SI, SF, free = np.zeros((0, SPOS + D), np.int64), np.zeros((0, 4)), np.zeros(0, np.int64)
    z = np.zeros(0, np.int64)
    scratch = (z, z, np.zeros(n, np.int64), z, z, np.zeros(n, np.int64), z, np.zeros(n, np.int64),
               np.zeros(n, np.int64))
    SI, SF, free, scratch = grow_slots(SI, SF, free, scratch, C, 64)
    rcnt = np.zeros(n, np.int64)
    C[PTOP] = 2 * n
    rl = (np.empty(2 * n, np.int64), np.arange(n) * 2, np.full(n, 2, np.int64))
    wk = np.full(places, -1.0)  # wake-up times
    pc, rend = rank_ptr[:-1].copy(), rank_ptr[1:].copy()
    finish, op_time, clock = np.full(P, np.nan), np.zeros(ops.shape[0]), np.zeros(1)
    # the array store (:mod:`.replay_bulk`), empty: no flow is in it yet
    A, T, bulk = empty(n, 0), table(PI, PF, n), False
    while True:
        what, A, bulk = events(clock, tune, smpi, ops, members, seconds, pc, rend, op_time, finish, MI, MF, SI, SF,
                               PI, PF, RF, EVS, rcnt, rl, scratch, free, C, ah, eh, mh, wk, A, T, bulk)
        if what == DONE:
            break
        need = C[ACTIVE] + C[NACT] + 1
        if need > SI.shape[0]:
            SI, SF, free, scratch = grow_slots(SI, SF, free, scratch, C, need)
        eh = ends_room(eh, C, need)
        while C[NQUEUE] + 2 * need + 4 > mh[4].shape[0]:
            qt, qk, qv = qgrow(mh[4], mh[5], mh[6], C[QHEAD], C[NQUEUE])
            mh, C[QHEAD] = (mh[0], mh[1], mh[2], mh[3], qt, qk, qv), 0
        rl = pool_room(rl, rcnt, C, 4 * need * D + 8 * n)
        while 2 * (C[NBKT] + 2) > ah[0].shape[0]:
            ah = cgrow(ah, C[NBKT])
        while 2 * (C[NWAKE] + 2) > wk.shape[0]:
            wk = sgrow(wk)
    if bulk:
        close(A, RF, rcnt)
    if np.isnan(finish).any():
        C[STATUS] = DEADLOCK
    return C, finish, op_time, rcnt, clock[0]
