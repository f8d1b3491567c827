"""The array store: all active flows as NumPy arrays, stepped by compiled kernels.

Used when many flows are active and coupled (see :class:`~.tuning.Tuning`): each engine
event is then a few compiled calls over arrays kept between events (add the flows that
started, remove those complete, give new flows their bound when that changes nobody
else's rate, else re-solve what the change can reach), instead of Python work per flow.
Free slots are reused lowest first, so the slot order, and with it every float sum, is
the same from run to run.
"""

from __future__ import annotations

import heapq

import numpy as np

from . import bulk_kernels as K
from .paths import PathTable

__all__ = ["BulkStore"]

_INF = float("inf")


class BulkStore:
    def __init__(self, capacities, table: PathTable, tuning):
        n = len(capacities)
        self.n = n
        self.table = table
        self.tuning = tuning
        self.capx = np.append(np.asarray(capacities, dtype=float), _INF)
        self.satx = self.capx * (1 + tuning.eps)
        self.nearx = self.capx * (1 - tuning.near_tol)
        self.load = np.zeros(n + 1)
        self.maxl = np.zeros(n + 1)
        self.wsum = np.zeros(n + 1)
        self.lookup = np.full(n + 1, -1, dtype=np.intp)
        self.K = 0
        self.flows: list = []
        self.free: list = []
        self.alive = np.zeros(0, dtype=np.bool_)
        self.spid = np.zeros(0, dtype=np.intp)
        self.rate = np.zeros(0)
        self.tdone = np.zeros(0)
        self.eff = np.zeros(0)
        self.due = np.zeros(0, dtype=np.intp)
        self.changed = np.zeros(0, dtype=np.intp)
        self.solves = 0

    def _grow(self) -> None:
        k = max(256, 2 * self.K)
        extra = k - self.K
        self.alive = np.concatenate((self.alive, np.zeros(extra, dtype=np.bool_)))
        self.spid = np.concatenate((self.spid, np.zeros(extra, dtype=np.intp)))
        self.rate = np.concatenate((self.rate, np.zeros(extra)))
        self.tdone = np.concatenate((self.tdone, np.full(extra, _INF)))
        self.eff = np.concatenate((self.eff, np.zeros(extra)))
        self.due = np.zeros(k, dtype=np.intp)
        self.changed = np.zeros(k, dtype=np.intp)
        self.flows.extend([None] * extra)
        for slot in range(self.K, k):
            heapq.heappush(self.free, slot)
        self.K = k

    def take_slots(self, flows) -> tuple:
        """Slots for ``flows`` (lowest free first) and their path ids and bytes."""
        slots, pids, effs = [], [], []
        register = self.table.register
        for f in flows:
            if not self.free:
                self._grow()
            s = f.slot = heapq.heappop(self.free)
            self.flows[s] = f
            slots.append(s)
            pids.append(register(f.path))
            effs.append(f.remaining)
        return (np.array(slots, dtype=np.intp), np.array(pids, dtype=np.intp), np.array(effs, dtype=float))

    def add(self, flows) -> np.ndarray:
        slots, pids, effs = self.take_slots(flows)
        t = self.table
        K.add_flows(slots, pids, effs, self.alive, self.spid, self.rate, self.tdone, self.eff,
                    t.pres, t.pcoef, t.pw, t.pb, self.maxl, self.wsum)
        return slots

    def set_rated(self, slots, rates, tdones) -> None:
        """Flows moved in with a rate already (entering the store)."""
        t = self.table
        self.rate[slots] = rates
        self.tdone[slots] = tdones
        K.refresh(self.alive, self.spid, self.rate, t.pres, t.pcoef, t.pw, t.pb, self.load, self.maxl, self.wsum)

    def remove_due(self, now: float) -> tuple:
        """(flows complete by ``now`` in slot order, their lowest level, coupled?)."""
        t = self.table
        k, low, coupled = K.remove_due(now, self.alive, self.spid, self.rate, self.tdone, t.pres, t.pcoef, t.pw, t.pb,
                                       self.load, self.maxl, self.wsum, self.nearx, self.due)
        out = []
        if k:
            flows, free = self.flows, self.free
            for s in self.due[:k].tolist():
                out.append(flows[s])
                flows[s] = None
                heapq.heappush(free, s)
        return out, low, coupled

    def bounds_fit(self, now: float, slots) -> bool:
        t = self.table
        return K.bounds_fit(now, slots, self.spid, self.rate, self.tdone, self.eff, t.pres, t.pcoef, t.pb,
                            self.load, self.satx)

    def solve(self, now: float, low: float) -> list:
        """Re-solve what the change can reach; returns the slots whose rate changed."""
        self.solves += 1
        t = self.table
        if self.solves % self.tuning.refresh == 0:
            K.refresh(self.alive, self.spid, self.rate, t.pres, t.pcoef, t.pw, t.pb, self.load, self.maxl, self.wsum)
        k = K.solve(now, low, self.tuning.cutoff_tol, self.tuning.level_tol, self.alive, self.spid, self.rate,
                    self.tdone, self.eff, t.pres, t.pcoef, t.pw, t.pb, self.capx, self.satx, self.load, self.maxl,
                    self.wsum, self.lookup, self.changed)
        return self.changed[:k]

    def next_time(self) -> float:
        return K.next_time(self.alive, self.tdone)

    def live_slots(self) -> list:
        return np.flatnonzero(self.alive).tolist()
