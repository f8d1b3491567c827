"""The array store: all active flows as NumPy arrays, stepped by compiled kernels.

Used when many flows are active and coupled (see :class:`~.tuning.Tuning`): each engine
event is then ONE compiled call over arrays kept between events (:func:`.bulk_kernels.step`:
add the flows that started, remove those complete, give new flows their bound when that
changes nobody else's rate, else re-solve what the change can reach, and find the next
completion), instead of Python work per flow and resource. The per-resource bookkeeping
(live flows per resource, busy time) is in the arrays too while the store is in use.
Free slots are reused lowest first (:mod:`.bulk_slots`), so the slot order, and with it
every float sum, is the same from run to run.
"""

from __future__ import annotations

import numpy as np

from . import bulk_kernels as K
from .bulk_slots import take
from .paths import PathTable

__all__ = ["BulkStore", "STAGED_SLACK"]

#: the store's list of the flows in the order they moved in is rewritten without those
#: complete once it is longer than twice the flows in flight plus this
STAGED_SLACK = 4096

_INF = float("inf")
# what a step did about rates, as the engine counts it (Network.modes)
_WHAT = (None, "array bounds", "arrays")  # indexed by K.NOTHING, K.BOUNDS, K.SOLVED
assert (K.NOTHING, K.BOUNDS, K.SOLVED) == (0, 1, 2)
_step, _DUE, _CHANGED = K.step, K.DUE, K.CHANGED


class BulkStore:
    def __init__(self, capacities, table: PathTable, tuning, counts, busy_since, busy_time):
        n = len(capacities)
        self.n = n
        self.table = table
        self.cutoff_tol, self.level_tol = tuning.cutoff_tol, tuning.level_tol
        self.rf = rf = np.zeros((8, n + 1))
        rf[K.CAP] = np.append(np.asarray(capacities, dtype=float), _INF)
        rf[K.SAT] = rf[K.CAP] * (1 + tuning.eps)
        rf[K.NEAR] = rf[K.CAP] * (1 - tuning.near_tol)
        rf[K.SINCE, :n] = busy_since
        rf[K.BUSY, :n] = busy_time
        self.ri = ri = np.zeros((2, n + 1), dtype=np.intp)
        ri[K.COUNT, :n] = counts
        ri[K.LOOKUP] = -1
        self.ctl = K.controls(float(tuning.refresh))
        self.K = 0
        self.flows: list = []   # the flow in each slot (None: free)
        # the flows in the order they moved in (by their activation), those complete
        # dropped now and then (STAGED_SLACK; a flow in a slot has ``slot >= 0``)
        self.staged: list = []
        self.live = 0           # slots holding a flow
        self.lo = 0             # no slot below this one is free
        self.sf = np.zeros((K.NSF, 0))
        self.si = np.zeros((5, 0), dtype=np.intp)
        self.sr = np.zeros((0, 2), np.int32)  # (grown by K.rows)
        self.rate = self.sf[K.RATE]
        self.X = K.no_work()  # the solves' scratch, kept across them (see :mod:`.bulk_kernels`)

    def _work(self) -> tuple:
        """The solves' scratch, grown to the slots and the path table's width."""
        self.X = X = K.work(self.X, self.K, self.table.pres.shape[1])
        return X

    def _grow(self) -> None:
        k = max(256, 2 * self.K)
        sf = np.zeros((K.NSF, k))
        sf[K.TDONE] = _INF
        sf[:, : self.K] = self.sf
        si = np.zeros((5, k), dtype=np.intp)
        si[:, : self.K] = self.si
        self.sf, self.si, self.rate = sf, si, sf[K.RATE]
        self.flows.extend([None] * (k - self.K))
        self.K = k

    def _stage(self, flows) -> int:
        """Give ``flows`` slots (lowest free first), write their path and bytes and list
        them in ``si[NEW]``; returns how many."""
        n = len(flows)
        while self.K - self.live < n:
            self._grow()
        pids = [f.path.pid for f in flows]
        if min(pids) < 0:   # paths new to the table (registered in flow order)
            register = self.table.register
            pids = [register(f.path) for f in flows]
        si = self.si
        self.lo = take(si, self.sf, np.array(pids, dtype=np.intp), np.array([f.remaining for f in flows], dtype=float),
                       self.lo)
        store = self.flows
        for f, s in zip(flows, si[K.NEW, :n].tolist()):
            store[s] = f
            f.slot = s
        self.live += n
        staged = self.staged
        staged += flows
        if len(staged) > 2 * self.live + STAGED_SLACK:
            self.staged = [f for f in staged if f.slot >= 0]
        sr, D = self.sr, self.table.pres.shape[1]
        if sr.shape[0] < self.K or sr.shape[1] < D + K.R0:  # (:func:`.bulk_kernels.rows`)
            self.sr = K.rows(sr, self.K, D)
        return n

    def enter(self, now: float, low: float, flows, rates, tdones) -> tuple:
        """All flows move in with their rates, then a solve; returns (changed slots,
        the next completion time)."""
        nnew = self._stage(flows)
        t = self.table
        nch, nxt = K.enter(now, low, nnew, np.array(rates, dtype=float), np.array(tdones, dtype=float),
                           self.cutoff_tol, self.level_tol, self.sf, self.si, self.rf, self.ri, self.sr,
                           t.pres, t.pcoef, t.pwb, self.ctl, self._work())
        return nch, nxt

    def changed(self, nch: int) -> list:
        """The flows whose rates the last solve changed (``nch`` of them), in slot order."""
        flows = self.flows
        return [flows[s] for s in self.si[_CHANGED, :nch].tolist()]

    def step(self, now: float, seeds) -> tuple:
        """One event (:func:`.bulk_kernels.step`): returns (completed flows in slot
        order, how many slots changed rate, what was done about rates ("array bounds",
        "arrays" or None), the next completion time)."""
        nnew = self._stage(seeds) if seeds else 0
        t = self.table
        k, nch, what, nxt = _step(now, nnew, self.cutoff_tol, self.level_tol, self.sf, self.si, self.rf, self.ri,
                                  self.sr, t.pres, t.pcoef, t.pwb, self.ctl, self._work())
        out = []
        if k:
            flows, due = self.flows, self.si[_DUE, :k].tolist()   # (ascending)
            for s in due:
                f = flows[s]
                f.slot = -1
                out.append(f)
                flows[s] = None
            self.live -= k
            if due[0] < self.lo:
                self.lo = due[0]
        return out, nch, _WHAT[what], nxt

    def loads_on(self, rs) -> list:
        """Coefficient x rate over the live flows on each resource of ``rs``."""
        t = self.table
        out = np.zeros(len(rs))
        K.loads_on(np.array(rs, dtype=np.intp), self.sf, self.si, t.pres, t.pcoef, out)
        return out.tolist()

    def live_slots(self) -> list:
        return np.flatnonzero(self.si[K.ALIVE]).tolist()

    def live_flows(self) -> list:
        """The flows in the store, in the order they moved in."""
        return [f for f in self.staged if f.slot >= 0]

    @property
    def solves(self) -> int:
        return int(self.ctl[K.SOLVES])

    def resource_state(self) -> tuple:
        """(load, busy since, busy time) per resource."""
        rf, n = self.rf, self.n
        return rf[K.LOAD, :n].tolist(), rf[K.SINCE, :n].tolist(), rf[K.BUSY, :n].tolist()

    def busy(self) -> tuple:
        """(busy time, busy since, live flows) per resource."""
        rf, n = self.rf, self.n
        return rf[K.BUSY, :n].tolist(), rf[K.SINCE, :n].tolist(), self.ri[K.COUNT, :n].tolist()
