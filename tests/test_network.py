"""The flow model: the worked checks of network-model.md, calibration conventions, and
property tests over random graphs and flow sets."""

import math

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcollective.network.engine import Network, SimEnvironment, Tuning, max_min_rates
from simcollective.network.routing import Route, Router
from simcollective.network.routing import Router
from simcollective.network.model import NetworkModel
from simcollective.profiles import load_profile


def line_graph(nodes, cap=1.0, lat=0.0, duplex="full"):
    g = nx.DiGraph()
    for i, n in enumerate(nodes):
        g.add_node(n, kind="gpu", server=0, local=i)
    for u, v in zip(nodes, nodes[1:]):
        for a, b in ((u, v), (v, u)):
            g.add_edge(a, b, bandwidth=cap, latency=lat, duplex=duplex, link_type="nvlink")
    return g


def run_flows(graph, flows, profile="ideal", routing="first", check=None, tuning=None):
    """flows: list of (src, dst, size, start); returns finish times in order."""
    env = SimEnvironment()
    net = Network(env, graph, load_profile(profile).network if isinstance(profile, str) else profile, routing, tuning=tuning)
    if check is not None:
        net.on_rates = lambda now, comp: check(net, now)
    done = [None] * len(flows)

    def starter(i, src, dst, size, start):
        yield env.timeout(start)
        net.transfer(src, dst, size, lambda f, i=i: done.__setitem__(i, env.now))

    for i, fl in enumerate(flows):
        env.process(starter(i, *fl))
    env.run()
    return done, net


# -- worked checks -------------------------------------------------------------------------
def test_check1_one_flow_one_link():
    g = line_graph(["x", "y"], cap=12.5e9, lat=2.6e-8)
    done, _ = run_flows(g, [("x", "y", 10**9, 0.0)])
    assert done[0] == pytest.approx(2.6e-8 + 1e9 / 12.5e9, rel=1e-15)


def test_check2_two_flows_share_a_link():
    C, l, S1, S2 = 1e9, 1e-6, 3e6, 5e6
    g = line_graph(["x", "y"], cap=C, lat=l)
    done, _ = run_flows(g, [("x", "y", S1, 0.0), ("x", "y", S2, 0.0)])
    assert done[0] == pytest.approx(l + S1 / (C / 2), rel=1e-14)
    assert done[1] == pytest.approx(l + (S1 + S2) / C, rel=1e-14)


def test_check3_three_flows_max_min_half_each():
    g = line_graph(["x", "y", "z"], cap=1.0)
    rates = {}

    def record(net, now):
        for f in net.res_flows[0] | net.res_flows[2] | net.res_flows[1] | net.res_flows[3]:
            rates[(f.src, f.dst)] = f.rate

    run_flows(g, [("x", "y", 1.0, 0), ("y", "z", 1.0, 0), ("x", "z", 1.0, 0)], check=record)
    assert rates == {("x", "y"): 0.5, ("y", "z"): 0.5, ("x", "z"): 0.5}


@pytest.mark.parametrize("P", [2, 3, 8])
def test_check4_unidirectional_ring_step_no_contention(P):
    g = nx.cycle_graph(P, create_using=nx.DiGraph)
    h = nx.DiGraph()
    for i in range(P):
        h.add_node(i, kind="gpu", server=0, local=i)
    for i in range(P):
        for a, b in ((i, (i + 1) % P), ((i + 1) % P, i)):
            h.add_edge(a, b, bandwidth=2e9 + i, latency=1e-6, duplex="full", link_type="nvlink")
    del g
    S = 4e6
    done, _ = run_flows(h, [(i, (i + 1) % P, S, 0.0) for i in range(P)])
    for i in range(P):
        assert done[i] == pytest.approx(1e-6 + S / (2e9 + i), rel=1e-14)


def test_shared_link_opposite_directions_compete_full_duplex_do_not():
    S, C = 1e6, 1e9
    shared = line_graph(["x", "y"], cap=C, duplex="shared")
    full = line_graph(["x", "y"], cap=C, duplex="full")
    flows = [("x", "y", S, 0.0), ("y", "x", S, 0.0)]
    assert run_flows(shared, flows)[0] == [pytest.approx(2 * S / C)] * 2
    assert run_flows(full, flows)[0] == [pytest.approx(S / C)] * 2


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 12), density=st.floats(0.1, 0.6), one_way=st.floats(0.0, 0.3),
       seed=st.integers(0, 2**16), policy=st.sampled_from(["first", "hash"]), data=st.data())
