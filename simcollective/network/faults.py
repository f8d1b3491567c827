"""Timed capacity changes: a link that degrades to a fraction of its capacity, or fails, at
a given simulated time (:class:`LinkFault`, :meth:`FaultsMixin.schedule_faults`).

At a fault's time every active flow is brought up to date (its bytes sent so far at its
old rate), the changed capacities and every cached route parameter are recomputed, and the
max-min rates of all active flows are solved again. A failed link leaves the routing graph:
routes that crossed it are computed again over what remains (shortest paths by hop count,
as before), and the flows on them, in flight or still in their latency, continue on the new
route with the bytes they have left (no new latency: the switch-over is instantaneous in the
model). Bytes a flow was sent with stay counted on the route it started on.

Faults run in the per-flow mode only (:data:`FAULT_TUNING` keeps the engine out of its
array store), so the max-min solve (:mod:`.component`, :mod:`.filling`) stays apart from the
bookkeeping here, which only feeds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .paths import Path, bound_path, path_parameters
from .tuning import Tuning

__all__ = ["LinkFault", "FaultsMixin", "FAULT_TUNING", "fault_edges"]

_INF = float("inf")

#: the engine's thresholds under faults: never the array store (a fault re-solves in per-flow mode)
FAULT_TUNING = Tuning(bulk_min=2**62)


@dataclass(frozen=True)
class LinkFault:
    """At ``at`` seconds, the directed edges ``edges`` ((u, v) node pairs of the network's
    graph) keep ``fraction`` of their capacity (0: they fail and leave the routes)."""

    at: float
    edges: tuple
    fraction: float
    label: str = ""


def fault_edges(router, edges) -> list:
    """The resource indices of ``edges`` (directed (u, v) pairs) in ``router``."""
    return sorted({router.edge_resource[e] for e in edges})


class FaultsMixin:
    """Timed capacity changes of :class:`~simcollective.network.engine.Network`."""

    def schedule_faults(self, faults) -> None:
        """Apply each :class:`LinkFault` at its time (in time order, ties in list order);
        those due now (t = 0: before any flow) at once."""
        self._nominal = list(self.cap)
        for fault in sorted(faults, key=lambda f: f.at):
            if fault.at <= self._env.now:
                self.apply_fault(fault)
            else:
                self._env.call_at(fault.at, lambda _event, fault=fault: self.apply_fault(fault))

    def apply_fault(self, fault: LinkFault) -> None:
        """Change the capacities of ``fault`` now and re-solve every active flow's rate."""
        now = self._env.now
        flows = list(self._active)
        self._detach(flows, now)
        resources = fault_edges(self.router, fault.edges)
        tol = self.tuning
        for r in resources:
            c = self._nominal[r] * fault.fraction
            if c > 0:
                self.cap[r] = c
                self._sat[r] = c * (1 + tol.eps)
                self._near[r] = c * (1 - tol.near_tol)
        if fault.fraction == 0:
            self.router.remove_edges(fault.edges)
        self._refresh_paths(set(resources) if fault.fraction == 0 else None)
        self._attach(flows, now)
        if flows:
            self._recompute(flows, now, _INF)
        self._cal.wake_next_end()

    def _detach(self, flows, now: float) -> None:
        """Take ``flows`` (every active flow: the resources end empty) off their
        resources, their bytes brought up to ``now``."""
        res_flows, maxload, rload, busy_time, busy_since = (self.res_flows, self.maxload, self.load, self.busy_time,
                                                             self.busy_since)
        for f in flows:
            f.remaining -= f.rate * (now - f.t_last)
            f.t_last = now
            f.rate = 0.0
            f.version += 1   # its scheduled completion no longer holds
            for r in f.path.res:
                s = res_flows[r]
                del s[f]
                if not s:
                    maxload[r] = rload[r] = 0.0
                    busy_time[r] += now - busy_since[r]

    def _attach(self, flows, now: float) -> None:
        """Put ``flows`` (rate 0) on the resources of their (new) paths."""
        res_flows, maxload, busy_since = self.res_flows, self.maxload, self.busy_since
        for f in flows:
            for r, _, load in f.path.load:
                s = res_flows[r]
                if not s:
                    busy_since[r] = now
                s[f] = None
                maxload[r] += load

    def _refresh_paths(self, failed) -> None:
        """Every cached route parameter again, in place (flows hold them); a path whose
        route crossed a resource in ``failed`` gets its new route, its bytes so far kept
        on a record of the old one."""
        base_keys = [k for k in self._paths if len(k) == 2]
        for key in base_keys:
            p = self._paths[key]
            if failed is not None and failed.intersection(p.res):
                self._keep_bytes(p)
            _copy(p, path_parameters(self.router, self.model, self.cap, *key))
        for key, p in list(self._paths.items()):
            if len(key) == 3 and p is not self._paths[key[:2]]:
                if failed is not None and failed.intersection(p.res):
                    self._keep_bytes(p)
                _copy(p, bound_path(self._paths[key[:2]], key[2]))

    def _keep_bytes(self, p: Path) -> None:
        old = Path()
        old.route, old.res, old.bytes = p.route, p.res, p.bytes
        self._paths[("before fault", len(self._paths), p.route.nodes, None)] = old
        p.bytes = 0


def _copy(p: Path, new: Path) -> None:
    """``new``'s route parameters into ``p`` (its bytes and table row kept)."""
    p.route, p.res, p.coef, p.coef_of, p.nres = new.route, new.res, new.coef, new.coef_of, new.nres
    p.weight, p.maxrate, p.load, p.lat = new.weight, new.maxrate, new.load, new.lat
