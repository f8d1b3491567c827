"""``--routing study``: the routes SimGrid computed for the study's platform files.

The study's platform files (``routing='Floyd'``) declare a route only between adjacent
elements and let SimGrid's Floyd-Warshall find every other route, ties and all (on
DGX-2, routes were declared only towards GPU 15). This module replays that computation on this
project's graphs of the study's machines (``abci``, ``dgx1``, ``dgx2``):

* **declared routes** (symmetric): one per cable of the graph, except inside a DGX-2
  node, where the study's generator declared only GPU i <-> GPU 15 (the node's last GPU)
  as ``[GPU i's NVSwitch link, GPU 15's NVSwitch link]``;
* **cost** of a declared route = its number of links, where a switch crossing is a link
  inside the declared route *into* that switch: 1 for GPU-GPU (NVLink) and GPU-PLX, 2 for
  any hop into or out of a network switch (leaf, FBB, spine, root) and for DGX-2's
  GPU i <-> GPU 15;
* **the crossing** of a network switch belongs to the declared routes between it and the
  level below (PLX -> leaf = [cable, leaf crossing], leaf -> FBB = [cable, FBB crossing],
  and the same reversed), so a route that goes in and out of a switch through two such
  hops (PLX -> leaf -> PLX, leaf -> FBB -> leaf) pays that crossing twice, as SimGrid
  does (ABCI PLX0 -> leaf0 -> PLX0 of another node: 15.232 us);
* **Floyd-Warshall as SimGrid runs it**: elements in declaration order (the builders'
  insertion order: per node its GPUs then its PLX switches, then the fabric); for each
  intermediate c, source a, destination b, update when the path through c is strictly
  cheaper (or none was known), copying the predecessor pred[a][b] = pred[c][b]; the path
  is rebuilt backwards from the destination. Equal-cost alternatives therefore resolve
  by declaration order, not by load (on ABCI every cost-7 pair of nodes on the same
  leaves goes through both nodes' PLX0 ports).

Routes may list a resource more than once (DGX-2: i -> 15 -> j crosses GPU 15's link
twice): the engine charges it once per traversal (coefficient = multiplicity), and the
latency is summed per traversal.

These are artefacts of the study's platform files, not properties of the hardware; the
default routing (``first``) routes the same graphs as built.
"""

from __future__ import annotations

import numpy as np

from ..errors import UserInputError

__all__ = ["StudyRoutes", "STUDY_TOPOLOGIES", "MAX_ELEMENTS"]

#: Graph names (``graph.graph["name"]``) whose platform files the study generated.
STUDY_TOPOLOGIES = ("abci", "dgx1", "dgx2")
#: Floyd-Warshall is cubic in the number of elements: a bound that keeps it to seconds.
MAX_ELEMENTS = 3000
#: Height of a switch level: a hop between two elements carries the crossing of the higher.
_LEVEL_HEIGHT = {"leaf": 1, "fbb": 2, "agg": 2, "spine": 3, "core": 3, "root": 3}


