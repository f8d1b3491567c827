"""Routes over a hardware graph: shortest paths by hop count, resources and latencies.

A *resource* is one capacity that flows share: a directed edge of a full-duplex link, the
single capacity of a shared (half-duplex) cable (both directed edges map to it), or the
crossing capacity of a switch node that carries ``bandwidth`` (only when that capacity is
smaller than the sum of the switch's incoming links: otherwise it can never bind and is
left out, its latency still counted). Routes are computed lazily
per (source, destination) and cached. Equal-cost paths are chosen deterministically:
``first`` takes the lowest-ordered next hop at every step (a static table); ``hash``
spreads (source, destination) pairs over the equal-cost next hops by a stable hash (ECMP);
``dest`` takes next hop d mod k, d the destination's D-mod-k number (:mod:`.dmodk`, as
InfiniBand's subnet manager routes a fat-tree); ``study`` replays SimGrid's Floyd routing
over the study's declared routes (:mod:`.study_routing`; the study's machines only). The
default is chosen per machine (``run_config.routing_of``). A route
may be asked to cross given nodes (``via``: the NICs a channel of an ``nccl-*`` algorithm
leaves and enters its nodes by; :func:`nics_of` lists a GPU's NICs).

An edge may carry ``flow_bandwidth`` (bytes/s): the most one flow crossing it may carry,
whatever the link's capacity (a per-connection goodput, e.g. ``--topology-opt
net_conn_bandwidth``); :attr:`Router.flow_cap` maps its resource to that bound, which
every flow's rate bound then respects (:func:`.paths.path_parameters`).
"""

from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass

import networkx as nx

from ..errors import UserInputError

__all__ = ["Route", "Router", "ROUTING_POLICIES", "nics_of"]

ROUTING_POLICIES = ("first", "hash", "dest", "study")


def nics_of(graph, gpu) -> list:
    """The NICs GPU node ``gpu`` drives, nearest first: its ``nics`` attribute (NIC ids,
    comma-separated), else its ``nic``, else none."""
    attrs = graph.nodes[gpu]
    listed = attrs.get("nics")
    names = str(listed).split(",") if listed else [attrs["nic"]] if attrs.get("nic") else []
    for name in names:
        if name not in graph or graph.nodes[name].get("kind") != "nic":
            raise UserInputError(f"GPU {gpu!r} lists {name!r} among its NICs, which is not a node of kind 'nic'")
    return names


_INF = float("inf")


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


