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
_LOCAL_MIN = 64      # with more active flows than this, rates are re-solved locally
_LOCAL_MAX = 128     # local re-solving gives up (for all active flows) past this many flows
_CHECK_TOL = 1e-10
_NEAR_TOL = 1e-6
_CUTOFF_TOL = 1e-9   # flows this close below the cutoff level are re-solved too     # a resource loaded above (1 - this) x capacity may be saturated   # relative tolerance of the bottleneck check of local re-solving


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
    __slots__ = ("route", "res", "nres", "coef", "coef_of", "weight", "maxrate", "load", "bytes", "res_arr", "coef_arr")


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
    if m == 0:
        return rates
    # the flows still growing (ids), and their incidence entries, compacted as flows fix
    ids = np.arange(m)
    wl, fl = w, b / w
    aw = av * w[fi]
    while True:
        load = np.bincount(rj, weights=aw, minlength=n)
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(load > 0, c / load, _INF)
        lam = min(level.min() if n else _INF, fl.min())
        if lam == _INF:
            break
        thresh = lam * (1 + _LEVEL_TOL)
        fix = fl <= thresh
        fix[fi[level[rj] <= thresh]] = True
        got = np.minimum(wl[fix] * lam, b[ids[fix]])
        rates[ids[fix]] = got
        e_fix = fix[fi]
        if e_fix.any():
            c -= np.bincount(rj[e_fix], weights=av[e_fix] * rates[ids[fi[e_fix]]], minlength=n)
            np.maximum(c, 0.0, out=c)
        keep = ~fix
        if not keep.any():
            break
        e_keep = ~e_fix
        renum = np.cumsum(keep) - 1
        fi, rj, av, aw = renum[fi[e_keep]], rj[e_keep], av[e_keep], aw[e_keep]
        ids, wl, fl = ids[keep], wl[keep], fl[keep]
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
        self._cap_arr = np.array(self.cap, dtype=float)
        # flows per resource, as insertion-ordered dicts (deterministic iteration)
        self.res_flows = [{} for _ in range(n)]
        self.maxload = [0.0] * n
        self.busy_since = [0.0] * n
        self.busy_time = [0.0] * n
        self._sat = [c * (1 + _EPS) for c in self.cap]  # maxload above this can bind
        # current load per resource (sum of coefficient x rate), kept incrementally: only a
        # guide for what to re-solve (a resource below _near carries no bottleneck)
        self.load = [0.0] * n
        self._near = [c * (1 - _NEAR_TOL) for c in self.cap]
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
        self._bulk = None  # arrays of the last all-active solve, reused by the next
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
        p.load = tuple((r, a, a * maxrate) for r, a in zip(res, coef))
        p.coef_of = dict(zip(res, coef))
        p.res_arr = np.array(res, dtype=np.intp)
        p.coef_arr = np.array(coef, dtype=float)
        p.nres = len(res)
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
        rload, near = self.load, self._near
        finished = []
        seeds = []
        touched = set()
        ended = 0
        low = _INF  # lowest level (rate / weight) of the flows that ended
        while times and times[0] <= now:
            for f in buckets.pop(heappop(times)):
                f.t_start = now
                if f.eff <= 0 or not f.res:
                    finished.append(f)
                    continue
                f.active = True
                f.t_last = now
                self._active[f] = None
                for r, _, load in f.path.load:
                    s = res_flows[r]
                    if not s:
                        busy_since[r] = now
                    s[f] = None
                    maxload[r] += load
                seeds.append(f)
        while done and done[0][0] <= now:
            _, _, f, version = heappop(done)
            if version != f.version or not f.active:
                continue  # superseded by a rate change
            f.active = False
            del self._active[f]
            rate = f.rate
            lvl = rate / f.weight
            if lvl < low:
                low = lvl
            for r, a, load in f.path.load:
                s = res_flows[r]
                del s[f]
                ml = maxload[r]
                if ml > sat[r] and rload[r] >= near[r]:
                    touched.add(r)  # saturated: its other flows may speed up
                if s:
                    maxload[r] = ml - load
                    rload[r] -= a * rate
                else:
                    maxload[r] = 0.0
                    rload[r] = 0.0
                    self.busy_time[r] += now - busy_since[r]
            ended += 1
            finished.append(f)
        self.active_count += len(seeds) - ended
        for r in touched:
            seeds.extend(res_flows[r])
        comp = self._recompute(seeds, now, low) if seeds else ()
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

    def _recompute(self, seeds, now: float, low: float = 0.0) -> list:
        maxload, res_flows, satl = self.maxload, self.res_flows, self._sat
        if self.active_count > _LOCAL_MIN:
            # many active flows: re-solve locally, growing the set until the max-min
            # conditions hold everywhere around it (exact; see _local_rates)
            local = self._local_rates(seeds, now)
            if local is not None:
                return local
            comp, sat = None, None
        else:
            comp = []
            seen_res = set()
            sat = []
            seen = {f for f in seeds if f.active}
            stack = list(seen)
            while stack:
                f = stack.pop()
                comp.append(f)
                for r in f.res:
                    if r in seen_res:
                        continue
                    seen_res.add(r)
                    if maxload[r] > satl[r]:
                        sat.append(r)
                        new = [g for g in res_flows[r] if g not in seen]
                        if new:
                            seen.update(new)
                            stack.extend(new)
        if comp is None:
            comp = list(self._active)  # activation order: deterministic
            self.recomputations += 1
            new_rates, loads = self._solve_all(comp, low)
            self._apply(comp, new_rates, now, loads)
            return comp
        if not comp:
            return comp
        # a fixed order (flows by creation, resources by index) keeps float sums, and so
        # results, bit-identical from run to run (sets iterate in memory-address order)
        comp.sort(key=_by_seq)
        if sat:
            sat.sort()
        self.recomputations += 1
        if len(comp) == 1 or sat == []:
            new_rates = [f.maxrate for f in comp]
        elif len(comp) > _VECTOR_INCIDENCE:
            new_rates = self._solve_vectorized(comp)
        else:
            new_rates = self._solve(comp, sat, [self.cap[r] for r in sat])
        self._apply(comp, new_rates, now)
        return comp

    @staticmethod
    def _solve(comp, sat, capacities) -> list:
        """Max-min rates of ``comp`` (sorted) over resources ``sat`` (sorted) with the
        given capacities (one per resource of ``sat``)."""
        idx = {r: j for j, r in enumerate(sat)}
        fi, rj, av = [], [], []
        for i, f in enumerate(comp):
            for r, a in zip(f.res, f.coef):
                j = idx.get(r)
                if j is not None:
                    fi.append(i)
                    rj.append(j)
                    av.append(a)
        return max_min_rates([f.weight for f in comp], [f.maxrate for f in comp], fi, rj, av, capacities).tolist()

    def _apply(self, comp, new_rates, now: float, loads=None) -> None:
        """Give ``comp`` its new rates; reschedule the completions of those that changed.

        A flow's remaining bytes are brought up to ``now`` only when its rate changes.
        ``loads``: the new load of every resource, when ``comp`` is all active flows."""
        done, seq, heappush = self._done, self._seq, heapq.heappush
        rload = self.load
        for f, rate in zip(comp, new_rates):
            old = f.rate
            if rate == old:
                continue
            if old > 0:
                f.remaining -= old * (now - f.t_last)
                if loads is None:
                    d = rate - old
                    for r, a in zip(f.res, f.coef):
                        rload[r] += a * d
            elif loads is None:
                for r, a in zip(f.res, f.coef):
                    rload[r] += a * rate
            f.t_last = now
            f.rate = rate
            f.version += 1
            rem = f.remaining if f.remaining > 0 else 0.0
            heappush(done, (now + rem / rate, next(seq), f, f.version))
        if len(done) > 4 * len(self._active) + 4096:
            # superseded completions pile up under heavy contention: drop them
            self._done = done = [e for e in done if e[3] == e[2].version and e[2].active]
            heapq.heapify(done)
        if loads is not None:
            self.load = loads.tolist()
        if self.on_rates is not None:
            self.on_rates(now, comp)

    def _local_rates(self, seeds, now: float):
        """Re-solve only around ``seeds`` (flows that started, or that shared a saturable
        resource with flows that ended), keeping every other flow's rate.

        The max-min fair allocation is the unique feasible one in which every flow is at
        its bound or has a *bottleneck*: a saturated resource on which no flow has a
        higher weighted level (rate / weight). The set ``S`` is solved by progressive
        filling on the capacities left by the flows outside it; then every flow of ``S``
        and every flow sharing a resource with ``S`` is checked for a bottleneck. Flows
        that fail join ``S`` (with the outside flows of their saturated resources) and
        ``S`` is solved again. Flows not sharing a resource with ``S`` keep their
        bottlenecks unchanged. Returns the re-solved flows, or ``None`` when ``S`` grew
        past ``_BIG_COMPONENT`` flows (the caller then solves all active flows).
        """
        cap, maxload, satl, res_flows = self.cap, self.maxload, self._sat, self.res_flows
        S = {f: None for f in sorted({f for f in seeds if f.active}, key=_by_seq)}
        if not S:
            return []
        if len(S) > _LOCAL_MAX // 2:
            return None
        tol_lo = 1.0 - _CHECK_TOL
        rload, near = self.load, self._near
        while True:
            if len(S) > _LOCAL_MAX:
                return None
            comp = sorted(S, key=_by_seq)
            # capacities left by the flows outside S, on the resources S could saturate
            mine = {}
            for f in comp:
                x = f.rate
                for r, a in zip(f.res, f.coef):
                    mine[r] = mine.get(r, 0.0) + a * x
            sres = sorted(r for r in mine if maxload[r] > satl[r])
            if sres:
                resid = []
                for r in sres:
                    c = cap[r] - (rload[r] - mine[r])
                    resid.append(c if c > 0.0 else 0.0)
                rates = self._solve(comp, sres, resid)
            else:
                rates = [f.maxrate for f in comp]
            new = dict(zip(comp, rates))
            after = {}
            for f, x in zip(comp, rates):
                for r, a in zip(f.res, f.coef):
                    after[r] = after.get(r, 0.0) + a * x
            # resources of S that are (or were) saturated: their other flows are checked
            tight = [r for r in sres if rload[r] >= near[r] or rload[r] - mine[r] + after[r] >= near[r]]
            state = {}

            def res_state(r):
                """(saturated, highest level x (1 - tol)) of resource r with the new rates."""
                st = state.get(r)
                if st is None:
                    m = mine.get(r)
                    approx = rload[r] if m is None else rload[r] - m + after[r]
                    if approx < near[r]:
                        st = state[r] = (False, 0.0)
                        return st
                    load = 0.0
                    top = 0.0
                    for g in res_flows[r]:
                        x = new.get(g)
                        if x is None:
                            x = g.rate
                        load += g.path.coef_of[r] * x
                        lvl = x / g.weight
                        if lvl > top:
                            top = lvl
                    st = state[r] = (load >= cap[r] * tol_lo, top * tol_lo)
                return st

            grow = []
            boundary = {}
            for r in tight:
                for g in res_flows[r]:
                    if g not in S:
                        boundary[g] = None
            for group, inside in ((comp, True), (boundary, False)):
                for f in group:
                    x = new[f] if inside else f.rate
                    if x >= f.maxrate * tol_lo:
                        continue
                    lvl = x / f.weight
                    for r in f.res:
                        if maxload[r] > satl[r]:
                            saturated, top = res_state(r)
                            if saturated and lvl >= top:
                                break
                    else:
                        if inside:
                            for r in f.res:
                                if maxload[r] > satl[r] and res_state(r)[0]:
                                    grow.extend(g for g in res_flows[r] if g not in S)
                        else:
                            grow.append(f)
            if not grow:
                break
            for g in sorted(grow, key=_by_seq):
                S[g] = None
        self.recomputations += 1
        self._apply(comp, rates, now)
        return comp

    def _incidence(self, comp):
        """(flow index, resource, coefficient) arrays of ``comp``, from per-path arrays."""
        paths = [f.path for f in comp]
        rall = np.concatenate([p.res_arr for p in paths])
        aall = np.concatenate([p.coef_arr for p in paths])
        lens = np.fromiter((p.nres for p in paths), dtype=np.intp, count=len(paths))
        fall = np.repeat(np.arange(len(comp)), lens)
        return paths, fall, rall, aall

    def _solve_vectorized(self, comp) -> list:
        """Max-min rates of ``comp`` with the incidence built by NumPy from per-path arrays."""
        paths, fall, rall, aall = self._incidence(comp)
        keep = np.asarray(self.maxload)[rall] > np.asarray(self._sat)[rall]
        uniq, inv = np.unique(rall[keep], return_inverse=True)
        return max_min_rates(
            np.fromiter((p.weight for p in paths), dtype=float, count=len(comp)),
            np.fromiter((p.maxrate for p in paths), dtype=float, count=len(comp)),
            fall[keep], inv, aall[keep], self._cap_arr[uniq],
        ).tolist()

    def _active_arrays(self, comp):
        """Weights, bounds and incidence of all active flows ``comp`` (activation order),
        updated from the previous call's arrays: survivors are kept, new flows appended."""
        c = self._bulk
        if c is None:
            paths, fall, rall, aall = self._incidence(comp)
            w = np.fromiter((p.weight for p in paths), dtype=float, count=len(comp))
            b = np.fromiter((p.maxrate for p in paths), dtype=float, count=len(comp))
            nres = np.fromiter((p.nres for p in paths), dtype=np.intp, count=len(comp))
        else:
            flows, w, b, nres, rall, aall = c
            alive = np.fromiter((f.active for f in flows), dtype=bool, count=len(flows))
            n_old = int(alive.sum())
            added = comp[n_old:]
            e_alive = np.repeat(alive, nres)
            rall, aall = rall[e_alive], aall[e_alive]
            w, b, nres = w[alive], b[alive], nres[alive]
            if added:
                paths = [f.path for f in added]
                rall = np.concatenate([rall] + [p.res_arr for p in paths])
                aall = np.concatenate([aall] + [p.coef_arr for p in paths])
                w = np.concatenate((w, [p.weight for p in paths]))
                b = np.concatenate((b, [p.maxrate for p in paths]))
                nres = np.concatenate((nres, np.array([p.nres for p in paths], dtype=np.intp)))
            fall = np.repeat(np.arange(len(comp)), nres)
        self._bulk = (comp, w, b, nres, rall, aall)
        return w, b, fall, rall, aall

    def _solve_all(self, comp, low: float):
        """Max-min rates of all active flows ``comp``, and the resulting resource loads.

        Flows whose level (rate / weight) is below ``cutoff`` keep their rates: removing
        flows whose lowest level is ``low`` cannot change any lower level (progressive
        filling reaches those levels through the same saturations), and adding a flow
        cannot change levels below the lowest level that flow can get (its bound, or
        capacity / total weight on one of its resources). The others are solved by
        progressive filling on the capacity the kept flows leave.
        """
        m = len(comp)
        w, b, fall, rall, aall = self._active_arrays(comp)
        old = np.fromiter((f.rate for f in comp), dtype=float, count=m)
        capv = self._cap_arr
        keep = np.asarray(self.maxload)[rall] > np.asarray(self._sat)[rall]
        fresh = old == 0.0
        cutoff = low
        if fresh.any():
            fk, rk = fall[keep], rall[keep]
            wsum = np.bincount(rk, weights=aall[keep] * w[fk], minlength=len(capv))
            nk = fresh[fk]
            floor = (b / w)[fresh].min()
            if nk.any():
                floor = min(floor, (capv[rk[nk]] / wsum[rk[nk]]).min())
            cutoff = min(cutoff, floor)
        live = ~((old / w < cutoff * (1.0 - _CUTOFF_TOL)) & ~fresh)
        new = old.copy()
        if live.all():
            uniq, inv = np.unique(rall[keep], return_inverse=True)
            new = max_min_rates(w, b, fall[keep], inv, aall[keep], capv[uniq])
        elif live.any():
            el = live[fall]
            ek = keep & el
            uniq, inv = np.unique(rall[ek], return_inverse=True)
            frozen = keep & ~el
            used = np.bincount(rall[frozen], weights=aall[frozen] * old[fall[frozen]], minlength=len(capv))
            resid = np.maximum(capv[uniq] - used[uniq], 0.0)
            lidx = np.cumsum(live) - 1
            new[live] = max_min_rates(w[live], b[live], lidx[fall[ek]], inv, aall[ek], resid)
        loads = np.bincount(rall, weights=aall * new[fall], minlength=len(capv))
        return new.tolist(), loads

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
