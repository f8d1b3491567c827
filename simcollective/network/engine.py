"""The flow-level network engine: latency first, then (weighted) max-min fair sharing.

Each message is a :class:`Flow` over a :class:`~simcollective.network.routing.Route`. A flow
first waits its route latency (times the model's latency factor) without using
bandwidth, then joins the set of active flows. Rates follow max-min fairness (progressive
filling), weighted by 1/penalty under the ``penalty`` sharing (the ``cm02``/``smpi``
profiles), each flow bounded by its own route capacity and TCP window. Cross traffic puts
a fraction of a flow's rate on the reverse route's resources. The figures are the
:class:`~simcollective.network.model.NetworkModel`'s.

Design (the rates are always the exact max-min solution; only the work to find it
changes): everything due at the same instant is processed in one wake-up
(:mod:`.calendar`), followed by one rate update, in one of two modes:

* *per-flow*: with few active or coupled flows, a new flow alone on resources that
  cannot saturate takes its bound, and otherwise the connected component (flows linked
  through saturable resources) of the flows that started, or of the flows on saturated
  resources that flows left, is solved by the compiled filling (:mod:`.kernels`);
* *arrays*: past :attr:`Tuning.bulk_min` active flows with a component past
  :attr:`Tuning.walk_limit` coupled flows, all active flows move into arrays kept between
  events (:mod:`.bulk`, :mod:`.array_mode`), and each wake-up is one compiled call: the
  flows that completed are found by their completion times, and only what a change can
  reach is re-solved (flows below the lowest level it can reach keep their rates); the
  per-resource bookkeeping (live flows, busy time) is in the arrays too.

Route parameters (with repeated resources) are in :mod:`.paths`, the component walk in
:mod:`.component`, thresholds in :mod:`.tuning`, observers in :mod:`.stats`. Observers
never change which mode or solve runs.
"""

from __future__ import annotations

from .calendar import Calendar, SimEnvironment
from .component import by_seq as _by_seq
from .component import component, solve_component
from .array_mode import ArrayModeMixin
from .faults import FaultsMixin
from .model import NetworkModel
from .paths import Flow, PathsMixin, PathTable
from .routing import Route, Router
from .stats import LinkStats, LinkStatsMixin, record_series
from .tuning import DEFAULT_TUNING, Tuning

__all__ = ["SimEnvironment", "Flow", "Network", "LinkStats", "max_min_rates", "Tuning"]

_INF = float("inf")