def test_routes_do_not_depend_on_the_order_they_are_asked_for(n, density, one_way, seed, policy, data):
    # the search from a destination stops at the source asked for and resumes for the
    # next one: every route must still be the one a router asked only for it would give,
    # and a shortest path (hop count), one-way links and unreachable pairs included
    import random

    from simcollective.errors import UserInputError

    rng = random.Random(seed)
    g = nx.DiGraph()
    g.add_nodes_from((i, {"kind": "switch"}) for i in range(n))
    for u in range(n):
        for v in range(u + 1, n):
            if rng.random() < density:
                pairs = [(u, v), (v, u)]
                if rng.random() < one_way:
                    pairs = [rng.choice(pairs)]
                for a, b in pairs:
                    g.add_edge(a, b, bandwidth=1.0, latency=0.0, duplex="full", link_type="link")
    pairs = data.draw(st.permutations([(s, d) for s in range(n) for d in range(n)]))
    shared = Router(g, policy)
    for s, d in pairs:
        alone = Router(g, policy)
        if not nx.has_path(g, s, d):
            with pytest.raises(UserInputError):
                shared.route(s, d)
            with pytest.raises(UserInputError):
                alone.route(s, d)
            continue
        path = shared.route(s, d).nodes
        assert path == alone.route(s, d).nodes
        assert len(path) - 1 == nx.shortest_path_length(g, s, d)
        assert all(g.has_edge(a, b) for a, b in zip(path, path[1:]))


def test_switch_crossing_capacity_and_latency():
    g = line_graph(["a", "s", "b"], cap=10.0, lat=1.0)
    g.nodes["s"].update(kind="switch", bandwidth=4.0, latency=0.5)
    del g.nodes["s"]["server"], g.nodes["s"]["local"]
    r = Router(g).route("a", "b")
    assert r.latency == 2.5 and r.capacity == 4.0
    done, _ = run_flows(g, [("a", "b", 8.0, 0.0)])
    assert done[0] == pytest.approx(2.5 + 2.0)


def test_late_flow_slows_an_earlier_one():
    # flow 1 alone for 1 s at C, then shares with flow 2
    C = 1.0
    g = line_graph(["x", "y"], cap=C)
    done, _ = run_flows(g, [("x", "y", 3.0, 0.0), ("x", "y", 1.0, 1.0)])
    # t=1: flow1 has 2 left; both at 1/2: flow2 ends at 3, flow1 has 1 left, ends at 4
    assert done == [pytest.approx(4.0), pytest.approx(3.0)]


# -- calibration profiles ------------------------------------------------------------------
def test_cm02_rtt_weighted_sharing():
    # two flows share link s-t; their routes have latencies 1 and 3 -> shares 3:1
    g = nx.DiGraph()
    for i, n in enumerate("abst"):
        g.add_node(n, kind="gpu", server=0, local=i)
    for u, v, lat in (("a", "s", 0.5), ("b", "s", 2.5), ("s", "t", 0.5)):
        for x, y in ((u, v), (v, u)):
            g.add_edge(x, y, bandwidth=100.0, latency=lat, duplex="full", link_type="infiniband")
    prof = NetworkModel(sharing="penalty", bound_by_route_capacity=True)
    env = SimEnvironment()
    net = Network(env, g, prof)
    seen = {}
    net.on_rates = lambda now, comp: seen.update({f.src: f.rate for f in comp})
    net.transfer("a", "t", 1e6, lambda f: None)
    net.transfer("b", "t", 1e6, lambda f: None)
    env.run(until=3.5)
    assert seen["a"] == pytest.approx(75.0) and seen["b"] == pytest.approx(25.0)


def test_tcp_window_bound_and_factors():
    g = line_graph(["x", "y"], cap=1e12, lat=1e-3)
    prof = load_profile("cm02").network
    done, _ = run_flows(g, [("x", "y", 10**8, 0.0)], profile=prof)
    bound = 4194304 / (2 * 1e-3)
    assert done[0] == pytest.approx(1e-3 + 1e8 / bound, rel=1e-12)
    smpi = load_profile("smpi").network
    done, _ = run_flows(g, [("x", "y", 10**8, 0.0)], profile=smpi)
    # latency x f_lat, data advances at rate x f_bw; bound also sees the 5% cross traffic
    # only on the reverse link, which no other flow uses here
    assert done[0] == pytest.approx(1e-3 * 11.6436 + 1e8 / (bound * 0.940694), rel=1e-12)


