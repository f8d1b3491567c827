"""Routing: routes independent of the order asked, switch crossings."""

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.network.routing import Router
from tests.conftest import line_graph, run_flows


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


def test_a_route_through_given_nics_and_max_min_over_them():
    # 2 x dgx-h100 with 2 NICs per GPU: the shortest route takes GPU 0's first NIC; via names the other
    from simcollective.network.engine import Network, SimEnvironment
    from simcollective.network.routing import nics_of
    from simcollective.profiles import load_profile
    from topologies import dgx_h100

    G = dgx_h100(2, nics_per_node=16, nic_bandwidth=5e9)
    router = Router(G)
    assert nics_of(G, "n0/gpu0") == ["n0/nic0", "n0/nic1"] and nics_of(G, "n1/gpu7") == ["n1/nic14", "n1/nic15"]
    assert router.path("n0/gpu0", "n1/gpu0")[2] == "n0/nic0"
    r = router.route("n0/gpu0", "n1/gpu0", via=("n0/nic1", "n1/nic1"))
    assert r.nodes == ("n0/gpu0", "n0/plx0", "n0/nic1", "su0/leaf1", "n1/nic1", "n1/plx0", "n1/gpu0")
    assert r.latency == pytest.approx(router.route("n0/gpu0", "n1/gpu0").latency, abs=1e-15)   # same hops
    # two 64 MB flows GPU 0 -> GPU 0: over one NIC they share its 5 GB/s, over two each has one
    for vias, expect in ((("n0/nic0", "n1/nic0"), ("n0/nic0", "n1/nic0")), 2 * 64e6 / 5e9), \
                        ((("n0/nic0", "n1/nic0"), ("n0/nic1", "n1/nic1")), 64e6 / 5e9):
        env = SimEnvironment()
        net = Network(env, G, load_profile("ideal").network)
        done = []
        for via in vias:
            net.transfer("n0/gpu0", "n1/gpu0", int(64e6), lambda f: done.append(env.now), via=via)
        env.run()
        lat = router.route("n0/gpu0", "n1/gpu0").latency
        assert done == pytest.approx([lat + expect] * 2, rel=1e-12)


def test_a_gpu_listing_a_nic_that_is_not_one_is_refused_in_one_line():
    from simcollective.errors import UserInputError
    from simcollective.network.routing import nics_of
    from topologies import dgx_h100

    G = dgx_h100(1)
    G.nodes["n0/gpu0"]["nics"] = "n0/nic0,n0/plx0"
    with pytest.raises(UserInputError, match="GPU 'n0/gpu0' lists 'n0/plx0' among its NICs"):
        nics_of(G, "n0/gpu0")
    del G.nodes["n0/gpu0"]["nics"]
    assert nics_of(G, "n0/gpu0") == ["n0/nic0"]


def _with_full_distances(g, policy, dsts):
    """A router given every destination's complete hop distances (NetworkX's search): the
    routes its partial searches must give."""
    from collections import deque

    ref = Router(g, policy)
    for d in dsts:
        ref._dist[d] = (dict(nx.single_target_shortest_path_length(g, d)), deque())
    return ref


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 14), density=st.floats(0.1, 0.5), seed=st.integers(0, 2**16),
       policy=st.sampled_from(["first", "hash"]), data=st.data())
def test_routes_are_those_of_the_complete_distances(n, density, seed, policy, data):
    # the search stops at a source whose successor is on the last complete level: the
    # routes are still those that the complete distances give, whatever the order asked
    import random

    from simcollective.errors import UserInputError

    rng = random.Random(seed)
    g = nx.gnp_random_graph(n, density, seed=rng.randrange(2**16), directed=True)
    nx.set_node_attributes(g, "switch", "kind")
    for u, v, a in g.edges(data=True):
        a.update(bandwidth=1.0, latency=0.0, duplex="full", link_type="link")
    ref, router = _with_full_distances(g, policy, range(n)), Router(g, policy)
    for s, d in data.draw(st.permutations([(s, d) for s in range(n) for d in range(n)])):
        if not nx.has_path(g, s, d):
            with pytest.raises(UserInputError):
                router.route(s, d)
            continue
        assert router.route(s, d) == ref.route(s, d)


@pytest.mark.parametrize("policy", ["first", "dest", "hash"])
def test_fabric_routes_are_those_of_the_complete_distances(policy):
    # 96 DGX H100 servers: 3 scalable units under spines; NIC to NIC, GPU to GPU, GPU to NIC
    import random

    import topologies

    g = topologies.build("dgx-h100", 96)
    rng = random.Random(7)
    ends = [f"n{rng.randrange(96)}/{kind}{rng.randrange(8)}" for kind in ("gpu", "nic") for _ in range(40)]
    pairs = [(s, d) for s in ends for d in rng.sample(ends, 6) if s != d]
    ref, router = _with_full_distances(g, policy, {d for _, d in pairs}), Router(g, policy)
    for s, d in pairs:
        assert router.route(s, d) == ref.route(s, d), (s, d)
    for s, d in pairs[::5]:   # through the NICs of another rail
        via = (f"{s.split('/')[0]}/nic{len(s) % 8}", f"{d.split('/')[0]}/nic{len(s) % 8}")
        assert router.route(s, d, via) == ref.route(s, d, via), (s, d, via)


def test_a_route_across_the_spines_does_not_search_every_nic():
    # counted, not timed: the search toward a NIC stops at the source once a level holding
    # its leaf is complete, before the level of every other NIC of the fabric (96 servers,
    # 3 scalable units of 32: the NICs found are the 32 under the destination's leaf and
    # the source; 160 when the search went on into the level of the source's leaf's NICs)
    import topologies

    g = topologies.build("dgx-h100", 96)
    router = Router(g, "dest")
    route = router.route("n0/nic3", "n95/nic3")
    assert route.nodes[0] == "n0/nic3" and route.nodes[-1] == "n95/nic3" and len(route.nodes) == 5
    found = router._dist["n95/nic3"][0]
    nics = sum(1 for n in found if g.nodes[n]["kind"] == "nic")
    assert nics <= 33, nics
