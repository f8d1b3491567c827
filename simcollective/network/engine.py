"""The flow-level network engine: latency first, then (weighted) max-min fair sharing.

Each message is a :class:`Flow` over a :class:`~simcollective.network.routing.Route`. A flow
first waits its route latency (times the profile's latency factor) without using
bandwidth, then joins the set of active flows. Rates follow max-min fairness (progressive
filling), weighted by 1/penalty under the ``penalty`` sharing of the ``cm02``/``smpi``
profiles, each flow bounded by its own route capacity and TCP window. Cross traffic puts a
fraction of a flow's rate on the reverse route's resources.

Performance design:

* one SimPy wake-up per distinct due time, not one per flow: activations are grouped by
  their exact due time, completions sit in one heap (entries superseded by a rate change
  are skipped lazily, and only the earliest valid completion has a wake-up); everything
  due at the same instant is processed together, followed by a single rate
  recomputation (batching);
* rates are recomputed only for the connected component (flows linked through shared
  *saturable* resources) of the flows that started or ended; a resource whose capacity
  exceeds the sum of the maximum rates of its flows can never bind and does not connect
  flows (so the huge switch-crossing capacities do not merge everything into one
  component);
* a component of one flow takes its bound directly; larger ones use vectorized
  progressive filling over a flow x resource incidence (NumPy); components of more than
  256 flows (with over 512 active) are solved over all active flows at once, vectorized;
* a flow whose rate did not change keeps its scheduled completion.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.core import NORMAL

from .routing import Route, Router

__all__ = ["SimEnvironment", "Flow", "Network", "LinkStats", "max_min_rates"]

_EPS = 1e-9          # relative slack before a resource counts as saturable
_LEVEL_TOL = 1e-12   # relative tolerance when picking bottlenecks of equal level
_BIG_COMPONENT = 256 # components larger than this are solved with all active flows, vectorized
_VECTOR_INCIDENCE = 48  # components larger than this build their incidence with NumPy


def _by_seq(flow):
    return flow.seq
_INF = float("inf")


class SimEnvironment(simpy.Environment):
    """A SimPy environment that can also run a callback at an exact absolute time.

    ``env.timeout(t - env.now)`` would land at ``now + (t - now)``, which float rounding
    can move off ``t``; the engine needs completions to happen exactly at the computed
    instants so that simultaneous ones batch together.
    """

    def call_at(self, when: float, callback) -> None:
        event = simpy.Event(self)
        event._ok = True
        event._value = None
        event.callbacks.append(callback)
        heapq.heappush(self._queue, (when, NORMAL, next(self._eid), event))


class _Path:
    __slots__ = ("route", "res", "coef", "weight", "maxrate", "load", "bytes", "res_arr", "coef_arr")


class Flow:
    """One message in flight. Times in seconds, sizes in bytes, rates in bytes/s."""

    __slots__ = (
        "src", "dst", "size", "path", "latency", "eff", "remaining", "rate", "t_last",
        "res", "coef", "weight", "maxrate", "version", "active", "callback",
        "t_post", "t_start", "t_end", "tag", "seq",
    )

    def __repr__(self):
        return f"Flow({self.src!r}->{self.dst!r}, {self.size} B)"


def max_min_rates(weights, bounds, entries_flow, entries_res, entries_coef, capacities):
    """Weighted max-min fair rates by progressive filling.

    Parameters
    ----------
    weights, bounds : array of shape (m,)
        Flow weights (shares are proportional to them) and per-flow upper bounds.
    entries_flow, entries_res, entries_coef : arrays of shape (nnz,)
        Incidence: flow ``entries_flow[e]`` consumes ``entries_coef[e]`` units of resource
        ``entries_res[e]`` per unit of its rate.
    capacities : array of shape (n,)

    Returns
    -------
    numpy.ndarray of shape (m,)

    Examples
    --------
    Worked check 3 of the network model: A: x->y, B: y->z, C: x->z, capacities 1.

    >>> max_min_rates([1, 1, 1], [9, 9, 9], [0, 1, 2, 2], [0, 1, 0, 1], [1, 1, 1, 1], [1.0, 1.0])
    array([0.5, 0.5, 0.5])
    """
    w = np.asarray(weights, dtype=float)
    b = np.asarray(bounds, dtype=float)
    fi = np.asarray(entries_flow, dtype=np.intp)
    rj = np.asarray(entries_res, dtype=np.intp)
    av = np.asarray(entries_coef, dtype=float)
    c = np.array(capacities, dtype=float)
    m, n = len(w), len(c)
    rates = np.zeros(m)
    active = np.ones(m, dtype=bool)
    aw = av * w[fi]
    flow_level = b / w
    e_act = np.ones(len(fi), dtype=bool)
    while True:
        load = np.bincount(rj[e_act], weights=aw[e_act], minlength=n)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(load > 0, c / load, _INF)
        fl = np.where(active, flow_level, _INF)
        lam = min(level.min() if n else _INF, fl.min() if m else _INF)
        if lam == _INF:
            break
        thresh = lam * (1 + _LEVEL_TOL)
        hit = level <= thresh
        fix = np.zeros(m, dtype=bool)
        fix[fi[e_act & hit[rj]]] = True
        fix |= fl <= thresh
        fix &= active
        rates[fix] = np.minimum(w[fix] * lam, b[fix])
        e_fix = fix[fi]
        c -= np.bincount(rj[e_fix], weights=av[e_fix] * rates[fi[e_fix]], minlength=n)
        np.maximum(c, 0.0, out=c)
        active &= ~fix
        if not active.any():
            break
        e_act = active[fi]
    return rates


@dataclass
class LinkStats:
    """Per-resource totals after a run."""

    name: str
    link_type: str
    capacity: float
    bytes: int
    busy_time: float


class Network:
    """Flows over a hardware graph inside a SimPy environment.

    Parameters
    ----------
    env : SimEnvironment
    graph : networkx.DiGraph
        A validated hardware graph (see :mod:`topologies.schema`).
    profile : simcollective.profile.Profile
    routing : {"first", "hash"}
    """

    def __init__(self, env: SimEnvironment, graph, profile, routing: str = "first", router: Router | None = None):
        self.env = env
        self.profile = profile
        self.router = router if router is not None else Router(graph, routing)
        n = len(self.router.capacity)
        self.cap = list(self.router.capacity)
        self.res_flows = [set() for _ in range(n)]
        self.maxload = [0.0] * n
        self.busy_since = [0.0] * n
        self.busy_time = [0.0] * n
        self._sat = [c * (1 + _EPS) for c in self.cap]  # load above this can bind
        # flow activations grouped by their exact due time, with a heap of those times;
        # completions in a heap of (time, seq, flow, version), superseded entries skipped
        # lazily; one SimPy wake-up per distinct due time that is still the earliest
        self._buckets: dict = {}
        self._times: list = []
        self._done: list = []
        self._seq = itertools.count()
        self._wakeups: set = set()
        self._active: dict = {}  # active flows in activation order (dict as ordered set)
        self._paths: dict = {}
        self.flows_started = 0
        self.flows_completed = 0
        self.bytes_sent = 0
        self.recomputations = 0
        self.active_count = 0
        self.on_rates = None  # optional hook(now, flows) for tests
        self.series = None    # {resource: [(t, load)]} when enabled (traces)

    # -- public API -------------------------------------------------------------------
    def route(self, src, dst) -> Route:
        return self.router.route(src, dst)

    def path_parameters(self, src, dst) -> "_Path":
        """Everything about flows src -> dst that does not depend on the message size
        (cached): route, resources with their coefficients, weight and rate bound."""
        key = (src, dst)
        p = self._paths.get(key)
        if p is not None:
            return p
        prof = self.profile
        route = self.router.route(src, dst)
        res = list(route.resources)
        coef = [1.0] * len(res)
        if prof.cross_traffic > 0 and res:
            pos = {r: i for i, r in enumerate(res)}
            for r in self.router.route(dst, src).resources:
                i = pos.get(r)
                if i is None:
                    pos[r] = len(res)
                    res.append(r)
                    coef.append(prof.cross_traffic)
                else:
                    coef[i] += prof.cross_traffic
        cap = self.cap
        if prof.sharing == "penalty":
            penalty = route.latency + sum(prof.weight_s / cap[r] for r in route.resources)
            weight = 1.0 / penalty if penalty > 0 else 1.0
        else:
            weight = 1.0
        maxrate = min((cap[r] / a for r, a in zip(res, coef)), default=_INF)
        if prof.bound_by_route_capacity:
            maxrate = min(maxrate, route.capacity)
        if prof.tcp_gamma > 0 and route.latency > 0:
            maxrate = min(maxrate, prof.tcp_gamma / (2.0 * route.latency))
        p = self._paths[key] = _Path()
        p.route, p.res, p.coef, p.weight, p.maxrate, p.bytes = route, tuple(res), tuple(coef), weight, maxrate, 0
        p.load = tuple((r, a * maxrate) for r, a in zip(res, coef))
        p.res_arr = np.array(res, dtype=np.intp)
        p.coef_arr = np.array(coef, dtype=float)
        return p

    def transfer(self, src, dst, size: int, callback, tag=None) -> Flow:
        """Start sending ``size`` bytes from node ``src`` to node ``dst`` now.

        ``callback(flow)`` runs when the last byte arrives (``flow.t_end``).
        """
        now = self.env.now
        prof = self.profile
        f = Flow()
        f.path = path = self.path_parameters(src, dst)
        route = path.route
        f.res, f.coef, f.weight, f.maxrate = path.res, path.coef, path.weight, path.maxrate
        f.latency = latency = route.latency * prof.latency_factor(size) if route.latency else 0.0
        f.eff = f.remaining = size / prof.bandwidth_factor(size) if size > 0 else 0.0
        f.src, f.dst, f.size, f.callback, f.tag = src, dst, size, callback, tag
        f.rate = 0.0
        f.t_last = f.t_post = now
        f.t_start = f.t_end = None
        f.version = 0
        f.active = False
        f.seq = self.flows_started
        path.bytes += size
        self.flows_started += 1
        self.bytes_sent += size
        when = now + latency
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._new_bucket(when)
        bucket.append(f)
        return f

    def _new_bucket(self, when: float) -> list:
        """The list of flow activations due at ``when`` (with a SimPy wake-up then)."""
        bucket = self._buckets[when] = []
        heapq.heappush(self._times, when)
        self._wake_at(when)
        return bucket

    def _wake_at(self, when: float) -> None:
        if when not in self._wakeups:
            self._wakeups.add(when)
            self.env.call_at(when, self._on_wakeup)

    @property
    def res_bytes(self) -> list:
        """Bytes carried per resource (forward routes only, not cross traffic)."""
        out = [0] * len(self.cap)
        for p in self._paths.values():
            if p.bytes:
                for r in p.route.resources:
                    out[r] += p.bytes
        return out

    def link_stats(self, makespan: float | None = None) -> list[LinkStats]:
        """Totals per resource that carried bytes (busy time closed at ``env.now``)."""
        now = self.env.now
        out = []
        r = self.router
        for i, nbytes in enumerate(self.res_bytes):
            if nbytes == 0 and self.busy_time[i] == 0:
                continue
            busy = self.busy_time[i] + (now - self.busy_since[i] if self.res_flows[i] else 0.0)
            out.append(LinkStats(r.resource_name[i], r.resource_type[i], r.capacity[i], nbytes, busy))
        return out

    # -- event processing -------------------------------------------------------------
    def _on_wakeup(self, _event) -> None:
        now = self.env.now
        self._wakeups.discard(now)
        times, buckets, done = self._times, self._buckets, self._done
        heappop = heapq.heappop
        sat, maxload, res_flows, busy_since = self._sat, self.maxload, self.res_flows, self.busy_since
        finished = []
        seeds = []
        touched = set()
        ended = 0
        while times and times[0] <= now:
            for f in buckets.pop(heappop(times)):
                f.t_start = now
                if f.eff <= 0 or not f.res:
                    finished.append(f)
                    continue
                f.active = True
                f.t_last = now
                self._active[f] = None
                for r, load in f.path.load:
                    s = res_flows[r]
                    if not s:
                        busy_since[r] = now
                    s.add(f)
                    maxload[r] += load
                seeds.append(f)
        while done and done[0][0] <= now:
            _, _, f, version = heappop(done)
            if version != f.version or not f.active:
                continue  # superseded by a rate change
            f.active = False
            del self._active[f]
            for r, load in f.path.load:
                s = res_flows[r]
                s.discard(f)
                ml = maxload[r]
                if ml > sat[r]:
                    touched.add(r)
                if s:
                    maxload[r] = ml - load
                else:
                    maxload[r] = 0.0
                    self.busy_time[r] += now - busy_since[r]
            ended += 1
            finished.append(f)
        self.active_count += len(seeds) - ended
        for r in touched:
            seeds.extend(res_flows[r])
        comp = self._recompute(seeds, now) if seeds else ()
        if self.series is not None:
            self._record_series(now, seeds, finished, comp)
        self.flows_completed += len(finished)
        for f in finished:
            f.t_end = now
            f.callback(f)
        done = self._done  # (the recomputation may have rebuilt the heap)
        while done:  # make sure the earliest valid completion has a wake-up
            when, _, f, version = done[0]
            if version != f.version or not f.active:
                heappop(done)
                continue
            self._wake_at(when)
            break

    def _recompute(self, seeds, now: float) -> list:
        maxload, res_flows, satl = self.maxload, self.res_flows, self._sat
        comp = []
        seen_res = set()
        sat = []
        seen = {f for f in seeds if f.active}
        stack = list(seen)
        limit = _BIG_COMPONENT if self.active_count > 2 * _BIG_COMPONENT else None
        while stack:
            f = stack.pop()
            comp.append(f)
            if limit is not None and len(comp) > limit:
                # a big component: solving all active flows at once (vectorized) is cheaper
                # than walking the component in Python, and gives the same rates
                comp = None
                break
            for r in f.res:
                if r in seen_res:
                    continue
                seen_res.add(r)
                if maxload[r] > satl[r]:
                    sat.append(r)
                    new = res_flows[r] - seen
                    if new:
                        seen |= new
                        stack.extend(new)
        if comp is None:
            comp = list(self._active)
            sat = None
        if not comp:
            return comp
        # a fixed order (flows by creation, resources by index) keeps float sums, and so
        # results, bit-identical from run to run (sets iterate in memory-address order)
        comp.sort(key=_by_seq)
        if sat:
            sat.sort()
        self.recomputations += 1
        for f in comp:
            if f.rate > 0:
                f.remaining -= f.rate * (now - f.t_last)
            f.t_last = now
        if len(comp) == 1 or sat == []:
            new_rates = [f.maxrate for f in comp]
        elif sat is None or len(comp) > _VECTOR_INCIDENCE:
            new_rates = self._solve_vectorized(comp)
        else:
            cap = self.cap
            idx = {r: j for j, r in enumerate(sat)}
            fi, rj, av = [], [], []
            for i, f in enumerate(comp):
                for r, a in zip(f.res, f.coef):
                    j = idx.get(r)
                    if j is not None:
                        fi.append(i)
                        rj.append(j)
                        av.append(a)
            new_rates = max_min_rates(
                [f.weight for f in comp], [f.maxrate for f in comp], fi, rj, av, [cap[r] for r in sat]
            ).tolist()
        done, seq, heappush = self._done, self._seq, heapq.heappush
        for f, rate in zip(comp, new_rates):
            if rate == f.rate:
                continue
            f.rate = rate
            f.version += 1
            rem = f.remaining if f.remaining > 0 else 0.0
            heappush(done, (now + rem / rate, next(seq), f, f.version))
        if len(done) > 4 * len(self._active) + 4096:
            # superseded completions pile up under heavy contention: drop them
            self._done = done = [e for e in done if e[3] == e[2].version and e[2].active]
            heapq.heapify(done)
        if self.on_rates is not None:
            self.on_rates(now, comp)
        return comp


    def _solve_vectorized(self, comp) -> list:
        """Max-min rates of ``comp`` with the incidence built by NumPy from per-path arrays."""
        paths = [f.path for f in comp]
        lens = np.fromiter((len(p.res) for p in paths), dtype=np.intp, count=len(paths))
        rall = np.concatenate([p.res_arr for p in paths])
        aall = np.concatenate([p.coef_arr for p in paths])
        fall = np.repeat(np.arange(len(comp)), lens)
        keep = np.asarray(self.maxload)[rall] > np.asarray(self._sat)[rall]
        uniq, inv = np.unique(rall[keep], return_inverse=True)
        return max_min_rates(
            np.fromiter((f.weight for f in comp), dtype=float, count=len(comp)),
            np.fromiter((f.maxrate for f in comp), dtype=float, count=len(comp)),
            fall[keep], inv, aall[keep], np.asarray(self.cap)[uniq],
        ).tolist()

    def _record_series(self, now, *flow_groups) -> None:
        """Append (time, load in bytes/s) for every resource whose flows changed."""
        touched = {r for group in flow_groups for f in group for r in f.res}
        for r in touched:
            load = 0.0
            for g in self.res_flows[r]:
                load += g.coef[g.res.index(r)] * g.rate
            pts = self.series.setdefault(r, [])
            if not pts or pts[-1][1] != load:
                if pts and pts[-1][0] == now:
                    pts[-1] = (now, load)
                else:
                    pts.append((now, load))

    def link_series(self) -> dict:
        """Recorded load time series per resource name (``series`` must be enabled)."""
        names = self.router.resource_name
        return {names[r]: pts for r, pts in sorted(self.series.items())} if self.series else {}
