"""Array mode of :class:`~simcollective.network.engine.Network`: moving all active flows
into the array store (:mod:`.bulk`), one compiled step per event there, and moving back.

In array mode the per-resource bookkeeping (live flows per resource, maximum load, busy
time) and the active flows in activation order are the store's (the engine's ``_active``
is empty), and so are the flows' rates and progress: a flow's ``active``, ``rate``,
``remaining`` and ``t_last`` are those it had when it moved in (not kept for the flows
that start and end in the store). Leaving sets them again for the flows still in flight
and rebuilds the per-flow mode's dict and lists in activation order, so per-flow
iteration order is the same as if the flows had never been in the store.
"""

from __future__ import annotations

__all__ = ["ArrayModeMixin"]

_INF = float("inf")


class ArrayModeMixin:
    """The array-mode steps of the engine (see the module docstring)."""

    def _activate_bulk(self, now: float, finished: list) -> list:
        """:meth:`_activate` in array mode (the per-resource bookkeeping is the store's)."""
        seeds = []
        for bucket in self._cal.pop_activations(now):
            for f in bucket:
                f.t_start = now
                if f.eff <= 0 or not f.path.res:
                    finished.append(f)
                    continue
                seeds.append(f)
        self.active_count += len(seeds)
        return seeds

    def _enter_bulk(self, now: float, low: float) -> list:
        """Move all active flows into arrays (their calendar completions are dropped,
        the per-resource bookkeeping moves too), then solve."""
        from .bulk import BulkStore

        self.modes["enter"] += 1
        self.recomputations += 1
        self.modes["arrays"] += 1
        bulk = self._bulk = BulkStore(self.cap, self._table, self.tuning, [len(s) for s in self.res_flows],
                                      self.busy_since, self.busy_time)
        self.res_flows = [{} for _ in self.cap]
        flows = list(self._active)
        self._active = {}   # (the store's while in array mode)
        rates, tdones = [], []
        for f in flows:
            rate = f.rate
            rates.append(rate)
            if rate > 0:
                rem = f.remaining - rate * (now - f.t_last)
                tdones.append(now + (rem if rem > 0 else 0.0) / rate)
            else:
                tdones.append(_INF)
        self._cal.clear_ends()
        nch, self._next = bulk.enter(now, low, flows, rates, tdones)
        return self._after_solve(now, nch)

    def _bulk_step(self, now: float, seeds: list, finished: list) -> list:
        """One event in array mode (one compiled call); returns the flows whose rates
        changed (for observers)."""
        done, nch, what, self._next = self._bulk.step(now, seeds)
        if done:
            finished += done
            self.active_count -= len(done)
        if what is None:
            return []
        self.recomputations += 1
        self.modes[what] += 1
        if what == "array bounds":
            return self._observe(now, seeds)
        return self._after_solve(now, nch)

    def _after_solve(self, now: float, nch: int) -> list:
        bulk = self._bulk
        comp = bulk.changed(nch) if self.on_rates is not None or self.series is not None else []
        if self.active_count < self.tuning.bulk_off:
            self._leave_bulk(now)
        return self._observe(now, comp)

    def _observe(self, now: float, comp: list) -> list:
        """Show observers the flows whose rates changed (rates read from the arrays)."""
        if self.on_rates is not None:
            for f in comp:
                f.rate = self.rate_of(f)
            self.on_rates(now, comp)
        return comp

    def _leave_bulk(self, now: float) -> None:
        """Few flows left: back to per-flow objects, the calendar's completions and the
        per-resource bookkeeping in lists (rebuilt in activation order)."""
        self.modes["leave"] += 1
        bulk = self._bulk
        self._active = dict.fromkeys(bulk.live_flows())
        rate, tdone = bulk.sf[0], bulk.sf[1]
        for slot in bulk.live_slots():
            f = bulk.flows[slot]
            x = float(rate[slot])
            t = float(tdone[slot])
            f.rate = x
            f.remaining = (t - now) * x
            f.t_last = now
            f.active = True
            f.version += 1
            f.slot = -1
            self._cal.schedule_end(f, t)
        self.load, self.busy_since, self.busy_time = bulk.resource_state()
        self._bulk = None
        res_flows, maxload = self.res_flows, [0.0] * len(self.cap)
        for f in self._active:
            for r, _, load in f.path.load:
                res_flows[r][f] = None
                maxload[r] += load
        self.maxload = maxload