class StudyRoutes:
    """SimGrid Floyd routes over the study's declared routes for one graph.

    Parameters
    ----------
    graph : networkx.DiGraph
        A graph of the study's machines (``abci``, ``dgx1`` or ``dgx2``, preset or file).
    router : simcollective.network.routing.Router
        Its resource table (edge and crossing resources).
    """

    def __init__(self, graph, router):
        name = graph.graph.get("name")
        if name not in STUDY_TOPOLOGIES:
            raise UserInputError(
                f"--routing study replays the study's platform files, which exist for "
                f"{', '.join(STUDY_TOPOLOGIES)} only; topology {name!r} is not one of them")
        self.router = router
        kinds = {}
        for n, a in graph.nodes(data=True):
            kind = a.get("kind")
            if kind == "switch" and a.get("level") not in _LEVEL_HEIGHT:
                raise UserInputError(
                    f"--routing study: switch {n!r} has level {a.get('level')!r}; the study's "
                    f"routes need one of {', '.join(_LEVEL_HEIGHT)}")
            if kind not in ("gpu", "pcie_switch", "switch", "nvswitch") or \
                    (kind == "nvswitch" and name != "dgx2"):
                raise UserInputError(
                    f"--routing study: node {n!r} of kind {kind!r} has no counterpart in the "
                    f"study's {name} platform file")
            kinds[n] = kind
        self.kinds = kinds
        self.levels = {n: _LEVEL_HEIGHT[a["level"]] for n, a in graph.nodes(data=True) if kinds[n] == "switch"}
        # the elements SimGrid knows (a DGX-2 node's NVSwitch is not one: its links sit
        # inside the declared GPU routes), in declaration order
        self.elements = [n for n in graph.nodes if kinds[n] != "nvswitch"]
        if len(self.elements) > MAX_ELEMENTS:
            raise UserInputError(
                f"--routing study computes all-pairs routes (Floyd-Warshall) over at most "
                f"{MAX_ELEMENTS} network elements; this topology has {len(self.elements)}")
        self.index = {n: i for i, n in enumerate(self.elements)}
        # declared routes: (u, v) -> (graph node path u .. v, cost)
        self.hops: dict[tuple, tuple] = {}
        for u, v in graph.edges:
            if kinds[u] == "nvswitch" or kinds[v] == "nvswitch":
                continue
            cost = 2 if (kinds[u] == "switch" or kinds[v] == "switch") else 1
            self.hops[(u, v)] = ((u, v), cost)
        if name == "dgx2":
            self._declare_dgx2(graph)
        self._floyd()
        self._cache: dict = {}

    def _declare_dgx2(self, graph) -> None:
        """The study's DGX-2 generator: GPU i <-> the node's last GPU only, through the
        node's NVSwitch links (cost 2)."""
        for sw in (n for n in graph.nodes if self.kinds[n] == "nvswitch"):
            gpus = [g for g in graph.predecessors(sw) if self.kinds[g] == "gpu"]
            if not gpus:
                continue
            last = max(gpus, key=lambda g: graph.nodes[g].get("local", 0))
            for g in gpus:
                if g != last:
                    self.hops[(g, last)] = ((g, sw, last), 2)
                    self.hops[(last, g)] = ((last, sw, g), 2)

    def _floyd(self) -> None:
        n = len(self.elements)
        idx = self.index
        cost = np.full((n, n), np.inf)
        pred = np.full((n, n), -1, dtype=np.int32)
        for (u, v), (_, c) in self.hops.items():
            a, b = idx[u], idx[v]
            cost[a, b] = c
            pred[a, b] = a
        # SimGrid's loop, one intermediate at a time: for a fixed c, row c and column c
        # cannot change (every cost is positive), so updating all (a, b) at once is the
        # same as SimGrid's a-then-b loop
        for c in range(n):
            through = cost[:, c, None] + cost[None, c, :]
            better = through < cost  # strictly cheaper, or none known (inf)
            better[c, :] = False
            better[:, c] = False
            if better.any():
                cost[better] = through[better]
                rows, cols = np.nonzero(better)
                pred[rows, cols] = pred[c, cols]
        self.cost = cost
        self.pred = pred

    def hop_path(self, src, dst) -> list:
        """The declared routes (their node tuples) that make up src -> dst, in order."""
        a = self.index[src]
        cur = self.index[dst]
        hops = []
        while cur != a:
            p = int(self.pred[a, cur])
            if p < 0:
                raise UserInputError(f"no route from {src!r} to {dst!r} in the study's declared routes")
            hops.append(self.hops[(self.elements[p], self.elements[cur])][0])
            cur = p
        return hops[::-1]

    def resources(self, src, dst) -> tuple:
        """(node path, resources in path order, latency) of the route src -> dst."""
        key = (src, dst)
        got = self._cache.get(key)
        if got is not None:
            return got
        r = self.router
        nodes = [src]
        resources = []
        latency = 0.0
        for hop in self.hop_path(src, dst):
            u, v = hop[0], hop[-1]
            for x, y in zip(hop, hop[1:]):
                resources.append(r.edge_resource[(x, y)])
                latency += r.edge_latency[(x, y)]
            # the crossing of the higher network switch of a declared hop
            hu, hv = self.levels.get(u, 0), self.levels.get(v, 0)
            if hu or hv:
                sw = u if hu > hv else v
                c = r.crossing_resource.get(sw)
                if c is not None:
                    resources.append(c)
                latency += r.crossing_latency.get(sw, 0.0)
            nodes.extend(hop[1:])
        got = self._cache[key] = (tuple(nodes), tuple(resources), latency)
        return got
