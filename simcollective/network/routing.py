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

import networkx as nx

from ..errors import UserInputError
from .route_tails import CachedRoutes, Route

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


class Router(CachedRoutes):
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
        self._edge_resources(graph)
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
        # sorted successor lists (by node order) for deterministic next-hop choice, and
        # predecessor lists for the breadth-first search from each destination
        # NOTE: read from the graph's adjacency dicts (NetworkX's ``_succ`` and ``_pred``),
        # 5 times faster than its per-node views at 50,000 nodes
        order = self.index.__getitem__
        self._succ = {n: sorted(nbrs, key=order) for n, nbrs in graph._succ.items()}
        self._pred = {n: list(nbrs) for n, nbrs in graph._pred.items()}
        self._dist: dict[object, tuple] = {}  # per destination: (distances so far, search queue)
        self._routes: dict[tuple, Route] = {}
        # latency terms (link and crossing latencies in path order) of the routes the
        # ``first`` and ``dest`` policies built, for the routes built on them (:mod:`.route_tails`)
        self._terms: dict[tuple, tuple] = {}
        self._heads: dict[tuple, tuple] = {}  # (source, next hop) -> the head of its routes
        self._dest_numbers = None  # the destinations' D-mod-k numbers (``dest``), made on first use
        self._study = None
        if policy == "study":
            from .study_routing import StudyRoutes

            self._study = StudyRoutes(graph, self)

    def _edge_resources(self, graph) -> None:
        """A resource per directed edge (one per shared cable, both its edges), its latency,
        and the flow cap of an edge with ``flow_bandwidth``."""
        capacity, names, types = self.capacity, self.resource_name, self.resource_type
        edge_resource, edge_latency, flow_cap = self.edge_resource, self.edge_latency, self.flow_cap
        shared: dict[frozenset, int] = {}
        for u, v, attrs in graph.edges(data=True):
            hop = (u, v)   # one key for both tables
            edge_latency[hop] = float(attrs["latency"])
            if attrs.get("duplex", "full") == "shared":
                key = frozenset((u, v))
                rid = shared.get(key)
                if rid is None:
                    rid = shared[key] = self._new_resource(attrs["bandwidth"], f"{u}<->{v}", attrs.get("link_type", "link"))
            else:
                rid = len(capacity)
                capacity.append(float(attrs["bandwidth"]))
                names.append(f"{u}->{v}")
                types.append(attrs.get("link_type", "link"))
            edge_resource[hop] = rid
            if "flow_bandwidth" in attrs:
                flow_cap[rid] = min(float(attrs["flow_bandwidth"]), flow_cap.get(rid, float("inf")))

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
        lookups quadratic in the number of hosts (1 s of a 1024-host ring).

        When the search takes the first node of a level ``L`` in a call, every node of
        level ``L`` is known, so a ``src`` not among them with a successor among them is at
        ``L + 1``: it is given its distance then (queued after the nodes found so far, in
        breadth-first order), without searching level ``L`` for it: a NIC-to-NIC search
        across the spines of a rail fabric stops before the level that holds every NIC
        (2048 DGX H100 nodes: 1 M nodes found for 16,384 destinations, 15 M without)."""
        state = self._dist.get(dst)
        if state is None:
            state = self._dist[dst] = ({dst: 0}, deque([dst]))
        dist, queue = state
        pred, near = self._pred, self._succ.get(src, ())
        level = -1
        while queue and src not in dist:
            v = queue.popleft()
            dv = dist[v]
            if dv != level:   # the first node of its level in this call: the level is known
                level = dv
                if dv in map(dist.get, near):   # a successor of src on this level
                    queue.appendleft(v)
                    dist[src] = dv + 1
                    queue.append(src)
                    break
            dv += 1
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
        elif self.policy in ("first", "dest"):   # the next hop depends on the node and destination only
            return self._cached_route(src, dst)
        else:
            r = self._assemble(self._shortest(src, dst))
        self._routes[key] = r
        return r

    def _spread(self, src, dst) -> int:
        """Which of ``k`` equal next hops a route takes: the one at ``spread mod k``."""
        if self.policy == "dest":
            if self._dest_numbers is None:  # numbered on first use: only dest routing needs them
                from .dmodk import destination_numbers

                self._dest_numbers = destination_numbers(self.graph)
            return self._dest_numbers[dst]
        return zlib.crc32(f"{src}|{dst}".encode()) if self.policy == "hash" else 0

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
        spread = self._spread(src, dst)
        nodes = [src]
        node = src
        while node != dst:
            node = self._next_hop(node, dist, spread)
            nodes.append(node)
        return nodes

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
