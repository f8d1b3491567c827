"""The flow-level network engine: latency first, then (weighted) max-min fair sharing.

Each message is a :class:`Flow` over a :class:`~simcollective.network.routing.Route`. A flow
first waits its route latency (times the profile's latency factor) without using
bandwidth, then joins the set of active flows. Rates follow max-min fairness (progressive
filling), weighted by 1/penalty under the ``penalty`` sharing of the ``cm02``/``smpi``
profiles, each flow bounded by its own route capacity and TCP window. Cross traffic puts a
fraction of a flow's rate on the reverse route's resources.

Performance design (the rates are always the exact max-min solution; only the work to
find it changes):

* one SimPy wake-up per distinct due time, not one per flow: activations and completions
  are grouped by their exact due time, with a heap of the distinct times (completion
  entries superseded by a rate change are skipped lazily, and only the earliest valid
  completion has a wake-up); everything due at the same instant is processed together,
  followed by a single rate recomputation (batching);
* rates are recomputed only for the connected component (flows linked through shared
  *saturable* resources) of the flows that started, or of the flows on *saturated*
  resources that flows left; a resource whose capacity exceeds the sum of the maximum
  rates of its flows can never bind and does not connect flows (so the huge
  switch-crossing capacities do not merge everything into one component); a flow alone
  takes its bound directly, a component uses progressive filling (NumPy);
* with many active flows, a big component is re-solved *locally* instead: the changed
  flows and their neighbours are solved on the capacity the others leave, and the set
  grows until every flow around it still has a bottleneck (the characterization of the
  max-min allocation; :meth:`Network._local_rates`);
* past that, all active flows move into NumPy arrays (*bulk mode*, :class:`_Bulk`):
  completions are found by comparing completion times with the clock, a rate change
  rescales the completion time, and a recomputation is a few vectorized passes:
  flows below the lowest level a change can reach keep their rates (a *cutoff*), a new
  flow that fits on unsaturated resources takes its bound without a solve, large
  solves start from the resources loaded near capacity and add any other that overflows,
  and a solve may use *parallel* filling, which fixes all independent bottlenecks (the
  racks of a cluster, say) in the same pass instead of one level per pass, when the
  recent solves show that it saves passes;
* a flow whose rate did not change keeps its scheduled completion.
"""

from __future__ import annotations

import heapq
import operator
from dataclasses import dataclass

import numpy as np
import simpy
from simpy.core import NORMAL

from .routing import Route, Router

__all__ = ["SimEnvironment", "Flow", "Network", "LinkStats", "max_min_rates"]

_EPS = 1e-9          # relative slack before a resource counts as saturable
_LEVEL_TOL = 1e-12   # relative tolerance when picking bottlenecks of equal level

_VECTOR_INCIDENCE = 48  # components larger than this build their incidence with NumPy
_LOCAL_MIN = 64      # with more active flows than this, big components are re-solved locally
_BFS_LIMIT = 128     # ... "big": more coupled flows than this
_LOCAL_MAX = 128     # local re-solving gives up (for all active flows) past this many flows
_CHECK_TOL = 1e-10   # relative tolerance of the bottleneck check of local re-solving
_NEAR_TOL = 1e-6     # a resource loaded above (1 - this) x capacity may be saturated
_CUTOFF_TOL = 1e-9   # flows this close below the cutoff level are re-solved too
_PRUNE_MIN = 1000    # bulk solves with more saturable entries first try the loaded resources
_FOCUS = 0.9         # ... "loaded": at this fraction of capacity or more
_PARALLEL_MAX = 1200  # bulk solves with fewer entries may use the parallel filling
_PROBE = 32          # ... and try the filling not chosen every this many solves
_REFRESH = 1024      # bulk mode recomputes its per-resource sums every this many solves
_BULK_OFF = 48       # bulk mode ends when fewer active flows than this remain


_by_seq = operator.attrgetter("seq")
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
        "src", "dst", "size", "path", "latency", "eff", "remaining", "rate", "t_last", "slot",
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
    rates = np.zeros(w.shape[0])
    if w.shape[0]:
        _max_min_sequential(
            w, np.asarray(bounds, dtype=float), np.asarray(entries_flow, dtype=np.intp),
            np.asarray(entries_res, dtype=np.intp), np.asarray(entries_coef, dtype=float),
            np.array(capacities, dtype=float), rates,
        )
    return rates