def test_smpi_cross_traffic_loads_reverse_route():
    C = 100.0
    g = line_graph(["x", "y"], cap=C, duplex="full")
    prof = NetworkModel(cross_traffic=0.05)
    env = SimEnvironment()
    net = Network(env, g, prof)
    rates = {}
    net.on_rates = lambda now, comp: rates.update({f.src: f.rate for f in comp})
    net.transfer("x", "y", 1e9, lambda f: None)
    net.transfer("y", "x", 1e9, lambda f: None)
    env.run(until=1.0)
    # each direction: r + 0.05 r = C
    assert rates["x"] == pytest.approx(C / 1.05) and rates["y"] == pytest.approx(C / 1.05)


def test_profile_errors(tmp_path):
    from simcollective.errors import UserInputError

    with pytest.raises(UserInputError, match="neither a built-in"):
        load_profile("nope")
    bad = tmp_path / "p.toml"
    bad.write_text('[network]\nsharing = "equal"\nwindow = 3\n')
    with pytest.raises(UserInputError, match="unknown key 'network.window'"):
        load_profile(str(bad))
    bad.write_text("[network\n")
    with pytest.raises(UserInputError, match="not valid TOML"):
        load_profile(str(bad))


def test_profile_file_copy_is_equivalent(tmp_path):
    from importlib import resources

    text = resources.files("simcollective.profiles").joinpath("smpi.toml").read_text()
    p = tmp_path / "mine.toml"
    p.write_text(text)
    assert load_profile(str(p)) == load_profile("smpi")


# -- property tests --------------------------------------------------------------------------
def _capacity_check(net, now):
    for r, flows in enumerate(net.res_flows):
        if flows:
            load = 0.0
            for f in flows:
                load += f.coef[f.res.index(r)] * f.rate
            assert load <= net.cap[r] * (1 + 1e-9), (r, load, net.cap[r])


@st.composite
def graph_and_flows(draw):
    n = draw(st.integers(3, 7))
    g = nx.DiGraph()
    for i in range(n):
        g.add_node(i, kind="gpu", server=0, local=i)
    # a random spanning tree plus extra edges keeps it connected
    for i in range(1, n):
        j = draw(st.integers(0, i - 1))
        extra = [(i, j)]
        if draw(st.booleans()):
            extra.append((i, draw(st.integers(0, n - 1))))
        for a, b in extra:
            if a == b or g.has_edge(a, b):
                continue
            cap = draw(st.sampled_from([1.0, 2.0, 5.0, 10.0]))
            lat = draw(st.sampled_from([0.0, 0.1, 1.0]))
            dup = draw(st.sampled_from(["full", "shared"]))
            g.add_edge(a, b, bandwidth=cap, latency=lat, duplex=dup, link_type="nvlink")
            g.add_edge(b, a, bandwidth=cap, latency=lat, duplex=dup, link_type="nvlink")
    flows = draw(st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.0, 20.0), st.floats(0.0, 3.0)),
        min_size=1, max_size=12))
    flows = [(s, d, S, t) for s, d, S, t in flows if s != d]
    return g, flows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph_and_flows(), st.sampled_from(["ideal", "cm02", "smpi"]), st.sampled_from(["first", "hash"]))
def test_every_flow_ends_and_no_link_is_oversubscribed(gf, profile, routing):
    g, flows = gf
    done, net = run_flows(g, flows, profile=profile, routing=routing, check=_capacity_check)
    assert all(t is not None and math.isfinite(t) for t in done)
    assert net.flows_completed == len(flows) and net.active_count == 0
    for (s, d, S, t0), t in zip(flows, done):
        r = net.route(s, d)
        # never faster than alone on the route
        assert t >= t0 + r.latency * net.model.latency_factor(S) - 1e-9


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(1.0, 1e6), min_size=1, max_size=8), st.floats(1.0, 1e3), st.floats(0.0, 1e-3),
       st.integers(1, 4))
