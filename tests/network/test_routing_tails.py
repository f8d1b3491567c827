"""The ``first`` and ``dest`` policies' routes built on their next hop's cached route, and the path
parameters of routes that cross every resource once: the same figures, to the last bit, as
the route walked and summed hop by hop and the parameters computed term by term."""

import random

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.errors import UserInputError
from simcollective.network.model import NetworkModel
from simcollective.network.paths import path_parameters
from simcollective.network.routing import Router


def random_graph(rng, n, density):
    """Switches (some with a crossing capacity and latency, some GPUs) and links of
    random capacities and latencies, some one-way, some shared cables."""
    g = nx.DiGraph()
    for i in range(n):
        attrs = {"kind": rng.choice(["switch", "switch", "gpu", "nic"])}
        if attrs["kind"] != "gpu" and rng.random() < 0.5:
            attrs.update(bandwidth=rng.uniform(1.0, 10.0), latency=rng.uniform(0.0, 1e-6))
        g.add_node(i, **attrs)
    for u in range(n):
        for v in range(u + 1, n):
            if rng.random() < density:
                pairs = [(u, v), (v, u)] if rng.random() < 0.8 else [rng.choice([(u, v), (v, u)])]
                duplex = "shared" if len(pairs) == 2 and rng.random() < 0.2 else "full"
                for a, b in pairs:
                    g.add_edge(a, b, bandwidth=rng.uniform(1.0, 10.0), latency=rng.uniform(1e-7, 1e-6),
                               duplex=duplex, link_type="link")
    return g


def _walked(router, s, d):
    # the reference: the route walked by the policy's choice and summed hop by hop
    return router._assemble(router._shortest(s, d))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 14), density=st.floats(0.1, 0.7), seed=st.integers(0, 2**16), data=st.data(),
       policy=st.sampled_from(["first", "dest"]))
def test_routes_built_on_cached_tails_are_the_walked_routes(n, density, seed, data, policy):
    rng = random.Random(seed)
    g = random_graph(rng, n, density)
    pairs = data.draw(st.permutations([(s, d) for s in range(n) for d in range(n) if s != d]))
    shared, ref = Router(g, policy), Router(g, policy)
    for s, d in pairs:
        if not nx.has_path(g, s, d):
            with pytest.raises(UserInputError):
                shared.route(s, d)
            continue
        got, want = shared.route(s, d), _walked(ref, s, d)
        assert (got.nodes, got.resources, got.capacity) == (want.nodes, want.resources, want.capacity)
        assert got.latency.hex() == want.latency.hex()
    # a failed link: every route again, over what remains
    edges = list(g.edges)
    if edges:
        cut = [rng.choice(edges)]
        shared.remove_edges(cut)
        ref.remove_edges(cut)
        for s, d in pairs:
            try:
                want = _walked(ref, s, d)
            except (UserInputError, IndexError):
                with pytest.raises(UserInputError):
                    shared.route(s, d)
                continue
            got = shared.route(s, d)
            assert (got.nodes, got.resources, got.latency.hex()) == (want.nodes, want.resources, want.latency.hex())


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 10), seed=st.integers(0, 2**16), cross=st.sampled_from([0.0, 0.05]),
       sharing=st.sampled_from(["equal", "penalty"]), gamma=st.sampled_from([0.0, 4194304.0]))
def test_path_parameters_term_by_term(n, seed, cross, sharing, gamma):
    # coefficients (traversals + the cross-traffic share), rate bound, loads and weight as
    # their definitions state them, whether or not a route crosses a resource twice
    rng = random.Random(seed)
    g = random_graph(rng, n, 0.5)
    model = NetworkModel(cross_traffic=cross, sharing=sharing, weight_s=1e-7, tcp_gamma=gamma)
    router = Router(g, "first")
    cap = list(router.capacity)
    for s in range(n):
        for d in range(n):
            if s == d or not nx.has_path(g, s, d) or (cross and not nx.has_path(g, d, s)):
                continue
            p = path_parameters(router, model, cap, s, d)
            route = router.route(s, d)
            coef: dict = {}
            for r in route.resources:
                coef[r] = coef.get(r, 0.0) + 1.0
            if cross > 0:
                for r in router.route(d, s).resources:
                    coef[r] = coef.get(r, 0.0) + cross
            assert p.res == tuple(coef) and p.coef == tuple(coef.values()) and p.nres == len(coef)
            rate = min(cap[r] / a for r, a in coef.items())
            rate = min(rate, route.capacity)
            if gamma > 0:
                rate = min(rate, gamma / (2.0 * route.latency))
            assert p.maxrate == rate
            assert p.load == tuple((r, a, a * rate) for r, a in coef.items())
            assert p.coef_of == coef
            if sharing == "penalty":
                assert p.weight == 1.0 / (route.latency + sum(1e-7 / cap[r] for r in route.resources))
