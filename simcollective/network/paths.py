"""Route parameters: what a flow's sharing depends on, per (source, destination).

A :class:`Path` holds the route's distinct resources with their usage coefficients, the
flow weight and the rate bound. A route that crosses the same resource more than once
(a hairpin through a switch, say) uses it once per traversal: its coefficient is the
multiplicity (``sum of coefficient x rate <= capacity`` in the max-min solve), its
latency counts every traversal (the router sums it), and per-link bytes count every
traversal (:mod:`.stats`). Under cross traffic, the reverse route's resources carry a
share ``cross_traffic`` of the rate, added to the coefficient per traversal.

The :class:`PathTable` keeps the same figures as arrays for the compiled array store.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Flow", "Path", "PathTable", "PathsMixin", "bound_path", "path_parameters"]

_INF = float("inf")


class Path:
    __slots__ = ("route", "res", "nres", "coef", "_coef_of", "weight", "maxrate", "load", "bytes", "pid", "lat")

    @property
    def coef_of(self) -> dict:
        """Resource -> its coefficient (made when first read: the compiled path never reads it)."""
        try:
            return self._coef_of
        except AttributeError:
            d = self._coef_of = dict(zip(self.res, self.coef))
            return d

    @coef_of.setter
    def coef_of(self, d: dict) -> None:
        self._coef_of = d


class Flow:
    """One message in flight. Times in seconds, sizes in bytes, rates in bytes/s."""

    __slots__ = (
        "src", "dst", "size", "path", "latency", "eff", "remaining", "rate", "t_last", "slot",
        "version", "active", "callback", "t_post", "t_start", "t_end", "tag", "seq",
    )

    # the route parameters are the path's (shared by every flow between the same nodes)
    @property
    def res(self):
        return self.path.res

    @property
    def coef(self):
        return self.path.coef

    @property
    def weight(self):
        return self.path.weight

    @property
    def maxrate(self):
        return self.path.maxrate

    def __repr__(self):
        return f"Flow({self.src!r}->{self.dst!r}, {self.size} B)"


def _coefficients(route, reverse, cross: float):
    """Distinct resources in first-traversal order with coefficient = traversals (+ the
    cross-traffic share per traversal of the reverse route)."""
    pos: dict = {}
    res: list = []
    coef: list = []
    for r in route.resources:
        i = pos.get(r)
        if i is None:
            pos[r] = len(res)
            res.append(r)
            coef.append(1.0)
        else:
            coef[i] += 1.0
    if cross > 0 and res:
        for r in reverse.resources:
            i = pos.get(r)
            if i is None:
                pos[r] = len(res)
                res.append(r)
                coef.append(cross)
            else:
                coef[i] += cross
    return res, coef


class _Loads(dict):
    """Resource -> its load entry ``(r, 1.0, rate)`` at one rate bound, made once."""

    __slots__ = ("rate",)

    def __missing__(self, r):
        v = self[r] = (r, 1.0, self.rate)
        return v


_LOADS: dict = {}    # rate bound -> its _Loads (the rate bounds of a run are a few)
_ONES: dict = {}     # n -> (1.0,) * n


def _loads(rate) -> _Loads:
    d = _LOADS.get(rate)
    if d is None:
        if len(_LOADS) > 4096:
            _LOADS.clear()
        d = _LOADS[rate] = _Loads()
        d.rate = rate
    return d


def _ones(n) -> tuple:
    t = _ONES.get(n)
    if t is None:
        t = _ONES[n] = (1.0,) * n
    return t


def path_parameters(router, model, cap, src, dst, via=None) -> Path:
    """Everything about flows src -> dst (through the nodes ``via``, see
    :meth:`~simcollective.network.routing.Router.route`) that does not depend on the message
    size (``model``: the :class:`~simcollective.network.model.NetworkModel`)."""
    route = router.route(src, dst) if via is None else router.route(src, dst, via)
    resources = route.resources
    if model.cross_traffic > 0 and resources:
        reverse = router.route(dst, src) if via is None else router.route(dst, src, via[::-1])
        res, coef = _coefficients(route, reverse, model.cross_traffic)
        ones = False
    else:
        ones = len(set(resources)) == len(resources)  # (the common case: each resource once)
        res, coef = (resources, _ones(len(resources))) if ones else _coefficients(route, None, 0.0)
    if model.sharing == "penalty":
        penalty = route.latency + sum(model.weight_s / cap[r] for r in resources)
        weight = 1.0 / penalty if penalty > 0 else 1.0
    else:
        weight = 1.0
    if not res:
        maxrate = _INF
    elif ones:
        maxrate = min(map(cap.__getitem__, res))  # (= cap[r] / 1.0)
    else:
        maxrate = min([cap[r] / a for r, a in zip(res, coef)])
    if model.bound_by_route_capacity and route.capacity < maxrate:
        maxrate = route.capacity
    if router.flow_cap:   # per-flow caps of the route's links (edge attribute flow_bandwidth)
        maxrate = min([maxrate] + [router.flow_cap[r] for r in res if r in router.flow_cap])
    if model.tcp_gamma > 0 and route.latency > 0:
        maxrate = min(maxrate, model.tcp_gamma / (2.0 * route.latency))
    p = Path()
    p.route, p.res, p.coef, p.weight, p.maxrate = route, tuple(res), tuple(coef), weight, maxrate
    p.bytes, p.nres, p.pid = 0, len(res), -1
    if ones:  # (the same figures, from tuples shared between paths: 1.0 x maxrate = maxrate)
        p.load = tuple(map(_loads(maxrate).__getitem__, res))
    else:
        p.load = tuple((r, a, a * maxrate) for r, a in zip(res, coef))
    p.lat = path_latency(route, model)
    return p


def path_latency(route, model):
    """The route latency times the model's latency factor when that factor does not
    depend on the message size (``None`` when it does)."""
    lat = route.latency
    if len(model.lat_factors) != 1:
        return None
    return lat * model.lat_factors[0] if lat else lat


def bound_path(base: Path, k: float) -> Path:
    """``base`` with its rate bound at most ``k`` x the route's smallest capacity (the
    ``bandwidth_factor_mode = "bound"`` models); a path of its own (own bytes, own
    row in the path table)."""
    p = Path()
    p.route, p.res, p.coef, p.weight, p.bytes = base.route, base.res, base.coef, base.weight, 0
    p.maxrate = maxrate = min(base.maxrate, k * base.route.capacity)
    p.load = tuple((r, a, a * maxrate) for r, a in zip(base.res, base.coef))
    p.coef_of, p.nres, p.pid, p.lat = base.coef_of, base.nres, -1, base.lat
    return p


class PathTable:
    """Paths as arrays (rows padded with the dummy resource ``n``, coefficient 0)."""

    def __init__(self, n: int):
        self.n = n
        self.count = 0
        self.D = 1
        self.pres = np.full((16, 1), n, dtype=np.intp)
        self.pcoef = np.zeros((16, 1))
        self.pwb = np.zeros((2, 16))  # rows: weight, rate bound
        self.pwb[0] = 1.0

    def register(self, p: Path) -> int:
        if p.pid >= 0:
            return p.pid
        if p.nres > self.D:
            extra = p.nres - self.D
            self.pres = np.concatenate((self.pres, np.full((self.pres.shape[0], extra), self.n, dtype=np.intp)), axis=1)
            self.pcoef = np.concatenate((self.pcoef, np.zeros((self.pcoef.shape[0], extra))), axis=1)
            self.D = p.nres
        if self.count == self.pwb.shape[1]:
            k = self.count
            self.pres = np.concatenate((self.pres, np.full((k, self.D), self.n, dtype=np.intp)))
            self.pcoef = np.concatenate((self.pcoef, np.zeros((k, self.D))))
            self.pwb = np.concatenate((self.pwb, np.zeros((2, k))), axis=1)
        pid = p.pid = self.count
        self.count += 1
        self.pres[pid, : p.nres] = p.res
        self.pcoef[pid, : p.nres] = p.coef
        self.pwb[0, pid] = p.weight
        self.pwb[1, pid] = p.maxrate
        return pid


class PathsMixin:
    """The route-parameter cache of :class:`~simcollective.network.engine.Network`."""

    def path_parameters(self, src, dst, via=None):
        """Everything about flows src -> dst (through ``via``, None: the shortest path) that
        does not depend on the message size (cached): route, resources with their
        coefficients, weight and rate bound."""
        key = (src, dst) if via is None else (src, dst, via)
        p = self._paths.get(key)
        if p is None:
            p = self._paths[key] = path_parameters(self.router, self.model, self.cap, src, dst, via)
        return p

    def _bound_path(self, src, dst, size, via=None):
        """Path parameters when the bandwidth factor bounds the rate (network model
        ``bandwidth_factor_mode = "bound"``, SimGrid SMPI's convention): the flow's rate
        bound is at most f_bw(size) x the route's smallest capacity; cached per factor."""
        k = self.model.bandwidth_factor(size)
        key = (src, dst, k, via)
        p = self._paths.get(key)
        if p is None:
            base = self.path_parameters(src, dst, via)
            p = self._paths[key] = base if k == 1.0 else bound_path(base, k)
        return p