def test_flows_on_one_route_match_processor_sharing_closed_form(sizes, C, lat, hops):
    g = line_graph(list(range(hops + 1)), cap=C, lat=lat)
    done, _ = run_flows(g, [(0, hops, S, 0.0) for S in sizes])
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    s = sorted(sizes)
    n = len(s)
    for k, i in enumerate(order):
        expected = hops * lat + (sum(s[: k + 1]) + (n - k - 1) * s[k]) / C
        assert done[i] == pytest.approx(expected, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_max_min_solution_is_feasible_and_every_flow_has_a_bottleneck(data):
    m = data.draw(st.integers(1, 8))
    n = data.draw(st.integers(1, 6))
    caps = [data.draw(st.floats(0.5, 10.0)) for _ in range(n)]
    w = [data.draw(st.floats(0.1, 5.0)) for _ in range(m)]
    b = [data.draw(st.floats(0.1, 20.0)) for _ in range(m)]
    fi, rj, av = [], [], []
    for i in range(m):
        rs = data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=n))
        for r in sorted(rs):
            fi.append(i)
            rj.append(r)
            av.append(data.draw(st.sampled_from([1.0, 1.05, 0.05])))
    rates = max_min_rates(w, b, fi, rj, av, caps)
    load = [0.0] * n
    for i, r, a in zip(fi, rj, av):
        load[r] += a * rates[i]
    for r in range(n):
        assert load[r] <= caps[r] * (1 + 1e-9)
    for i in range(m):
        assert rates[i] <= b[i] * (1 + 1e-12)
        if rates[i] >= b[i] * (1 - 1e-9):
            continue
        # weighted bottleneck: a saturated resource on which i has the largest rate/weight
        ok = False
        for e, (fi_e, r) in enumerate(zip(fi, rj)):
            if fi_e != i or load[r] < caps[r] * (1 - 1e-9):
                continue
            others = [rates[j] / w[j] for j, rr in zip(fi, rj) if rr == r]
            if rates[i] / w[i] >= max(others) * (1 - 1e-9):
                ok = True
        assert ok, (i, rates, load, caps)


def _random_max_min_problem(rng, groups, ties):
    """Independent groups of flows over their own resources (the racks of a cluster),
    with exact ties (unit capacities, weights and coefficients) or random figures."""
    w, b, fi, rj, av, caps = [], [], [], [], [], []
    for _ in range(groups):
        n0, m0 = len(caps), len(w)
        n = int(rng.integers(1, 6))
        caps += [1.0] * n if ties else rng.uniform(0.5, 10.0, n).tolist()
        for i in range(int(rng.integers(1, 12))):
            w.append(1.0 if ties else float(rng.uniform(0.1, 5.0)))
            b.append(float(rng.choice([0.25, 2.0, 50.0])) if ties else float(rng.uniform(0.1, 20.0)))
            for r in sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist()):
                fi.append(m0 + i)
                rj.append(n0 + r)
                av.append(1.0 if ties else float(rng.choice([1.0, 1.05, 0.05])))
    return w, b, fi, rj, av, caps


@pytest.mark.parametrize("ties", [True, False])
def test_independent_groups_solved_together_match_solved_apart(ties):
    # the compiled filling raises all groups together, one level per pass: each group's
    # rates must be those it gets alone (to the level tolerance, which may fix a group's
    # level together with another group's within 1e-12)
    import numpy as np

    rng = np.random.default_rng(7)
    levels = []
    for _ in range(200):
        groups = [_random_max_min_problem(rng, 1, ties) for _ in range(int(rng.integers(1, 9)))]
        w, b, fi, rj, av, caps, apart = [], [], [], [], [], [], []
        for gw, gb, gfi, grj, gav, gcaps in groups:
            m0, n0 = len(w), len(caps)
            w += gw
            b += gb
            fi += [m0 + i for i in gfi]
            rj += [n0 + j for j in grj]
            av += gav
            caps += gcaps
            apart += max_min_rates(gw, gb, gfi, grj, gav, gcaps).tolist()
        together = max_min_rates(w, b, fi, rj, av, caps)
        assert together.tolist() == pytest.approx(apart, rel=1e-11)
        levels.append(len(set(np.round(together / np.array(w), 9))))
    assert max(levels) > 4


def test_max_min_without_binding_resources_gives_the_bounds():
    assert max_min_rates([1.0, 2.0], [3.0, 4.0], [], [], [], []).tolist() == [3.0, 4.0]