def __getattr__(name):
    # numba (about 0.4 s to import) loads only when a run has solved enough to need the
    # compiled kernels (Tuning.jit_after): small runs never pay for it
    if name == "max_min_rates":
        from .filling import max_min_rates

        return max_min_rates
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Network(PathsMixin, LinkStatsMixin, ArrayModeMixin, FaultsMixin):
    """Flows over a hardware graph inside a SimPy environment.

    Parameters
    ----------
    env : SimEnvironment
    graph : networkx.DiGraph
        A validated hardware graph (see :mod:`topologies.schema`).
    model : simcollective.network.model.NetworkModel
        The ``[network]`` figures of the run's profile.
    routing : {"first", "hash", "dest", "study"}
    tuning : Tuning, optional
        Engine thresholds (:class:`~simcollective.network.tuning.Tuning`).
    """

    def __init__(self, env: SimEnvironment, graph, model: NetworkModel, routing: str = "first",
                 router: Router | None = None, tuning: Tuning | None = None):
        self.env = env
        self.model = model
        self.tuning = tuning = tuning if tuning is not None else DEFAULT_TUNING
        self.router = router if router is not None else Router(graph, routing)
        n = len(self.router.capacity)
        self.cap = list(self.router.capacity)
        # flows per resource, as insertion-ordered dicts (deterministic iteration)
        self.res_flows = [{} for _ in range(n)]
        self.maxload = [0.0] * n
        self.busy_since = [0.0] * n
        self.busy_time = [0.0] * n
        self._sat = [c * (1 + tuning.eps) for c in self.cap]  # maxload above this can bind
        # load per resource (sum of coefficient x rate) in per-flow mode: a guide for what
        # to re-solve (a resource below _near carries no bottleneck)
        self.load = [0.0] * n
        self._near = [c * (1 - tuning.near_tol) for c in self.cap]
        self._active: dict = {}  # active flows in activation order (dict as ordered set)
        self._paths: dict = {}
        self._table = PathTable(n)
        self._bulk = None  # the array store (bulk.BulkStore) while in array mode
        self._next = _INF  # its next completion time
        self.flows_started = 0
        self.flows_completed = 0
        self.bytes_sent = 0
        self.recomputations = 0
        # rate updates per way found: new flows alone at their bound, component solve,
        # array store solve, array store with new flows at their bound; moves in and out
        self.modes = dict.fromkeys(("bounds", "component", "arrays", "array bounds", "enter", "leave"), 0)
        self.active_count = 0
        # the model's bandwidth factor when it does not depend on the size (the latency
        # factor's is in each path's ``lat``)
        self._bw_k = model.bw_factors[0] if len(model.bw_factors) == 1 else None
        self._bw_bound = model.bandwidth_factor_mode == "bound"
        self.on_rates = None  # optional hook(now, flows) for tests
        self.series = None    # {resource: [(t, load)]} when enabled (traces)

    @property
    def env(self):
        return self._env

    @env.setter
    def env(self, env) -> None:
        self._env = env
        self._cal = Calendar(env, self._on_wakeup)
        self._buckets = self._cal.buckets  # (never rebound: transfer appends to it directly)

    # -- public API -------------------------------------------------------------------
    def route(self, src, dst, via=None) -> Route:
        return self.router.route(src, dst, via)

    def transfer(self, src, dst, size: int, callback, tag=None, via=None) -> Flow:
        """Start sending ``size`` bytes from node ``src`` to node ``dst`` now (through the
        nodes ``via``, e.g. a channel's NICs; None: the shortest path).

        ``callback(flow)`` runs when the last byte arrives (``flow.t_end``).
        """
        now = self._env.now
        if self._bw_bound:  # f_bw bounds the flow's rate; data advances at the rate itself
            path = self._bound_path(src, dst, size, via)
            eff = float(size) if size > 0 else 0.0
        else:
            path = (self._paths.get((src, dst) if via is None else (src, dst, via))
                    or self.path_parameters(src, dst, via))
            if size > 0:
                bw_k = self._bw_k
                eff = size / (bw_k if bw_k is not None else self.model.bandwidth_factor(size))
            else:
                eff = 0.0
        latency = path.lat  # (scaled by the latency factor when it does not depend on the size)
        if latency is None:
            latency = path.route.latency
            if latency:
                latency *= self.model.latency_factor(size)
        f = Flow()  # (one store per field: a tuple assignment would build and unpack a tuple)
        f.path = path
        f.latency = latency
        f.eff = f.remaining = eff
        f.rate = 0.0
        f.src = src
        f.dst = dst
        f.size = size
        f.callback = callback
        f.tag = tag
        f.t_post = now
        f.t_start = f.t_end = None
        f.version = 0
        f.active = False
        f.slot = -1
        f.seq = seq = self.flows_started
        self.flows_started = seq + 1
        path.bytes += size
        self.bytes_sent += size
        when = now + latency
        bucket = self._buckets.get(when)
        if bucket is None:
            bucket = self._cal.new_bucket(when)
        bucket.append(f)
        return f

    def rate_of(self, f) -> float:
        """The current rate of flow ``f`` (in either mode)."""
        return float(self._bulk.sf[0, f.slot]) if f.slot >= 0 and self._bulk is not None else f.rate

    # -- event processing: a wake-up is a few named steps ---------------------------------
    def _on_wakeup(self, _event) -> None:
        now = self._env.now
        cal = self._cal
        cal.wakeups.discard(now)
        finished = []
        if self._bulk is not None:
            seeds = self._activate_bulk(now, finished)
            comp = self._bulk_step(now, seeds, finished)
        else:
            seeds, lone, ordered = self._activate(now, finished)
            comp = self._per_flow_step(now, seeds, lone, finished, ordered)
        if self.series is not None:
            self._record(now, (seeds, finished, comp))
        self.flows_completed += len(finished)
        for f in finished:
            f.t_end = now
            f.callback(f)
        if self._bulk is None:
            cal.wake_next_end()
        elif self._next < _INF:
            cal.wake_at(self._next)

    def _activate(self, now: float, finished: list) -> tuple:
        """Flows due to start now join the active flows; empty ones finish. Returns the
        new flows, whether none is on a resource that can saturate, and whether they are in
        creation order (they are within one due time: a bucket is filled in creation order)."""
        res_flows, maxload, busy_since, active, sat = self.res_flows, self.maxload, self.busy_since, self._active, self._sat
        seeds = []
        lone = True
        buckets = self._cal.pop_activations(now)
        for bucket in buckets:
            for f in bucket:
                f.t_start = f.t_last = now
                path = f.path
                if f.eff <= 0 or not path.res:
                    finished.append(f)
                    continue
                f.active = True
                active[f] = None
                for r, _, load in path.load:
                    s = res_flows[r]
                    if not s:
                        busy_since[r] = now
                    s[f] = None
                    ml = maxload[r] = maxload[r] + load
                    if ml > sat[r]:
                        lone = False
                seeds.append(f)
        self.active_count += len(seeds)
        return seeds, lone, len(buckets) == 1

    def _record(self, now: float, groups) -> None:
        """Observer: the load series of the resources whose flows changed."""
        bulk = self._bulk
        record_series(self.series, self.res_flows, now, groups, bulk.loads_on if bulk is not None else None)

    def _per_flow_step(self, now: float, seeds: list, lone: bool, finished: list, ordered: bool) -> list:
        """Completions from the calendar, then the rate update of what they and the new
        flows reach (the component solve, or the move into arrays)."""
        touched = set()
        done = self._cal.pop_ends(now)
        active, res_flows, maxload, rload, sat, near = (self._active, self.res_flows, self.maxload, self.load,
                                                        self._sat, self._near)
        busy_time, busy_since = self.busy_time, self.busy_since
        for f in done:  # (this runs for every message)
            f.active = False
            del active[f]
            rate = f.rate
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
                    busy_time[r] += now - busy_since[r]
        finished += done
        self.active_count -= len(done)
        if touched:
            seeds = seeds + [g for r in sorted(touched) for g in self.res_flows[r]]
        if not seeds:
            return []
        if not touched and lone:
            # new flows only, none on a resource that can saturate: each takes its bound
            comp = seeds if ordered or len(seeds) < 2 else sorted(seeds, key=_by_seq)
            self.recomputations += 1
            self.modes["bounds"] += 1
            self._apply_bounds(comp, now)
            return comp
        # the lowest level among the flows that left (only the move into arrays needs it)
        low = min((f.rate / f.path.weight for f in done), default=_INF)
        return self._recompute(seeds, now, low)

    def _recompute(self, seeds, now: float, low: float) -> list:
        """Solve the component of ``seeds`` exactly, or move all flows into arrays."""
        limit = self.tuning.walk_limit if self.active_count > self.tuning.bulk_min else None
        comp, sat = component(seeds, self.maxload, self._sat, self.res_flows, limit)
        if comp is None:
            return self._enter_bulk(now, low)
        if not comp:
            return comp
        self.recomputations += 1
        self.modes["component"] += 1
        if len(comp) == 1 or not sat:
            new_rates = [f.path.maxrate for f in comp]
        else:
            new_rates = solve_component(comp, sat, self.cap, self.tuning.level_tol, self.tuning.jit_after)
        self._apply(comp, new_rates, now)
        return comp

    def _apply_bounds(self, comp, now: float) -> None:
        """:meth:`_apply` for new flows (rate 0, bytes all remaining, ``t_last`` now)
        that take their bounds (the same operations)."""
        rload = self.load
        whens = []
        when = whens.append
        for f in comp:
            path = f.path
            rate = path.maxrate
            for r, _, load in path.load:  # (load: a x maxrate)
                rload[r] += load
            f.rate = rate
            f.version = 1  # (new flows are at version 0)
            when(now + f.remaining / rate)
        self._cal.schedule_ends(comp, whens)
        self._cal.compact(len(self._active))
        if self.on_rates is not None:
            self.on_rates(now, comp)

    def _apply(self, comp, new_rates, now: float) -> None:
        """Give ``comp`` its new rates; reschedule the completions of those that changed.

        A flow's remaining bytes are brought up to ``now`` only when its rate changes."""
        schedule_end = self._cal.schedule_end
        rload = self.load
        for f, rate in zip(comp, new_rates):
            old = f.rate
            if rate == old:
                continue
            path = f.path
            if old > 0:
                f.remaining -= old * (now - f.t_last)
                d = rate - old
                for r, a in zip(path.res, path.coef):
                    rload[r] += a * d
            else:
                for r, a in zip(path.res, path.coef):
                    rload[r] += a * rate
            f.t_last = now
            f.rate = rate
            f.version += 1
            rem = f.remaining if f.remaining > 0 else 0.0
            schedule_end(f, now + rem / rate)
        self._cal.compact(len(self._active))
        if self.on_rates is not None:
            self.on_rates(now, comp)