class Router:
    """Resource table and route cache for one hardware graph."""

    def __init__(self, graph: nx.DiGraph, policy: str = "first"):
        if policy not in ROUTING_POLICIES:
            raise UserInputError(f"routing policy {policy!r} is not one of: {', '.join(ROUTING_POLICIES)}")
        self.graph = graph
        self.policy = policy
        self.nodes = list(graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        # resources
        self.capacity: list[float] = []
        self.resource_name: list[str] = []
        self.resource_type: list[str] = []
        self.edge_resource: dict[tuple, int] = {}
        self.edge_latency: dict[tuple, float] = {}
        self.flow_cap: dict[int, float] = {}  # resource -> the most one flow may carry on it
        shared: dict[frozenset, int] = {}
        for u, v, attrs in graph.edges(data=True):
            self.edge_latency[(u, v)] = float(attrs["latency"])
            if attrs.get("duplex", "full") == "shared":
                key = frozenset((u, v))
                rid = shared.get(key)
                if rid is None:
                    rid = shared[key] = self._new_resource(attrs["bandwidth"], f"{u}<->{v}", attrs.get("link_type", "link"))
            else:
                rid = self._new_resource(attrs["bandwidth"], f"{u}->{v}", attrs.get("link_type", "link"))
            self.edge_resource[(u, v)] = rid
            if "flow_bandwidth" in attrs:
                self.flow_cap[rid] = min(float(attrs["flow_bandwidth"]), self.flow_cap.get(rid, float("inf")))
        self.crossing_resource: dict[object, int] = {}
        self.crossing_latency: dict[object, float] = {}
        self.unbinding_crossings: list = []
        for n, attrs in graph.nodes(data=True):
            if attrs.get("kind") != "gpu" and "bandwidth" in attrs:
                # A crossing can bind only if it is smaller than what can enter the switch:
                # the capacities of its incoming links (a shared cable counted once).
                # Crossings that can never bind are left out of routes' resources, which
                # keeps flows from being linked through huge switch capacities.
                inbound = sum(float(a["bandwidth"]) for _, _, a in graph.in_edges(n, data=True))
                if float(attrs["bandwidth"]) < inbound:
                    self.crossing_resource[n] = self._new_resource(attrs["bandwidth"], f"{n} (crossing)", "switch")
                else:
                    self.unbinding_crossings.append(n)
            if attrs.get("kind") != "gpu" and "latency" in attrs:
                self.crossing_latency[n] = float(attrs["latency"])
        # sorted successor lists (by node order) for deterministic next-hop choice
        self._succ = {n: sorted(graph.successors(n), key=self.index.__getitem__) for n in self.nodes}
        # predecessor lists for the breadth-first search from each destination
        self._pred = {n: list(graph.predecessors(n)) for n in self.nodes}
        self._dist: dict[object, tuple] = {}  # per destination: (distances so far, search queue)
        self._routes: dict[tuple, Route] = {}
        # latency terms (link and crossing latencies in path order) of the routes the
        # ``first`` policy built, for the routes built on them (:meth:`_first`)
        self._terms: dict[tuple, tuple] = {}
        self._heads: dict[tuple, tuple] = {}  # (source, next hop) -> the head of its routes (:meth:`_first`)
        self._study = None
        if policy == "study":
            from .study_routing import StudyRoutes

            self._study = StudyRoutes(graph, self)

    def _new_resource(self, bandwidth, name, link_type) -> int:
        self.capacity.append(float(bandwidth))
        self.resource_name.append(name)
        self.resource_type.append(link_type)
        return len(self.capacity) - 1

    def _distances_to(self, dst, src) -> dict:
        """Hop distances to ``dst`` (a breadth-first search along reversed links), found
        as far as ``src``: the search stops once ``src`` has its distance, and the next
        call for ``dst`` resumes it. Every node closer to ``dst`` than ``src`` is then
        known (a level is complete before the next one is searched), which is all a
        shortest path from ``src`` needs; a full search from every destination made route
        lookups quadratic in the number of hosts (1 s of a 1024-host ring)."""
        state = self._dist.get(dst)
        if state is None:
            state = self._dist[dst] = ({dst: 0}, deque([dst]))
        dist, queue = state
        pred = self._pred
        while queue and src not in dist:
            v = queue.popleft()
            dv = dist[v] + 1
            for u in pred[v]:
                if u not in dist:
                    dist[u] = dv
                    queue.append(u)
        return dist

    def path(self, src, dst, via=None) -> tuple:
        """Node path from ``src`` to ``dst`` (a shortest path by hop count; through the
        NICs ``via`` when given, see :meth:`route`)."""
        return self.route(src, dst, via).nodes

    def route(self, src, dst, via=None) -> Route:
        """The (cached) route from node ``src`` to node ``dst``.

        ``via``: ``None`` (the shortest path), or ``(out, in)``, two nodes the route must
        cross in that order, e.g. the NIC a channel leaves its node by and the one it enters
        the other node by (the ``nccl-*`` algorithms' channel plan names them): the
        shortest paths ``src -> out``, ``out -> in`` and ``in -> dst`` joined."""
        key = (src, dst) if via is None else (src, dst, via)
        r = self._routes.get(key)
        if r is not None:
            return r
        if src == dst:
            r = Route((src,), (), 0.0, float("inf"))
        elif via is not None:
            out, into = via
            parts = (self.route(src, out).nodes, self.route(out, into).nodes, self.route(into, dst).nodes)
            r = self._assemble(parts[0] + parts[1][1:] + parts[2][1:])
        elif self._study is not None:
            nodes, resources, latency = self._study.resources(src, dst)
            # a resource crossed k times gives the route at most capacity / k
            cap = min(self.capacity[x] / resources.count(x) for x in set(resources))
            r = Route(nodes, resources, latency, cap)
        elif self.policy == "first":
            return self._first(src, dst)
        else:
            r = self._assemble(self._shortest(src, dst))
        self._routes[key] = r
        return r

    def _shortest(self, src, dst) -> list:
        """The nodes of the shortest path chosen by the routing policy. At every hop the next
        hops on a shortest path are listed in node order (``k`` of them): ``first`` takes the
        first (a static table), ``hash`` the one at ``crc32("src|dst") mod k`` (ECMP),
        ``dest`` the one at ``d mod k``, ``d`` the destination's D-mod-k number
        (:func:`.dmodk.destination_numbers`; OpenSM's fat-tree routing). With one next hop
        all three agree."""
        dist = self._distances_to(dst, src)
        if src not in dist:
            raise UserInputError(f"no route from {src!r} to {dst!r}")
        if self.policy == "dest":
            # NOTE: numbered on first use (here, not in __init__): only dest routing needs them
            numbers = self.__dict__.get("_dest_numbers")
            if numbers is None:
                from .dmodk import destination_numbers

                numbers = self._dest_numbers = destination_numbers(self.graph)
            spread = numbers[dst]
        else:
            spread = zlib.crc32(f"{src}|{dst}".encode()) if self.policy == "hash" else 0
        nodes = [src]
        node = src
        while node != dst:
            d = dist[node] - 1
            cands = [w for w in self._succ[node] if dist.get(w) == d]
            node = cands[spread % len(cands)] if len(cands) > 1 else cands[0]
            nodes.append(node)
        return nodes

    def _first(self, src, dst) -> Route:
        """The ``first`` policy's route (the lowest-ordered next hop at every step), built
        on cached parts: that choice depends on the node and the destination only, so the
        route from every node of a route is its tail. The head (from ``src`` through its
        next hop along the chain of two-link nodes it enters, a GPU's PCIe switch and NIC)
        is cached per (source, next hop), joined to the cached route from where it ends;
        the latency is the head's sum summed on over the tail's terms: the additions of
        :meth:`_assemble` in its order, so the routes are the same to the last bit."""
        state = self._dist.get(dst)
        dist = state[0] if state is not None and src in state[0] else self._distances_to(dst, src)
        if src not in dist:
            raise UserInputError(f"no route from {src!r} to {dst!r}")
        # NOTE: this repeats _shortest's choice of the first candidate (for the "first"
        # policy only) because building on the cached tails needs the walk to stop early.
        d = dist[src] - 1
        for nxt in self._succ[src]:
            if dist.get(nxt) == d:
                break
        head = self._heads.get((src, nxt))
        if head is None:
            head = self._heads[src, nxt] = self._head(src, nxt)
        nodes, resources, lead, c, end = head
        if end == dst or dst in nodes:
            return self._walk(src, dst, dist)
        key = (end, dst)
        tail_terms = self._terms.get(key)
        if tail_terms is None:
            tail, tail_terms = self._tail(end, dst, dist)
        else:
            tail = self._routes[key]
        latency = lead  # the latency summed on from the head's sum (its terms are summed first)
        for t in tail_terms:
            latency += t
        r = self._routes[src, dst] = Route(nodes + tail.nodes, resources + tail.resources, latency, min(c, tail.capacity))
        return r

    def _tail(self, node, dst, dist) -> tuple:
        """The route from ``node`` to ``dst`` and its latency terms (cached)."""
        key = (node, dst)
        r = self._routes.get(key)
        if r is None:
            r = self._walk(node, dst, dist)
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
        """From ``src`` through ``nxt`` along the chain of two-link nodes (at most 8) to
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
            if len(s) != 2 or u not in s or len(nodes) == 8:
                break
            w = s[1] if s[0] == u else s[0]
            if w in nodes:
                break
            nodes.append(v)
            u, v = v, w
        return tuple(nodes), tuple(resources), _summed(lead), c, v

    def _walk(self, src, dst, dist) -> Route:
        """The ``first`` policy's route from ``src`` (whose distance ``dist`` knows),
        walked to the first node whose route is cached (see :meth:`_build_back`)."""
        routes, succ = self._routes, self._succ
        walk = []
        node = src
        while True:
            d = dist[node] - 1
            for nxt in succ[node]:
                if dist.get(nxt) == d:
                    break
            walk.append(node)
            if nxt == dst:
                tail, tail_terms = Route((dst,), (), 0.0, _INF), ()
                break
            if (nxt, dst) in routes:
                tail, tail_terms = self._tail(nxt, dst, dist)
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

    def _assemble(self, nodes) -> Route:
        """The route along ``nodes``: its resources (links and the switch crossings between
        them) and latency."""
        resources = []
        latency = 0.0
        for i in range(len(nodes) - 1):
            u, v = nodes[i], nodes[i + 1]
            if i > 0:
                c = self.crossing_resource.get(u)
                if c is not None:
                    resources.append(c)
                latency += self.crossing_latency.get(u, 0.0)
            resources.append(self.edge_resource[(u, v)])
            latency += self.edge_latency[(u, v)]
        cap = min(self.capacity[x] for x in resources)
        return Route(tuple(nodes), tuple(resources), latency, cap)

    def remove_edges(self, edges) -> None:
        """Take the directed edges ``edges`` out of routing (a failed link): routes are
        computed again, over what remains (their resources keep their indices)."""
        for u, v in edges:
            self._succ[u] = [w for w in self._succ[u] if w != v]
            self._pred[v] = [w for w in self._pred[v] if w != u]
        self._dist.clear()
        self._routes.clear()
        self._terms.clear()
        self._heads.clear()

    def describe(self, route: Route) -> list[dict]:
        """Per-hop description: node pairs, link type, bandwidth, latency."""
        hops = []
        for u, v in zip(route.nodes, route.nodes[1:]):
            a = self.graph.edges[u, v]
            hops.append({
                "from": u, "to": v, "link_type": a.get("link_type", "link"),
                "bandwidth": float(a["bandwidth"]), "latency": float(a["latency"]),
                "duplex": a.get("duplex", "full"),
            })
        return hops