def _max_min_sequential(w, b, fi, rj, av, c, rates) -> int:
    """Progressive filling, one level per pass: raise all unfixed flows together until
    the lowest level (a resource's capacity left / weight of its unfixed flows, or a
    flow's bound / weight) is reached, fix the flows it stops, repeat. Adds the rates to
    ``rates``, uses up ``c``; returns the number of passes. Levels within a relative
    ``_LEVEL_TOL`` count as equal. The entries of fixed flows are dropped as they fix."""
    m, n = w.shape[0], c.shape[0]
    fl = b / w
    aw = av * w[fi]
    left = m
    passes = 0
    lowest = np.fmin.reduce
    with np.errstate(divide="ignore", invalid="ignore"):  # resources left without flows
        while True:
            passes += 1
            level = c / np.bincount(rj, weights=aw, minlength=n)
            lam = lowest(fl)  # (no NaN here; np.fmin.reduce skips the array method's wrapper)
            if n:
                lam = min(lam, lowest(level))  # (fmin skips the NaN of 0 / 0)
            if lam == _INF:
                break
            thresh = lam * (1.0 + _LEVEL_TOL)
            fix = fl <= thresh
            fix[fi[level[rj] <= thresh]] = True
            got = np.minimum(w * lam, b)
            got *= fix
            rates += got
            left -= int(np.count_nonzero(fix))
            if left == 0:
                break
            # (the entries of flows not fixed add exact zeros: the same sums as over the
            # fixed entries alone, without three boolean selections)
            c -= np.bincount(rj, weights=av * got[fi], minlength=n)
            np.maximum(c, 0.0, out=c)
            fl[fix] = _INF
            # integer indices once, then four gathers (each boolean selection would
            # scan the mask again: about four times slower at these sizes)
            e_keep = (fix[fi] == False).nonzero()[0]  # noqa: E712 (elementwise)
            fi, rj, av, aw = fi[e_keep], rj[e_keep], av[e_keep], aw[e_keep]
    return passes


def _max_min_parallel(w, b, fi, rj, av, c, rates) -> int:
    """:func:`_max_min_sequential` with *parallel* passes (``c`` is left as it is).

    Sequential filling fixes one level per pass: the lowest. Here a pass fixes every
    resource whose level is no higher than the lowest level of each of its flows
    elsewhere, and with it all its flows. This is exact: fixing flows at or below a
    resource's level never lowers that level, so such a resource saturates at its present
    level whatever is fixed before it, and its flows cannot be fixed earlier (each of
    their other resources, and their bounds, are at that level or above). Independent
    bottlenecks (the racks of a cluster, say) are then fixed in the same pass, not one
    per pass. Each flow's bound is a private resource (of capacity the bound,
    coefficient 1), its entry after all the others; a fixed flow's entries move to a
    dummy resource ``n`` of infinite capacity. A pass costs about twice a sequential
    one, so this pays when it saves more than half the passes.
    """
    m, n = w.shape[0], c.shape[0]
    k = fi.shape[0]
    nn = n + 1 + m
    ar = np.arange(m)
    F = np.concatenate((fi, ar))
    R = np.concatenate((rj, ar + (n + 1)))
    A = np.empty(k + m)  # (np.ones, np.full: Python wrappers around empty + fill)
    A[:k] = av
    A[k:].fill(1.0)
    cap = np.concatenate((c, (_INF,), b))
    aw = A * w[F]
    fix = np.empty(m, dtype=bool)
    unfixed = np.empty(m, dtype=bool)
    unfixed.fill(True)
    tol = 1.0 + _LEVEL_TOL
    left = m
    passes = 0
    with np.errstate(divide="ignore", invalid="ignore"):  # resources left without flows
        while True:
            passes += 1
            level = cap / np.bincount(R, weights=aw, minlength=nn)
            entry_level = level[R]
            lowest = entry_level[k:].copy()  # each flow's bound level, then its lowest level
            np.minimum.at(lowest, fi, entry_level[:k])
            below = lowest[F]
            below *= tol
            # a resource binds now unless one of its flows has a lower level elsewhere
            floor = np.empty(nn)
            floor.fill(_INF)
            np.minimum.at(floor, R, below)
            fix.fill(False)
            fix[F[(entry_level <= floor[R]).nonzero()[0]]] = True
            fix &= unfixed
            got = np.minimum(w * lowest, b)  # (a bound exactly, not w x (bound / w))
            got *= fix
            rates += got
            left -= int(np.count_nonzero(fix))
            if left == 0:
                break
            cap -= np.bincount(R, weights=A * got[F], minlength=nn)
            np.maximum(cap, 0.0, out=cap)
            cap[n] = _INF
            e_fix = fix[F]
            np.putmask(aw, e_fix, 0.0)  # (faster than aw[e_fix] = 0.0)
            np.putmask(R, e_fix, n)
            unfixed[fix] = False
    return passes


