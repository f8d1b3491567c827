"""Route parameters of many (source, destination) pairs at once, as the rows of the compiled
loop's path arrays.

:func:`path_rows` gives every pair the figures :func:`.paths.path_parameters` gives it (its
resources, coefficients, weight, rate bound, loads and latency), to the last bit, without
a :class:`~.route_tails.Route` or :class:`~.paths.Path` object per pair where the routing
policy builds routes from cached parts (``first`` and ``dest``: a head per (source, next
hop) joined to a tail per (switch, destination), :meth:`~.route_tails.CachedRoutes.route_parts`)
and the route crosses each resource once: the rows are the heads' and tails' resources
side by side, the rate bound their smallest capacity, the latency the head's sum summed on
over the tail's terms (the additions of the route's own sum, in their order), with NumPy
over all pairs. Every other pair (a route through given NICs, a route crossing a resource
twice, cross traffic, the ``hash`` and ``study`` policies) takes its :class:`~.paths.Path`
from :meth:`~.paths.PathsMixin.path_parameters`. ``tests/network/test_path_rows.py``
compares every row with the per-pair path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stats import res_bytes

__all__ = ["PathRows", "path_rows", "put_row", "BULK_MIN_PAIRS"]

_INF = float("inf")
#: runs with fewer distinct pairs make their paths per pair (NumPy's set-up costs more)
BULK_MIN_PAIRS = 2048


@dataclass
class PathRows:
    """The rows of the loop's paths: ``PI`` (resource count, resources; int64) and ``PF``
    (weight, rate bound, coefficients, loads), padded with zeros to the longest; ``lat``
    each path's latency times the model's latency factor (None: the factor depends on the
    size), ``route_lat`` the route's latency; ``objects``: row -> its :class:`~.paths.Path`
    for the rows made per pair (the others have ``-1`` in ``kind``)."""

    PI: np.ndarray
    PF: np.ndarray
    lat: np.ndarray | None
    route_lat: np.ndarray
    objects: dict

    def resource_bytes(self, per_row, n: int) -> list:
        """Bytes carried per resource when row ``i`` carried ``per_row[i]`` bytes (every
        traversal of a route counted, as :func:`.stats.res_bytes`; the rows made per pair
        count on their paths' ``bytes``)."""
        per_row = np.asarray(per_row, np.int64)
        bulk = np.ones(len(per_row), bool)
        for i, p in self.objects.items():
            bulk[i] = False
            p.bytes += int(per_row[i])
        rows = np.flatnonzero(bulk & (per_row != 0))
        k = self.PI[rows, 0]
        cols = np.arange(self.PI.shape[1] - 1)[None, :] < k[:, None]
        out = np.zeros(n, np.int64)
        np.add.at(out, self.PI[rows, 1:][cols], np.broadcast_to(per_row[rows, None], cols.shape)[cols])
        extra = res_bytes(self.objects.values(), n)
        return [int(a) + b for a, b in zip(out.tolist(), extra)]


def _bulk(router, model) -> bool:
    """Whether the pairs of this router and model can be made in bulk (a penalty weight
    sums its terms with Python's ``sum``, which may compensate the rounding: per pair)."""
    return router.policy in ("first", "dest") and not model.cross_traffic > 0 and model.sharing != "penalty"


def path_rows(net, placement, src, dst, via, vias, bulk_min=None) -> PathRows:
    """The path rows of the distinct keys ``(src[i], dst[i], via[i])``: ranks (placed on
    the nodes ``placement``) and the index of their ``vias`` entry (None: the shortest
    path; see :meth:`~.paths.PathsMixin.path_parameters`); in bulk from ``bulk_min``
    keys (default :data:`BULK_MIN_PAIRS`)."""
    router, model = net.router, net.model
    nodes = np.array([router.index[x] for x in placement], np.int64)
    s, d = nodes[np.asarray(src, np.int64)], nodes[np.asarray(dst, np.int64)]
    plain = np.array([v is None for v in vias], bool)[np.asarray(via, np.int64)]
    many = len(s) >= (BULK_MIN_PAIRS if bulk_min is None else bulk_min) and _bulk(router, model)
    idx = np.flatnonzero(plain & (s != d)) if many else np.zeros(0, np.int64)
    rows = _bulk_rows(router, model, net.cap, s[idx], d[idx]) if len(idx) else None
    todo = np.ones(len(s), bool)
    todo[idx] = False
    if rows is not None:
        todo[idx[rows[0] < 0]] = True
        if not (rows[0] >= 0).any():
            rows = None
    objects = {}
    for i in np.flatnonzero(todo).tolist():
        objects[i] = net.path_parameters(placement[src[i]], placement[dst[i]], vias[via[i]])
    D = max([p.nres for p in objects.values()] + [1] + ([int(rows[0].max())] if rows is not None else []))
    K = len(s)
    PI, PF = np.zeros((K, 1 + D), np.int64), np.zeros((K, 2 + 2 * D))
    lat, route_lat = np.zeros(K), np.zeros(K)
    per_size = len(model.lat_factors) != 1
    if rows is not None:
        nres, res, weight, maxrate, rlat = rows
        sel = nres >= 0
        at = idx[sel]
        nres, res, weight, maxrate, rlat = nres[sel], res[sel], weight[sel], maxrate[sel], rlat[sel]
        w = int(nres.max())
        res = res[:, :w]
        cols = np.arange(w)[None, :] < nres[:, None]
        PI[at, 0] = nres
        PI[at, 1:1 + w] = np.where(cols, res, 0)
        PF[at, 0], PF[at, 1] = weight, maxrate
        PF[at, 2:2 + w] = np.where(cols, 1.0, 0.0)
        PF[at, 2 + D:2 + D + w] = np.where(cols, maxrate[:, None], 0.0)
        route_lat[at] = rlat
        if not per_size:
            f = model.lat_factors[0]
            lat[at] = np.where(rlat != 0.0, rlat * f, rlat)  # (path_latency: lat x f if lat else lat)
    for i, p in objects.items():
        put_row(PI, PF, i, p)
        route_lat[i] = p.route.latency
        if not per_size:
            lat[i] = p.lat
    return PathRows(PI, PF, None if per_size else lat, route_lat, objects)


def put_row(PI, PF, i, p) -> None:
    """Row ``i`` of ``PI`` and ``PF`` (padded to ``D`` resources) from the path ``p``."""
    k, D = p.nres, PI.shape[1] - 1
    PI[i, 0] = k
    PI[i, 1:1 + k] = p.res
    PF[i, 0], PF[i, 1] = p.weight, p.maxrate
    PF[i, 2:2 + k] = p.coef
    PF[i, 2 + D:2 + D + k] = [load for _, _, load in p.load]


def _padded(seqs, fill, dtype):
    """``seqs`` as the rows of one array padded with ``fill``, and their lengths."""
    lens = np.array([len(s) for s in seqs], np.int64)
    out = np.full((len(seqs), max(int(lens.max(initial=0)), 1)), fill, dtype)
    if lens.sum():
        out[np.arange(out.shape[1])[None, :] < lens[:, None]] = np.concatenate([np.asarray(s, dtype) for s in seqs])
    return out, lens


def _bulk_rows(router, model, cap, srcs, dsts):
    """(resource count, resources padded with ``n``, weight, rate bound, route latency) of
    each pair; count -1 for a pair to make per pair (a route not built on a head, or one
    crossing a resource twice)."""
    parts = router.route_parts(srcs, dsts)
    n = len(cap)
    hres, hn = _padded([h[0] for h in parts.heads], n, np.int64)
    hlead, hcap = np.array([h[1] for h in parts.heads]), np.array([h[2] for h in parts.heads])
    if not parts.tails:
        return np.full(len(srcs), -1, np.int64), None, None, None, None
    tres, tn = _padded([t[0].resources for t in parts.tails], n, np.int64)
    terms, tk = _padded([t[1] for t in parts.tails], 0.0, np.float64)
    tcap = np.array([t[0].capacity for t in parts.tails])
    h, t = np.asarray(parts.head, np.int64), np.asarray(parts.tail, np.int64)
    joined = t >= 0
    t = np.where(joined, t, 0)
    nres = hn[h] + tn[t]
    w = int(nres.max())
    res = np.full((len(srcs), w), n, np.int64)
    for j in range(w):   # column j: the head's j-th resource, else the tail's (j - head length)-th
        k = j - hn[h]
        from_tail = tres[t, np.clip(k, 0, tres.shape[1] - 1)]
        res[:, j] = np.where(k < 0, hres[h, min(j, hres.shape[1] - 1)], np.where(k < tn[t], from_tail, n))
    srt = np.sort(res, axis=1)
    twice = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] < n)).any(axis=1)
    capv = np.append(np.asarray(cap, np.float64), _INF)
    maxrate = capv[res].min(axis=1)  # (every resource once: min of cap[r] / 1.0)
    if model.bound_by_route_capacity:
        rc = np.minimum(hcap[h], tcap[t])
        maxrate = np.where(rc < maxrate, rc, maxrate)
    if router.flow_cap:
        fcap = np.full(n + 1, _INF)
        for r, v in router.flow_cap.items():
            fcap[r] = v
        maxrate = np.minimum(maxrate, fcap[res].min(axis=1))
    lat = hlead[h]
    for j in range(terms.shape[1]):   # the head's sum, summed on over the tail's terms in order
        lat = np.where(j < tk[t], lat + terms[t, j], lat)
    if model.tcp_gamma > 0:
        with np.errstate(divide="ignore"):
            maxrate = np.where(lat > 0, np.minimum(maxrate, model.tcp_gamma / (2.0 * lat)), maxrate)
    weight = np.ones(len(srcs))
    nres = np.where(joined & ~twice, nres, -1)
    return nres, res, weight, maxrate, lat

