"""Routes that cross the same resource more than once (issue 14; the interface every
engine core must honour): the usage coefficient of a resource is its multiplicity in the
route (sum of coefficient x rate <= capacity), the latency is summed per traversal, and
per-link bytes and utilization count each traversal.

Only public interfaces are used (a Router subclass returning hand-made routes, and the
study routing of DGX-2), so these tests run unchanged against any engine core."""

import networkx as nx
import pytest

import topologies
from simcollective.network.engine import Network, SimEnvironment
from simcollective.network.routing import Route, Router
from simcollective.profiles import load_profile

C = 50e9


def chain(n=4, cap=C, lat=1e-6):
    g = nx.DiGraph()
    names = [f"x{i}" for i in range(n)]
    for i, nm in enumerate(names):
        g.add_node(nm, kind="gpu", server=0, local=i)
    for u, v in zip(names, names[1:]):
        for a, b in ((u, v), (v, u)):
            g.add_edge(a, b, bandwidth=cap, latency=lat, duplex="full", link_type="nvlink")
    return g


class HandRoutes(Router):
    """A router whose routes are given as resource lists: {(src, dst): [edge, ...]}."""

    def __init__(self, graph, table):
        super().__init__(graph)
        self.table = table

    def route(self, src, dst):
        edges = self.table.get((src, dst))
        if edges is None:
            return super().route(src, dst)
        res = tuple(self.edge_resource[e] for e in edges)
        lat = sum(self.edge_latency[e] for e in edges)
        return Route((src, dst), res, lat, min(self.capacity[r] for r in res))


def run(graph, router, flows, profile="ideal"):
    env = SimEnvironment()
    net = Network(env, graph, load_profile(profile).network, router=router)
    done = [None] * len(flows)
    for i, (s, d, size) in enumerate(flows):
        net.transfer(s, d, size, lambda f, i=i: done.__setitem__(i, env.now))
    env.run()
    return done, net


AB, BC, CD = ("x0", "x1"), ("x1", "x2"), ("x2", "x3")


def test_lone_flow_over_a_repeated_resource_gets_half_the_capacity():
    # the shared case of the interface: route [a, b, b, c], every capacity 50e9 -> 25e9
    g = chain()
    router = HandRoutes(g, {("x0", "x3"): [AB, BC, BC, CD]})
    S = 10**9
    done, net = run(g, router, [("x0", "x3", S)])
    assert done[0] == pytest.approx(4e-6 + S / 25e9, rel=1e-12)  # 4 traversals of 1 us


def test_repeated_resource_counts_bytes_and_utilization_per_traversal():
    g = chain()
    router = HandRoutes(g, {("x0", "x3"): [AB, BC, BC, CD]})
    S = 10**9
    _, net = run(g, router, [("x0", "x3", S)])
    stats = {ls.name: ls for ls in net.link_stats()}
    assert stats["x1->x2"].bytes == 2 * S
    assert stats["x0->x1"].bytes == S and stats["x2->x3"].bytes == S
    # busy for the whole transfer, and carrying 2 S bytes at capacity in that time
    assert stats["x1->x2"].bytes / stats["x1->x2"].capacity == pytest.approx(S / 25e9, rel=1e-12)


def test_repeated_resource_in_contention_hand_computed():
    # flow 1 uses x1->x2 twice, flow 2 once: 2 r1 + r2 <= C with equal levels -> C/3 each;
    # flow 2 (same size) ends at S/(C/3); flow 1 then alone at C/2 for its rest
    g = chain(lat=0.0)
    router = HandRoutes(g, {("x0", "x3"): [AB, BC, BC, CD]})
    S = 3 * 10**9
    done, _ = run(g, router, [("x0", "x3", S), ("x1", "x2", S)])
    t2 = S / (C / 3)
    assert done[1] == pytest.approx(t2, rel=1e-12)
    assert done[0] == pytest.approx(t2, rel=1e-12)  # both at C/3 until then: same size, same end


def test_repeated_resource_contention_different_sizes():
    g = chain(lat=0.0)
    router = HandRoutes(g, {("x0", "x3"): [AB, BC, BC, CD]})
    S1, S2 = 3 * 10**9, 10**9
    done, _ = run(g, router, [("x0", "x3", S1), ("x1", "x2", S2)])
    t2 = S2 / (C / 3)
    assert done[1] == pytest.approx(t2, rel=1e-12)
    assert done[0] == pytest.approx(t2 + (S1 - S2) / (C / 2), rel=1e-12)


def test_dgx2_study_route_crosses_gpu15_link_twice():
    g = topologies.build("dgx2", 1, {})
    router = Router(g, "study")
    r = router.route("n0/gpu1", "n0/gpu2")
    link15 = router.edge_resource[("n0/gpu15", "n0/nvswitch")]
    assert list(r.resources).count(link15) == 2
    assert r.latency == pytest.approx(4 * 5e-6, rel=1e-15)
    S = 10**8
    done, net = run(g, router, [("n0/gpu1", "n0/gpu2", S)])
    assert done[0] == pytest.approx(20e-6 + S / 25e9, rel=1e-12)
    stats = {ls.name: ls.bytes for ls in net.link_stats()}
    assert stats["n0/gpu15<->n0/nvswitch"] == 2 * S


def test_cm02_penalty_counts_each_traversal():
    # CM02 weights by 1/latency, with the latency summed per traversal: a 20 us flow
    # (1 -> 15 -> 2, twice on link 15) against a 10 us one (14 -> 15) on link 15:
    # 2 r1 + r2 = C with r2 = 2 r1 -> r1 = C/4, r2 = C/2
    g = topologies.build("dgx2", 1, {})
    router = Router(g, "study")
    S = 10**9
    done, _ = run(g, router, [("n0/gpu1", "n0/gpu2", S), ("n0/gpu14", "n0/gpu15", S)], "cm02")
    # flow 2 is active alone from 10 us to 20 us at 50e9 (bounded by its route)
    sent2 = C * 10e-6
    t2 = 20e-6 + (S - sent2) / (C / 2)
    assert done[1] == pytest.approx(t2, rel=1e-9)
    sent1 = (t2 - 20e-6) * C / 4
    assert done[0] == pytest.approx(t2 + (S - sent1) / (C / 2), rel=1e-9)


def test_route_capacity_counts_traversals():
    r = Router(topologies.build("dgx2", 1, {}), "study")
    assert r.route("n0/gpu1", "n0/gpu2").capacity == 25e9
    assert r.route("n0/gpu14", "n0/gpu15").capacity == 50e9