@dataclass
class LinkStats:
    """Per-resource totals after a run."""

    name: str
    link_type: str
    capacity: float
    bytes: int
    busy_time: float


class _Bulk:
    """All active flows as NumPy arrays (one slot per flow), used when many flows are
    active: a recomputation is then a handful of vectorized passes over all of them.

    Per slot: weight, rate bound, current rate, completion time (``inf`` when not yet
    rated or free), bytes to send when first rated, and the resource row of the flow's
    path padded with a dummy resource of infinite capacity. A rate change moves the
    completion time to ``now + (t_done - now) x old / new`` (the remaining bytes at the
    new rate). Free slots are reused lowest first, so the slot order, and with it every
    float sum, is the same from run to run.

    Per resource, three sums over the live flows are kept up to date (and recomputed
    from scratch every ``_REFRESH`` solves, so rounding cannot drift): the sum of rate
    bounds (which resources can saturate), of weights (the lowest level a new flow can
    get) and of rates (the load: what the flows a solve keeps leave to the others).
    """

    def __init__(self, capacities: np.ndarray, width: int):
        n = len(capacities)
        self.n = n
        self.capx = np.append(capacities, _INF)
        self.satx = self.capx * (1 + _EPS)
        self.capf = self.capx * _FOCUS              # "loaded near capacity" from here
        self.capc = self.capx * (1.0 + _CHECK_TOL)  # overflowing past here
        self._F = np.zeros(0, dtype=np.intp)        # flow index of each incidence entry
        self.K = 0
        self.D = max(1, width)
        self.flows: list = []
        self.free: list = []
        self.alive = np.zeros(0, dtype=bool)
        self.w = np.ones(0)
        self.b = np.zeros(0)
        self.rate = np.zeros(0)
        self.tdone = np.zeros(0)
        self.eff = np.zeros(0)
        self.inc_r = np.zeros((0, self.D), dtype=np.intp)
        self.inc_a = np.zeros((0, self.D))
        self._mark = np.zeros(n + 1, dtype=bool)    # scratch of solve()
        self._lookup = np.zeros(n + 1, dtype=np.intp)
        self.load = np.zeros(n + 1)   # sum of coefficient x rate per resource
        self.maxl = np.zeros(n + 1)   # sum of coefficient x rate bound
        self.wsum = np.zeros(n + 1)   # sum of coefficient x weight
        self.solves = 0
        self.fills = 0
        self.passes = [None, None]  # running mean passes of the sequential, parallel filling

    def _grow(self) -> None:
        k = max(256, 2 * self.K)
        extra = k - self.K
        self.alive = np.concatenate((self.alive, np.zeros(extra, dtype=bool)))
        self.w = np.concatenate((self.w, np.ones(extra)))
        self.b = np.concatenate((self.b, np.zeros(extra)))
        self.rate = np.concatenate((self.rate, np.zeros(extra)))
        self.tdone = np.concatenate((self.tdone, np.full(extra, _INF)))
        self.eff = np.concatenate((self.eff, np.zeros(extra)))
        self.inc_r = np.concatenate((self.inc_r, np.full((extra, self.D), self.n, dtype=np.intp)))
        self.inc_a = np.concatenate((self.inc_a, np.zeros((extra, self.D))))
        self._F = np.repeat(np.arange(k), self.D)
        self.flows.extend([None] * extra)
        for slot in range(self.K, k):
            heapq.heappush(self.free, slot)
        self.K = k

    def _widen(self, d: int) -> None:
        extra = d - self.D
        self.inc_r = np.concatenate((self.inc_r, np.full((self.K, extra), self.n, dtype=np.intp)), axis=1)
        self.inc_a = np.concatenate((self.inc_a, np.zeros((self.K, extra))), axis=1)
        self.D = d
        self._F = np.repeat(np.arange(self.K), d)

    def add(self, f, rate: float, tdone: float) -> None:
        if not self.free:
            self._grow()
        slot = heapq.heappop(self.free)
        p = f.path
        if p.nres > self.D:
            self._widen(p.nres)
        f.slot = slot
        self.flows[slot] = f
        self.alive[slot] = True
        self.w[slot] = p.weight
        self.b[slot] = p.maxrate
        self.rate[slot] = rate
        self.tdone[slot] = tdone
        self.eff[slot] = f.remaining
        row = self.inc_r[slot]
        row[:] = self.n
        row[: p.nres] = p.res_arr
        rowa = self.inc_a[slot]
        rowa[:] = 0.0
        rowa[: p.nres] = p.coef_arr
        self.maxl[p.res_arr] += p.coef_arr * p.maxrate
        self.wsum[p.res_arr] += p.coef_arr * p.weight
        if rate:
            self.load[p.res_arr] += p.coef_arr * rate

    def remove(self, slot: int) -> None:
        p = self.flows[slot].path
        self.maxl[p.res_arr] -= p.coef_arr * p.maxrate
        self.wsum[p.res_arr] -= p.coef_arr * p.weight
        rate = self.rate[slot]
        if rate:
            self.load[p.res_arr] -= p.coef_arr * rate
        self.flows[slot] = None
        self.alive[slot] = False
        self.rate[slot] = 0.0
        self.tdone[slot] = _INF
        heapq.heappush(self.free, slot)

    def due(self, now: float) -> np.ndarray:
        """Slots whose flows complete by ``now``, ascending."""
        return (self.tdone <= now).nonzero()[0]

    def next_time(self) -> float:
        return float(self.tdone.min()) if self.K else _INF

    def solve(self, now: float, low: float) -> None:
        """Max-min rates of all live flows (see ``Network._recompute``).

        Flows whose level (rate / weight) is below the cutoff keep their rates: removing
        flows whose lowest level is ``low`` cannot change any lower level (progressive
        filling reaches those levels through the same saturations), and adding a flow
        cannot change levels below the lowest level that flow can get (its bound, or
        capacity / total weight on one of its resources). The others are solved by
        progressive filling on the capacity the kept flows leave.
        """
        self.solves += 1
        if self.solves % _REFRESH == 0:
            self._refresh()
        # (masks used more than once are turned into index arrays first: a boolean
        # selection scans its mask each time and costs several integer gathers; and
        # rows of the 2-D incidence are gathered with take, three times faster than
        # fancy indexing)
        idx = self.alive.nonzero()[0]  # (np.flatnonzero costs two Python wrappers more)
        D, n1, capx = self.D, self.n + 1, self.capx
        w, b, old = self.w[idx], self.b[idx], self.rate[idx]
        sat = self.maxl > self.satx
        fresh = old == 0.0
        cutoff = low
        fi = fresh.nonzero()[0]
        fresh_any = fi.shape[0] > 0
        if fresh_any:
            Rf_all = self.inc_r.take(idx[fi], axis=0).ravel()
            Rf = Rf_all[sat[Rf_all]]
            floor = (b[fi] / w[fi]).min()
            if Rf.shape[0]:
                floor = min(floor, (capx[Rf] / self.wsum[Rf]).min())
            cutoff = min(cutoff, floor)
        live = fresh | (old / w >= cutoff * (1.0 - _CUTOFF_TOL))
        li = live.nonzero()[0]
        if li.shape[0] < live.shape[0]:
            every = False
            idx, w, b, old = idx[li], w[li], b[li], old[li]
        else:
            every = True
        m = idx.shape[0]
        if m == 0:
            return
        R = self.inc_r.take(idx, axis=0).ravel()
        A = self.inc_a.take(idx, axis=0).ravel()
        F = self._F[: m * D]  # (np.repeat(np.arange(m), D))
        ki = sat[R].nonzero()[0]
        Rk, Ak, Fk = R[ki], A[ki], F[ki]
        focus = None
        if Rk.shape[0] > _PRUNE_MIN:
            # most saturable resources do not bind: solve with those loaded near capacity
            # (and those of new flows) only, then check the others; a solution of fewer
            # constraints that satisfies them all is the max-min solution of all of them
            focus = self.load >= self.capf
            if fresh_any:
                focus[Rf_all] = True
        while True:
            if focus is None:
                Rc, Ac, Fc = Rk, Ak, Fk
            else:
                cand = focus[Rk]
                ci = cand.nonzero()[0]
                Rc, Ac, Fc = Rk[ci], Ak[ci], Fk[ci]
            # np.unique(Rc, return_inverse=True) without its sort: the resources are
            # few and bounded, so mark them, list them, and look them up
            mark = self._mark
            mark[Rc] = True
            uniq = mark.nonzero()[0]
            mark[uniq] = False
            lookup = self._lookup
            lookup[uniq] = np.arange(uniq.shape[0])
            inv = lookup[Rc]
            if every:
                resid = capx[uniq]
            else:
                # capacity left by the kept flows: the load minus what the live flows use
                mine = np.bincount(inv, weights=Ac * old[Fc], minlength=uniq.shape[0])
                resid = np.maximum(capx[uniq] - (self.load[uniq] - mine), 0.0)
            new = np.zeros(m)
            if Fc.shape[0] < _PARALLEL_MAX:
                self._fill(w, b, Fc, inv, Ac, resid, new)
            else:
                _max_min_sequential(w, b, Fc, inv, Ac, resid, new)
            if focus is None or ci.shape[0] == Rk.shape[0]:
                break
            ri = (cand == False).nonzero()[0]  # noqa: E712 (elementwise)
            Rr = Rk[ri]
            more = np.bincount(Rr, weights=Ak[ri] * (new - old)[Fk[ri]], minlength=n1)
            over = Rr[self.load[Rr] + more[Rr] > self.capc[Rr]]
            if not over.shape[0]:
                break
            focus[over] = True
        chi = (new != old).nonzero()[0]
        if chi.shape[0]:
            ch = idx[chi]
            o, x = old[chi], new[chi]
            left = self.eff[ch]
            mv = (o > 0.0).nonzero()[0]
            left[mv] = np.maximum(self.tdone[ch[mv]] - now, 0.0) * o[mv]
            self.tdone[ch] = now + left / x
            self.rate[ch] = x
            # the load moves by the changed flows alone (the others would add exact zeros)
            Rch = self.inc_r.take(ch, axis=0).ravel()
            Ach = self.inc_a.take(ch, axis=0).ravel()
            self.load += np.bincount(Rch, weights=Ach * (x - o)[self._F[: ch.shape[0] * D]], minlength=n1)

    def _fill(self, *problem) -> None:
        """Solve with the sequential or the parallel filling, whichever the recent solves
        say needs fewer passes for the cost (a parallel pass costs about two sequential
        ones); every ``_PROBE``-th solve uses the other one, to keep its figure current.
        Both give the max-min rates (to float rounding), so the choice changes only the
        time; it depends on the run alone, so results stay reproducible."""
        seq, par = self.passes
        self.fills += 1
        parallel = seq is not None and (par is None or seq > 2.0 * par + 1.0)
        if self.fills % _PROBE == 0:
            parallel = not parallel
        if parallel:
            k = _max_min_parallel(*problem)
            self.passes[1] = k if par is None else par + (k - par) * 0.125
        else:
            k = _max_min_sequential(*problem)
            self.passes[0] = k if seq is None else seq + (k - seq) * 0.125

    def _refresh(self) -> None:
        """Recompute the per-resource sums from the live flows (bounds rounding drift)."""
        idx = np.flatnonzero(self.alive)
        n1 = self.n + 1
        R = self.inc_r[idx].ravel()
        A = self.inc_a[idx].ravel()
        F = np.repeat(np.arange(idx.shape[0]), self.D)
        # (astype: NumPy's bincount of nothing is int64 even with float weights)
        self.maxl = np.bincount(R, weights=A * self.b[idx][F], minlength=n1).astype(float)
        self.wsum = np.bincount(R, weights=A * self.w[idx][F], minlength=n1).astype(float)
        self.load = np.bincount(R, weights=A * self.rate[idx][F], minlength=n1).astype(float)




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
        # completions likewise: (flow, version) entries by exact time in scheduling order,
        # superseded entries skipped lazily (so flows that end at the same instant cost a
        # list append each, not a heap operation); one SimPy wake-up per distinct due
        # time that is still the earliest
        self._buckets: dict = {}
        self._times: list = []
        self._ends: dict = {}
        self._end_times: list = []
        self._end_count = 0  # entries in _ends, superseded ones included
        self._wakeups: set = set()
        self._active: dict = {}  # active flows in activation order (dict as ordered set)
        self._paths: dict = {}
        self._bulk: _Bulk | None = None  # all active flows as arrays, when many are active
        self._width = 1  # longest resource list of a path so far
        self.flows_started = 0
        self.flows_completed = 0
        self.bytes_sent = 0
        self.recomputations = 0
        self.active_count = 0
        # the profile's latency and bandwidth factors when they do not depend on the size
        self._lat_k = profile.lat_factors[0] if len(profile.lat_factors) == 1 else None
        self._bw_k = profile.bw_factors[0] if len(profile.bw_factors) == 1 else None
        self._bw_bound = getattr(profile, "bandwidth_factor_mode", "progress") == "bound"
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
        # a route that lists a resource more than once (study routing on DGX-2) uses it
        # once per traversal: one entry with coefficient = multiplicity
        res = []
        coef = []
        pos = {}
        for r in route.resources:
            i = pos.get(r)
            if i is None:
                pos[r] = len(res)
                res.append(r)
                coef.append(1.0)
            else:
                coef[i] += 1.0
        if prof.cross_traffic > 0 and res:
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
        self._width = max(self._width, p.nres)
        return p

    def transfer(self, src, dst, size: int, callback, tag=None) -> Flow:
        """Start sending ``size`` bytes from node ``src`` to node ``dst`` now.

        ``callback(flow)`` runs when the last byte arrives (``flow.t_end``).
        """
        now = self.env.now
        prof = self.profile
        f = Flow()
        if self._bw_bound:  # f_bw bounds the flow's rate; data advances at the rate itself
            path = self._bound_path(src, dst, size)
        else:
            path = self.path_parameters(src, dst)
        f.path = path
        route = path.route
        f.res, f.coef, f.weight, f.maxrate = path.res, path.coef, path.weight, path.maxrate
        if route.latency:
            lat_k = self._lat_k
            f.latency = latency = route.latency * (lat_k if lat_k is not None else prof.latency_factor(size))
        else:
            f.latency = latency = 0.0
        if size > 0 and self._bw_bound:
            f.eff = f.remaining = float(size)
        elif size > 0:
            bw_k = self._bw_k
            f.eff = f.remaining = size / (bw_k if bw_k is not None else prof.bandwidth_factor(size))
        else:
            f.eff = f.remaining = 0.0
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

    def _bound_path(self, src, dst, size) -> "_Path":
        """Path parameters when the bandwidth factor bounds the rate (profile
        ``bandwidth_factor_mode = "bound"``, SimGrid SMPI's convention): the flow's rate
        bound is at most f_bw(size) x the route's smallest capacity; cached per factor."""
        k = self.profile.bandwidth_factor(size)
        key = (src, dst, k)
        p = self._paths.get(key)
        if p is not None:
            return p
        base = self.path_parameters(src, dst)
        if k == 1.0:
            p = base
        else:
            p = _Path()
            p.route, p.res, p.coef, p.weight, p.bytes = base.route, base.res, base.coef, base.weight, 0
            p.maxrate = maxrate = min(base.maxrate, k * base.route.capacity)
            p.load = tuple((r, a, a * maxrate) for r, a in zip(base.res, base.coef))
            p.coef_of, p.res_arr, p.coef_arr, p.nres = base.coef_of, base.res_arr, base.coef_arr, base.nres
        self._paths[key] = p
        return p

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
        times, buckets = self._times, self._buckets
        ends, end_times = self._ends, self._end_times
        heappop = heapq.heappop
        sat, maxload, res_flows, busy_since = self._sat, self.maxload, self.res_flows, self.busy_since
        rload, near, busy_time = self.load, self._near, self.busy_time
        finished = []
        seeds = []
        touched = set()
        ended = 0
        low = _INF  # lowest level (rate / weight) of the flows that ended
        bulk = self._bulk
        coupled = False  # bulk mode: whether a changed flow is on a (nearly) saturated resource
        lone = True  # whether no new flow is on a resource that can saturate
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
                    ml = maxload[r] = maxload[r] + load
                    if ml > sat[r]:
                        lone = False
                seeds.append(f)
                if bulk is not None:
                    bulk.add(f, 0.0, _INF)
        while end_times and end_times[0] <= now:
            due = ends.pop(heappop(end_times))
            self._end_count -= len(due)
            for f, version in due:
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
                        busy_time[r] += now - busy_since[r]
                ended += 1
                finished.append(f)
        if bulk is not None:
            brate, bw, bl = bulk.rate, bulk.w, bulk.load
            for slot in bulk.due(now).tolist():
                f = bulk.flows[slot]
                f.active = False
                del self._active[f]
                lvl = float(brate[slot]) / bw[slot]
                if lvl < low:
                    low = lvl
                for r, _, load in f.path.load:
                    s = res_flows[r]
                    del s[f]
                    if s:
                        if bl[r] >= near[r]:
                            coupled = True  # saturated: its other flows may speed up
                        maxload[r] -= load
                    else:
                        maxload[r] = 0.0
                        busy_time[r] += now - busy_since[r]
                bulk.remove(slot)
                ended += 1
                finished.append(f)
        self.active_count += len(seeds) - ended
        for r in touched:
            seeds.extend(res_flows[r])
        if bulk is not None:
            comp = ()
            if not coupled and seeds:
                # a new flow that fits at its bound on resources left unsaturated takes
                # its bound; nobody else's rate changes (no bottleneck is touched)
                brate, btdone, bl = bulk.rate, bulk.tdone, bulk.load
                for f in seeds:
                    x = f.maxrate
                    for r, a in zip(f.res, f.coef):
                        if bl[r] + a * x > near[r]:
                            coupled = True
                            break
                    else:
                        brate[f.slot] = x
                        btdone[f.slot] = now + f.remaining / x
                        for r, a in zip(f.res, f.coef):
                            bl[r] += a * x
                        continue
                    break
            if coupled:
                self._bulk_solve(now, low)
            elif seeds or ended:
                self._bulk_next()
        elif not seeds:
            comp = ()
        elif touched or not lone:
            comp = self._recompute(seeds, now, low)
        else:
            # new flows only, none on a resource that can saturate: each takes its bound
            # (what _recompute finds for them, without its component walk)
            comp = seeds
            if len(comp) > 1:
                comp.sort(key=_by_seq)
            self.recomputations += 1
            self._apply(comp, [f.maxrate for f in comp], now)
        if self.series is not None:
            self._record_series(now, seeds, finished, comp)
        self.flows_completed += len(finished)
        for f in finished:
            f.t_end = now
            f.callback(f)
        ends, end_times = self._ends, self._end_times  # (a recomputation may have rebuilt them)
        while end_times:  # make sure the earliest valid completion has a wake-up
            when = end_times[0]
            due = ends[when]
            for i, (f, version) in enumerate(due):
                if version == f.version and f.active:
                    break
            else:  # all superseded
                heappop(end_times)
                del ends[when]
                self._end_count -= len(due)
                continue
            if i:  # drop the superseded ones ahead of it (not scanned again)
                del due[:i]
                self._end_count -= i
            self._wake_at(when)
            break

    def _schedule_end(self, f, when: float) -> None:
        """Put ``f`` (at its current version) among the completions due at ``when``."""
        due = self._ends.get(when)
        if due is None:
            due = self._ends[when] = []
            heapq.heappush(self._end_times, when)
        due.append((f, f.version))
        self._end_count += 1

    def _recompute(self, seeds, now: float, low: float = 0.0) -> list:
        """New rates after flows started (``seeds``) or ended (``seeds`` then holds the
        flows of the saturated resources they left; ``low`` is their lowest level).

        The connected component of the seeds over saturable resources is solved exactly.
        With many active flows and a component past ``_BFS_LIMIT`` coupled flows, the
        rates are re-solved locally instead (:meth:`_local_rates`), and if that set grows
        too, all active flows move to bulk mode (:class:`_Bulk`).
        """
        maxload, res_flows, satl = self.maxload, self.res_flows, self._sat
        comp = []
        seen_res = set()
        sat = []
        seen = {f for f in seeds if f.active}
        stack = list(seen)
        limit = _BFS_LIMIT if self.active_count > _LOCAL_MIN else None
        coupled = 0
        while stack:
            f = stack.pop()
            comp.append(f)
            linked = False
            for r in f.res:
                if maxload[r] > satl[r]:
                    linked = True
                    if r in seen_res:
                        continue
                    seen_res.add(r)
                    sat.append(r)
                    new = [g for g in res_flows[r] if g not in seen]
                    if new:
                        seen.update(new)
                        stack.extend(new)
            if linked and limit is not None:
                coupled += 1
                if coupled > limit:
                    comp = None
                    break
        if comp is None:
            # many active flows: re-solve locally, growing the set until the max-min
            # conditions hold everywhere around it (exact; see _local_rates)
            local = self._local_rates(seeds, now)
            if local is not None:
                return local
            if self.on_rates is None and self.series is None:
                self._enter_bulk(now)
                self._bulk_solve(now, low)
                return []
            comp = sorted(self._active, key=_by_seq)
            sat = None
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
        elif sat is None or len(comp) > _VECTOR_INCIDENCE:
            new_rates = self._solve_vectorized(comp)
        else:
            new_rates = self._solve(comp, sat, [self.cap[r] for r in sat])
        self._apply(comp, new_rates, now)
        return comp

    def _enter_bulk(self, now: float) -> None:
        """Move all active flows into arrays (their heap completions are dropped)."""
        bulk = self._bulk = _Bulk(self._cap_arr, self._width)
        for f in self._active:
            rate = f.rate
            if rate > 0:
                rem = f.remaining - rate * (now - f.t_last)
                bulk.add(f, rate, now + (rem if rem > 0 else 0.0) / rate)
            else:
                bulk.add(f, 0.0, _INF)
        self._ends, self._end_times, self._end_count = {}, [], 0

    def _bulk_solve(self, now: float, low: float) -> None:
        bulk = self._bulk
        self.recomputations += 1
        bulk.solve(now, low)
        if self.active_count < _BULK_OFF:
            # few flows left: back to per-flow objects and the completion lists
            rate, tdone = bulk.rate, bulk.tdone
            for slot in np.flatnonzero(bulk.alive).tolist():
                f = bulk.flows[slot]
                x = float(rate[slot])
                t = float(tdone[slot])
                f.rate = x
                f.remaining = (t - now) * x
                f.t_last = now
                f.version += 1
                self._schedule_end(f, t)
            self.load = bulk.load[: bulk.n].tolist()
            self._bulk = None
            return
        self._bulk_next()

    def _bulk_next(self) -> None:
        nxt = self._bulk.next_time()
        if nxt < _INF:
            self._wake_at(nxt)

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

    def _apply(self, comp, new_rates, now: float) -> None:
        """Give ``comp`` its new rates; reschedule the completions of those that changed.

        A flow's remaining bytes are brought up to ``now`` only when its rate changes."""
        schedule_end = self._schedule_end
        rload = self.load
        for f, rate in zip(comp, new_rates):
            old = f.rate
            if rate == old:
                continue
            if old > 0:
                f.remaining -= old * (now - f.t_last)
                d = rate - old
                for r, a in zip(f.res, f.coef):
                    rload[r] += a * d
            else:
                for r, a in zip(f.res, f.coef):
                    rload[r] += a * rate
            f.t_last = now
            f.rate = rate
            f.version += 1
            rem = f.remaining if f.remaining > 0 else 0.0
            schedule_end(f, now + rem / rate)
        if self._end_count > 4 * len(self._active) + 4096:
            # superseded completions pile up under heavy contention: drop them
            ends = {}
            for when, due in self._ends.items():
                due = [e for e in due if e[1] == e[0].version and e[0].active]
                if due:
                    ends[when] = due
            self._ends, self._end_times = ends, list(ends)
            heapq.heapify(self._end_times)
            self._end_count = sum(len(due) for due in ends.values())
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
        past ``_LOCAL_MAX`` flows (the caller then moves to bulk mode).
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
