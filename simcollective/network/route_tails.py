"""Routes and their cached parts: a route is built from the cached routes of the nodes it
passes, for the routing policies whose next hop depends on the node and the destination only
(``first``, ``dest``).

A route from a source is its head (from the source through its next hop along the chain of
two-link nodes it enters: a GPU's PCIe switch and NIC), cached per (source, next hop), joined
to the cached route from where the head ends (a switch, where the walks from many sources
meet). Its latency is the head's sum summed on over the tail's latency terms: the additions
of the hop-by-hop sum in their order, so a route is the same to the last bit as the one built
hop by hop (``tests/network/test_routing_tails.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserInputError

__all__ = ["Route", "CachedRoutes", "RouteParts"]

_INF = float("inf")
#: the most nodes a route's head holds before its end (:meth:`CachedRoutes._head`)
_HEAD_NODES = 8


def _summed(terms) -> float:
    """``0.0 + terms[0] + terms[1] + ...``, left to right (as a route's latency is summed
    hop by hop; ``sum`` may compensate the rounding)."""
    total = 0.0
    for t in terms:
        total += t
    return total


@dataclass(frozen=True, slots=True)
class Route:
    """A path between two nodes with its resources.

    ``resources`` are resource indices in path order (links and switch crossings; a
    resource crossed twice is listed twice), ``latency`` is the sum of link and crossing
    latencies in seconds (per traversal), ``capacity`` the smallest capacity on the
    route in bytes/s, divided by the number of traversals (inf for a route to oneself).
    """

    nodes: tuple
    resources: tuple
    latency: float
    capacity: float


@dataclass(slots=True)
class RouteParts:
    """The routes of many (source, destination) pairs as the parts they are built on
    (:meth:`CachedRoutes.route_parts`): pair ``i``'s route is ``heads[head[i]]`` joined to
    ``tails[tail[i]]``, or ``None`` where ``tail[i]`` is -1 (a route not built on a head:
    ask :meth:`~.routing.Router.route`).

    ``heads``: (resources, latency sum, smallest capacity) per head; ``tails``: (route,
    latency terms) per tail.
    """

    head: list
    tail: list
    heads: list
    tails: list


class CachedRoutes:
    """The route builder of :class:`~simcollective.network.routing.Router` for the policies
    whose next hop depends on the node and the destination only.

    NOTE: a mixin of the router: it reads the router's resource table, successor lists,
    distance searches and route caches (``_succ``, ``_dist``, ``_routes``, ``_terms``,
    ``_heads``) and its ``_spread``; it keeps no state of its own.
    """

    def _cached_route(self, src, dst) -> Route:
        """The route of a policy whose next hop depends on the node and the destination only
        (``first``, ``dest``; :meth:`_next_hop`), built on cached parts: the route from every
        node of a route is its tail. The head (from ``src`` through its
        next hop along the chain of two-link nodes it enters, a GPU's PCIe switch and NIC)
        is cached per (source, next hop), joined to the cached route from where it ends;
        the latency is the head's sum summed on over the tail's terms: the additions of
        :meth:`_assemble` in its order, so the routes are the same to the last bit."""
        state = self._dist.get(dst)
        dist = state[0] if state is not None and src in state[0] else self._distances_to(dst, src)
        if src not in dist:
            raise UserInputError(f"no route from {src!r} to {dst!r}")
        spread = self._spread(src, dst)
        nxt = self._next_hop(src, dist, spread)
        head = self._heads.get((src, nxt))
        if head is None:
            head = self._heads[src, nxt] = self._head(src, nxt)
        nodes, resources, lead, c, end = head
        if end == dst or dst in nodes:
            return self._walk(src, dst, dist, spread)
        key = (end, dst)
        tail_terms = self._terms.get(key)
        if tail_terms is None:
            tail, tail_terms = self._tail(end, dst, dist, spread)
        else:
            tail = self._routes[key]
        latency = lead  # the latency summed on from the head's sum (its terms are summed first)
        for t in tail_terms:
            latency += t
        r = self._routes[src, dst] = Route(nodes + tail.nodes, resources + tail.resources, latency, min(c, tail.capacity))
        return r

    def route_parts(self, srcs, dsts, chunk: int = 256) -> RouteParts:
        """The parts of the routes from ``srcs[i]`` to ``dsts[i]`` (node indices, sources
        different from destinations) as :meth:`_cached_route` joins them, with no
        :class:`Route` made per pair: every pair's next hop from rows of hop distances
        (``chunk`` destinations at a time, each searched as far as its pairs' sources:
        :func:`~.route_hops.hop_rows`), a head per (source, next hop), a tail per (head's
        end, destination)."""
        srcs, dsts = np.asarray(srcs, np.int64), np.asarray(dsts, np.int64)
        nodes, N = self.nodes, len(self.nodes)
        succ = [[self.index[w] for w in self._succ[u]] for u in nodes]
        width = max([len(x) for x in succ] + [1])
        smat = np.full((N, width), N, np.int64)   # successors in node order, padded with N
        for u, x in enumerate(succ):
            smat[u, :len(x)] = x
        pred = [[self.index[u] for u in self._pred[v]] for v in nodes]   # links reversed, as (ptr, flat)
        back = (np.cumsum([0] + [len(x) for x in pred]), np.array([u for x in pred for u in x], np.int64))
        nxt = np.empty(len(srcs), np.int64)
        udst, dinv = np.unique(dsts, return_inverse=True)
        for lo in range(0, len(udst), chunk):
            sel = np.flatnonzero((dinv >= lo) & (dinv < lo + chunk))
            nxt[sel] = self._next_hops(srcs[sel], dinv[sel] - lo, udst[lo:lo + chunk], smat, back)
        hkeys, hinv = np.unique(srcs * N + nxt, return_inverse=True)
        heads = []
        for k in hkeys.tolist():
            key = (nodes[k // N], nodes[k % N])
            head = self._heads.get(key)
            if head is None:
                head = self._heads[key] = self._head(*key)
            heads.append(head)
        index = self.index
        hnodes = np.full((len(heads), _HEAD_NODES + 1), -1, np.int64)  # a head's nodes, then its end
        for i, head in enumerate(heads):
            hnodes[i, :len(head[0])] = [index[x] for x in head[0]]
            hnodes[i, _HEAD_NODES] = index[head[4]]
        joined = ~(hnodes[hinv] == dsts[:, None]).any(axis=1)
        tail = np.full(len(srcs), -1, np.int64)
        tkeys, tinv = np.unique(hnodes[hinv[joined], _HEAD_NODES] * N + dsts[joined], return_inverse=True)
        tail[joined] = tinv
        tails = []
        for k in tkeys.tolist():
            end, dst = nodes[k // N], nodes[k % N]
            tails.append(self._tail(end, dst, self._distances_to(dst, end), self._spread(end, dst)))
        return RouteParts(hinv.tolist(), tail.tolist(), [(r, lead, c) for _, r, lead, c, _ in heads], tails)

    def _next_hops(self, srcs, rows, dsts, smat, back) -> np.ndarray:
        """:meth:`_next_hop` of every pair: from ``srcs[i]`` toward ``dsts[rows[i]]``
        (``back``: the reversed links, :func:`~.route_hops.hop_rows`'s ``ptr`` and ``pred``)."""
        from .route_hops import hop_rows   # (numba: loaded by the compiled path, the one caller)

        order = np.argsort(rows, kind="stable")   # each row's sources: the nodes its search must reach
        need_ptr = np.zeros(len(dsts) + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=len(dsts)), out=need_ptr[1:])
        hops = hop_rows(back[0], back[1], np.asarray(dsts, np.int64), need_ptr, srcs[order], len(self.nodes))
        hops = np.concatenate((hops, np.full((len(dsts), 1), -1, hops.dtype)), axis=1)  # (column N: padding)
        d = hops[rows, srcs]
        bad = np.flatnonzero(d < 0)
        if len(bad):
            i = bad[0]
            raise UserInputError(f"no route from {self.nodes[srcs[i]]!r} to {self.nodes[dsts[rows[i]]]!r}")
        spread = np.array([self._spread(None, self.nodes[x]) for x in dsts.tolist()], np.int64)[rows]
        deg = int((smat[np.unique(srcs)] < len(self.nodes)).sum(axis=1).max())
        cand = smat[srcs, :deg]
        ok = hops[rows[:, None], cand] == (d - 1)[:, None]
        pick = spread % ok.sum(axis=1)   # (the k candidates in node order: the one at spread mod k)
        at, seen = np.zeros(len(srcs), np.int64), np.zeros(len(srcs), np.int64)
        for j in range(deg):
            at[ok[:, j] & (seen == pick)] = j
            seen += ok[:, j]
        return cand[np.arange(len(srcs)), at]

    def _next_hop(self, node, dist, spread):
        """The next hop from ``node`` on a shortest path (``dist``: hop distances to the
        destination): of the ``k`` candidates in node order, the one at ``spread mod k``
        (``spread`` 0 for ``first``, the destination's number for ``dest``)."""
        d = dist[node] - 1
        if not spread:
            for nxt in self._succ[node]:
                if dist.get(nxt) == d:
                    return nxt
        cands = [w for w in self._succ[node] if dist.get(w) == d]
        return cands[spread % len(cands)]

    def _tail(self, node, dst, dist, spread) -> tuple:
        """The route from ``node`` to ``dst`` and its latency terms (cached)."""
        key = (node, dst)
        r = self._routes.get(key)
        if r is None:
            r = self._walk(node, dst, dist, spread)
        t = self._terms.get(key)
        if t is None:  # a route built from a head keeps no terms: they are read off its hops
            nodes = r.nodes
            t = []
            for i in range(len(nodes) - 1):
                if i:
                    t.append(self.crossing_latency.get(nodes[i], 0.0))
                t.append(self.edge_latency[nodes[i], nodes[i + 1]])
            t = self._terms[key] = tuple(t)
        return r, t

    def _head(self, src, nxt) -> tuple:
        """From ``src`` through ``nxt`` along the chain of two-link nodes (at most :data:`_HEAD_NODES`) to
        the first other node ``end``: the nodes before ``end``, the resources up to
        ``end``'s crossing included, the sum of their latencies (in path order), their
        smallest capacity, ``end``."""
        cap, succ = self.capacity, self._succ
        nodes, resources, lead, c = [src], [], [], _INF
        u, v = src, nxt
        while True:
            hop = (u, v)
            e = self.edge_resource[hop]
            resources.append(e)
            lead.append(self.edge_latency[hop])
            c = min(c, cap[e])
            x = self.crossing_resource.get(v)
            if x is not None:
                resources.append(x)
                c = min(c, cap[x])
            lead.append(self.crossing_latency.get(v, 0.0))
            s = succ[v]
            if len(s) != 2 or u not in s or len(nodes) == _HEAD_NODES:
                break
            w = s[1] if s[0] == u else s[0]
            if w in nodes:
                break
            nodes.append(v)
            u, v = v, w
        return tuple(nodes), tuple(resources), _summed(lead), c, v

    def _walk(self, src, dst, dist, spread) -> Route:
        """The route from ``src`` (whose distance ``dist`` knows), walked to the first
        node whose route is cached (see :meth:`_build_back`)."""
        routes = self._routes
        walk = []
        node = src
        while True:
            nxt = self._next_hop(node, dist, spread)
            walk.append(node)
            if nxt == dst:
                tail, tail_terms = Route((dst,), (), 0.0, _INF), ()
                break
            if (nxt, dst) in routes:
                tail, tail_terms = self._tail(nxt, dst, dist, spread)
                break
            node = nxt
        return self._build_back(walk, nxt, dst, tail, tail_terms)

    def _build_back(self, walk, v, dst, tail, tail_terms) -> Route:
        """The route from ``walk[0]`` to ``dst``: the nodes ``walk`` in path order (the
        last one's next hop ``v``) joined to ``tail``, the route from ``v``. The routes
        from the walked nodes with more than two links out (switches: where the walks
        from many sources meet) are cached on the way; a chain of two-link nodes (a GPU's
        PCIe switch and NIC) is walked again by the next source it serves."""
        cap, edge_res, edge_lat, succ = self.capacity, self.edge_resource, self.edge_latency, self._succ
        cross_res, cross_lat = self.crossing_resource, self.crossing_latency
        routes, terms = self._routes, self._terms
        rn, rr, rt = [], [], []  # nodes, resources, latency terms of the hops since the tail, last first
        c = _INF
        first = walk[0]
        for u in reversed(walk):
            if v != dst:
                rt.append(cross_lat.get(v, 0.0))
                x = cross_res.get(v)
                if x is not None:
                    rr.append(x)
                    c = min(c, cap[x])
            hop = (u, v)
            e = edge_res[hop]
            rr.append(e)
            rt.append(edge_lat[hop])
            rn.append(u)
            c = min(c, cap[e])
            if u is first or len(succ[u]) > 2:
                tail_terms = tuple(rt[::-1]) + tail_terms
                tail = Route(tuple(rn[::-1]) + tail.nodes, tuple(rr[::-1]) + tail.resources,
                             _summed(tail_terms), min(c, tail.capacity))
                key = (u, dst)
                routes[key] = tail
                terms[key] = tail_terms
                rn, rr, rt, c = [], [], [], _INF
            v = u
        return tail
