"""Statistics of a run: bytes and busy time per resource, load time series (traces).

Observers only: nothing here changes a rate or the way rates are found.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LinkStats", "LinkStatsMixin", "res_bytes", "link_stats", "record_series", "link_series"]


@dataclass
class LinkStats:
    """Per-resource totals after a run."""

    name: str
    link_type: str
    capacity: float
    bytes: int
    busy_time: float


def res_bytes(paths, n: int) -> list:
    """Bytes carried per resource (forward routes only, not cross traffic), counting
    every traversal of a route that crosses a resource more than once."""
    out = [0] * n
    for p in {id(p): p for p in paths}.values():  # (a path may be cached under two keys)
        if p.bytes:
            for r in p.route.resources:
                out[r] += p.bytes
    return out


def link_stats(router, per_res_bytes, busy_time, busy_since, live, now: float) -> list:
    """Totals per resource that carried bytes (busy time closed at ``now``; ``live[i]``:
    whether flows are on resource ``i`` now)."""
    out = []
    for i, nbytes in enumerate(per_res_bytes):
        if nbytes == 0 and busy_time[i] == 0:
            continue
        busy = busy_time[i] + (now - busy_since[i] if live[i] else 0.0)
        out.append(LinkStats(router.resource_name[i], router.resource_type[i], router.capacity[i], nbytes, busy))
    return out


def record_series(series, res_flows, now: float, flow_groups, loads_on=None) -> None:
    """Append (time, load in bytes/s) for every resource whose flows changed (their
    loads from ``res_flows``, or ``loads_on(resources)`` in array mode)."""
    touched = sorted({r for group in flow_groups for f in group for r in f.path.res})
    if loads_on is not None:
        loads = loads_on(touched)
    else:
        loads = []
        for r in touched:
            load = 0.0
            for g in res_flows[r]:
                load += g.path.coef_of[r] * g.rate
            loads.append(load)
    for r, load in zip(touched, loads):
        pts = series.setdefault(r, [])
        if not pts or pts[-1][1] != load:
            if pts and pts[-1][0] == now:
                pts[-1] = (now, load)
            else:
                pts.append((now, load))


def link_series(series, names) -> dict:
    """Recorded load time series per resource name."""
    return {names[r]: pts for r, pts in sorted(series.items())} if series else {}


class LinkStatsMixin:
    """The statistics part of :class:`~simcollective.network.engine.Network`."""

    @property
    def res_bytes(self) -> list:
        """Bytes carried per resource (forward routes only, not cross traffic)."""
        return res_bytes(self._paths.values(), len(self.cap))

    def link_stats(self, makespan: float | None = None) -> list[LinkStats]:
        """Totals per resource that carried bytes (busy time closed at ``env.now``)."""
        bulk = self._bulk
        busy = (self.busy_time, self.busy_since, self.res_flows) if bulk is None else bulk.busy()
        return link_stats(self.router, self.res_bytes, *busy, self._env.now)

    def link_series(self) -> dict:
        """Recorded load time series per resource name (``series`` must be enabled)."""
        return link_series(self.series, self.router.resource_name)