def test_batched_simultaneous_flows_use_one_recomputation():
    P = 64
    h = nx.DiGraph()
    for i in range(P):
        h.add_node(i, kind="gpu", server=0, local=i)
    for i in range(P):
        for a, b in ((i, (i + 1) % P), ((i + 1) % P, i)):
            h.add_edge(a, b, bandwidth=1e9, latency=1e-6, duplex="full", link_type="nvlink")
    done, net = run_flows(h, [(i, (i + 1) % P, 1e6, 0.0) for i in range(P)])
    assert len(set(done)) == 1
    # all P flows activate at the same instant: one batched recomputation (each flow is
    # its own component, so each takes its bound without solving), then one completion batch
    assert net.recomputations == 1


def test_big_components_solved_vectorized_match_processor_sharing():
    # 700 flows on one route: more than 2 x _BIG_COMPONENT active flows, so rates come
    # from the vectorized all-active-flows solver; completion times follow the closed form
    import random

    rnd = random.Random(3)
    sizes = [float(rnd.randint(1, 10**6)) for _ in range(700)]
    C, lat = 1e9, 1e-6
    g = line_graph(["a", "b", "c"], cap=C, lat=lat)
    done, net = run_flows(g, [("a", "c", S, 0.0) for S in sizes])
    s = sorted(sizes)
    n = len(s)
    prefix = 0.0
    expected = {}
    for k, S in enumerate(s):
        prefix += S
        expected.setdefault(S, 2 * lat + (prefix + (n - k - 1) * S) / C)
    for S, t in zip(sizes, done):
        assert t == pytest.approx(expected[S], rel=1e-9)


# -- the solver paths for many active flows give the same rates --------------------------
@st.composite
def busy_graph_and_flows(draw):
    g, flows = draw(graph_and_flows())
    n = g.number_of_nodes()
    more = draw(st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.5, 20.0), st.floats(0.0, 3.0)),
        min_size=0, max_size=25))
    return g, flows + [(s, d, S, t) for s, d, S, t in more if s != d]


@pytest.mark.parametrize("mode", ["bulk", "mixed"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(busy_graph_and_flows(), st.sampled_from(["ideal", "cm02", "smpi"]))
def test_array_mode_matches_the_component_solver(mode, gf, profile):
    # thresholds lowered so that a handful of flows takes the paths meant for thousands:
    # the array store with its cutoff and bound fitting ("bulk"), and moving in and out
    # of it ("mixed")
    g, flows = gf
    expected, _ = run_flows(g, flows, profile=profile)
    tuning = Tuning(bulk_min=0, walk_limit=0, refresh=3, bulk_off={"bulk": 0, "mixed": 2}[mode])
    got, net = run_flows(g, flows, profile=profile, tuning=tuning)
    again, _ = run_flows(g, flows, profile=profile, tuning=tuning)
    assert net.flows_completed == len(flows) and net.active_count == 0
    for t, e in zip(got, expected):
        assert t == pytest.approx(e, rel=1e-9, abs=1e-12)
    assert again == got  # bit-identical from run to run


# -- repeated resources in a route (shared interface with the study routing) ------------------
class _FixedRouter(Router):
    """A router that returns given routes (resource tuples) for some pairs."""

    def __init__(self, graph, fixed, lat):
        super().__init__(graph)
        self.fixed = fixed
        self.lat = lat

    def route(self, src, dst):
        res = self.fixed.get((src, dst))
        if res is None:
            return super().route(src, dst)
        # latency summed per traversal (what the router of such routes must do)
        return Route((src, dst), res, self.lat * len(res), min(self.capacity[r] for r in res))


def _hairpin_net(fixed, tuning=None, lat=0.0):
    g = line_graph(["a", "b", "c", "d"], cap=50e9)
    env = SimEnvironment()
    net = Network(env, g, load_profile("ideal").network, router=_FixedRouter(g, fixed, lat), tuning=tuning)
    return env, net


def test_route_crossing_a_resource_twice_uses_it_twice():
    # the shared case: a lone flow whose route is [a, b, b, c] (every capacity 50e9) gets
    # 25e9; its latency counts every traversal, its bytes count twice on b
    env, net = _hairpin_net({}, lat=1e-6)
    ra, rb, rc = net.router.edge_resource[("a", "b")], net.router.edge_resource[("b", "c")], net.router.edge_resource[("c", "d")]
    net.router.fixed[("a", "d")] = (ra, rb, rb, rc)
    assert net.path_parameters("a", "d").maxrate == 25e9
    assert net.path_parameters("a", "d").coef_of[rb] == 2.0
    done = []
    net.transfer("a", "d", 10**9, lambda f: done.append(env.now))
    env.run()
    assert done == [4e-6 + 1e9 / 25e9]
    nbytes = net.res_bytes
    assert (nbytes[ra], nbytes[rb], nbytes[rc]) == (10**9, 2 * 10**9, 10**9)


@pytest.mark.parametrize("arrays", [False, True])
def test_repeated_resource_shares_by_multiplicity(arrays):
    # flow 1 crosses b twice, flow 2 once: 2 x1 + x2 <= 50e9, max-min x1 = x2 = 50e9 / 3,
    # in the per-flow solve and in the array store alike
    tuning = Tuning(bulk_min=0, walk_limit=0, bulk_off=0) if arrays else None
    env, net = _hairpin_net({}, tuning)
    ra, rb = net.router.edge_resource[("a", "b")], net.router.edge_resource[("b", "c")]
    net.router.fixed[("a", "c")] = (ra, rb, rb)
    seen = []
    net.on_rates = lambda now, comp: seen.extend((f.src, f.rate) for f in comp)
    S = 10**9
    done = {}
    net.transfer("a", "c", S, lambda f: done.setdefault("hairpin", env.now))
    net.transfer("b", "c", S, lambda f: done.setdefault("plain", env.now))
    env.run()
    x = 50e9 / 3
    assert ("a", pytest.approx(x, rel=1e-15)) in seen and ("b", pytest.approx(x, rel=1e-15)) in seen
    # both send S at x until the first ends; the hairpin then has 25e9, the other 50e9
    assert done["hairpin"] == done["plain"] == pytest.approx(S / x, rel=1e-12)
    assert net.modes["arrays"] > 0 if arrays else net.modes["component"] > 0


# -- observers never change the solver path -------------------------------------------------
def test_traced_and_untraced_runs_are_bit_identical_in_every_mode():
    # a busy permutation on a small oversubscribed fat-tree, thresholds set so that the
    # run uses every mode: new flows at their bounds, component solves, the array store
    # (entered, left, its solves and its bound fitting); recording series and on_rates
    # must not change a single bit of the results or the way they are found
    import random

    import topologies

    g = topologies.fat_tree(16, oversubscription=3.0)
    gpus = topologies.gpus(g)
    rnd = random.Random(5)
    flows = [(gpus[i], gpus[rnd.randrange(12)], float(rnd.randint(1, 4) * 10**6), rnd.choice([0.0, 1e-4, 3e-4]))
             for i in range(12) for _ in range(3)]
    flows = [f for f in flows if f[0] != f[1]]
    flows += [(gpus[12], gpus[13], 1e5, 4.1e-4), (gpus[14], gpus[15], 1e5, 4.5e-4)]  # idle hosts, busy network
    flows += [(gpus[0], gpus[1], 1e5, 2e-2), (gpus[2], gpus[3], 1e5, 2e-2)]  # alone, late
    tuning = Tuning(bulk_min=8, walk_limit=4, bulk_off=6)
    plain, net0 = run_flows(g, flows, profile="smpi", tuning=tuning)
    seen = []

    def check(net, now):
        seen.append(now)

    env = SimEnvironment()
    net1 = Network(env, g, load_profile("smpi").network, tuning=tuning)
    net1.series = {}
    rates = []
    net1.on_rates = lambda now, comp: rates.extend(f.rate for f in comp)
    traced = [None] * len(flows)

    def starter(i, src, dst, size, start):
        yield env.timeout(start)
        net1.transfer(src, dst, size, lambda f, i=i: traced.__setitem__(i, env.now))

    for i, fl in enumerate(flows):
        env.process(starter(i, *fl))
    env.run()
    assert traced == plain
    assert net1.modes == net0.modes and net1.recomputations == net0.recomputations
    assert all(net0.modes[k] > 0 for k in net0.modes), net0.modes
    assert rates and all(r > 0 for r in rates)
    caps = {name: c for name, c in zip(net1.router.resource_name, net1.cap)}
    for name, pts in net1.link_series().items():
        assert all(load <= caps[name] * (1 + 1e-9) for _, load in pts)


def test_network_package_keeps_files_and_functions_small():
    # issue 17: one idea per file; no file over 400 lines, no function over 60 lines
    import ast
    import pathlib

    import simcollective.network as pkg

    for p in sorted(pathlib.Path(pkg.__file__).parent.glob("*.py")):
        text = p.read_text()
        assert text.count("\n") <= 400, p.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno < 60, (p.name, node.name)


def test_kernels_run_as_plain_python_with_the_jit_disabled():
    # one code path: NUMBA_DISABLE_JIT=1 runs the same kernels as Python, with the same
    # results (a run through the per-flow solve and the array store, entered and left)
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, random, topologies\n"
        "from simcollective.network.engine import Network, SimEnvironment, Tuning\n"
        "from simcollective.profiles import load_profile\n"
        "import numba\n"
        "g = topologies.fat_tree(16, oversubscription=3.0); gp = topologies.gpus(g)\n"
        "env = SimEnvironment(); rnd = random.Random(2)\n"
        "net = Network(env, g, load_profile('cm02').network, tuning=Tuning(bulk_min=6, walk_limit=3, bulk_off=4))\n"
        "out = []\n"
        "for i in range(14):\n"
        "    net.transfer(gp[i], gp[14 + i % 2], 10**6 * (1 + i % 3), lambda f: out.append((f.seq, env.now)))\n"
        "env.run()\n"
        "print(json.dumps([numba.config.DISABLE_JIT, sorted(out), net.modes]))\n"
    )
    runs = []
    for disable in ("1", "0"):
        env = dict(os.environ, NUMBA_DISABLE_JIT=disable)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout))
    (jit_off, plain, modes), (jit_on, compiled, modes2) = runs
    assert jit_off and not jit_on
    assert plain == compiled and modes == modes2 and modes["arrays"] > 0


def test_array_store_keeps_busy_time_and_bytes_like_the_per_flow_mode():
    # in array mode the per-resource bookkeeping (live flows per resource, busy time) is
    # the store's: link statistics must be those of the same run in per-flow mode, whether
    # the run ends inside the store (bulk_off=0) or after leaving it
    import random

    import topologies

    g = topologies.fat_tree(16, oversubscription=3.0)
    gpus = topologies.gpus(g)
    rnd = random.Random(11)
    flows = [(gpus[i], gpus[rnd.randrange(16)], float(rnd.randint(1, 4) * 10**6), rnd.choice([0.0, 1e-4, 5e-3]))
             for i in range(16) for _ in range(3)]
    flows = [f for f in flows if f[0] != f[1]]
    _, ref = run_flows(g, flows, profile="cm02")
    assert ref.modes["arrays"] == 0
    expected = {ls.name: (ls.bytes, ls.busy_time) for ls in ref.link_stats()}
    for bulk_off in (0, 6):
        _, net = run_flows(g, flows, profile="cm02", tuning=Tuning(bulk_min=4, walk_limit=2, bulk_off=bulk_off))
        assert net.modes["arrays"] > 0 and (net.modes["leave"] > 0) == (bulk_off > 0)
        got = {ls.name: (ls.bytes, ls.busy_time) for ls in net.link_stats()}
        assert got.keys() == expected.keys()
        for name, (nbytes, busy) in expected.items():
            assert got[name][0] == nbytes
            assert got[name][1] == pytest.approx(busy, rel=1e-9, abs=1e-15), name


def test_latency_factor_fixed_per_path_and_size_dependent_per_message():
    """The latency factor is folded into each path when it does not depend on the size
    (``Path.lat``) and applied per message when it does: both give latency x f_lat(size)
    exactly (the same float product), and a size-dependent factor is never cached."""
    import dataclasses

    g = line_graph(["x", "y"], cap=1e9, lat=1e-3)
    fixed = dataclasses.replace(load_profile("ideal").network, lat_factors=(3.0,))
    done, net = run_flows(g, [("x", "y", 10**6, 0.0)], profile=fixed)
    path = net.path_parameters("x", "y")
    assert path.lat == 1e-3 * 3.0
    assert done[0] == 1e-3 * 3.0 + 10**6 / 1e9
    by_size = dataclasses.replace(load_profile("ideal").network, lat_thresholds=(0.0, 1000.0), lat_factors=(2.0, 5.0))
    done, net = run_flows(g, [("x", "y", 100, 0.0), ("x", "y", 10**6, 1.0)], profile=by_size)
    assert net.path_parameters("x", "y").lat is None
    assert done[0] == 1e-3 * 2.0 + 100 / 1e9
    assert done[1] == 1.0 + 1e-3 * 5.0 + 10**6 / 1e9
