"""Path rows made in bulk (NumPy over all pairs) against the per-pair path parameters: the
same resources, coefficients, weights, rate bounds, loads, latencies and bytes per
resource, to the last bit."""

import random

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.errors import UserInputError
from simcollective.network import path_rows as pr
from simcollective.network.engine import Network, SimEnvironment
from simcollective.network.model import NetworkModel
from simcollective.network.paths import path_parameters
from simcollective.network.routing import Router
from simcollective.network.stats import res_bytes

from .test_replay import assert_identical, both
from .test_routing_tails import random_graph


def _reference(router, model, placement, keys, vias):
    """The rows as the per-pair paths give them."""
    cap = list(router.capacity)
    paths = [path_parameters(router, model, cap, placement[s], placement[d], vias[v]) for s, d, v in keys]
    D = max([p.nres for p in paths] + [1])
    PI, PF = np.zeros((len(paths), 1 + D), np.int64), np.zeros((len(paths), 2 + 2 * D))
    for i, p in enumerate(paths):
        pr.put_row(PI, PF, i, p)
    return paths, PI, PF


def _bits(a):
    return np.asarray(a, np.float64).view(np.int64)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 14), density=st.floats(0.15, 0.7), seed=st.integers(0, 2**16),
       policy=st.sampled_from(["first", "dest"]), gamma=st.sampled_from([0.0, 4194304.0]),
       bound=st.booleans(), lat_factors=st.sampled_from([(1.0,), (1.5,), (1.0, 2.0)]),
       flow_caps=st.booleans())
def test_bulk_rows_are_the_per_pair_paths(n, density, seed, policy, gamma, bound, lat_factors, flow_caps):
    rng = random.Random(seed)
    g = random_graph(rng, n, density)
    if flow_caps:
        for u, v in list(g.edges)[::3]:
            g.edges[u, v]["flow_bandwidth"] = rng.uniform(0.5, 8.0)
    model = NetworkModel(tcp_gamma=gamma, bound_by_route_capacity=bound, lat_factors=lat_factors,
                         lat_thresholds=(0.0, 1000.0)[:len(lat_factors)])
    placement = [rng.randrange(n) for _ in range(rng.randint(2, n + 2))]  # (a node may hold two ranks)
    keys = [(s, d, 0) for s in range(len(placement)) for d in range(len(placement))
            if s != d and nx.has_path(g, placement[s], placement[d])]
    rng.shuffle(keys)
    if not keys:
        return
    net = Network(SimEnvironment(), g, model, policy)
    src, dst, via = (np.array(c, np.int64) for c in zip(*keys))
    rows = pr.path_rows(net, placement, src, dst, via, [None], bulk_min=0)
    paths, PI, PF = _reference(Router(g, policy), model, placement, keys, [None])
    assert np.array_equal(rows.PI, PI)
    assert np.array_equal(_bits(rows.PF), _bits(PF))
    assert np.array_equal(_bits(rows.route_lat), _bits([p.route.latency for p in paths]))
    if len(lat_factors) == 1:
        assert np.array_equal(_bits(rows.lat), _bits([p.lat for p in paths]))
    else:
        assert rows.lat is None
    per_row = [rng.randrange(0, 2**40) for _ in keys]
    for p, b in zip(paths, per_row):
        p.bytes += b
    assert rows.resource_bytes(per_row, len(net.cap)) == res_bytes(paths, len(net.cap))


def test_no_route_is_an_error():
    g = nx.DiGraph()
    g.add_edge("a", "s", bandwidth=1.0, latency=1e-6)
    g.add_edge("s", "b", bandwidth=1.0, latency=1e-6)
    g.add_node("c")
    net = Network(SimEnvironment(), g, NetworkModel(), "dest")
    with pytest.raises(UserInputError, match="no route"):
        pr.path_rows(net, ["a", "b", "c"], np.array([0, 0]), np.array([1, 2]), np.array([0, 0]), [None], bulk_min=0)


@settings(max_examples=12, deadline=None)
@given(machine=st.sampled_from([("dgx-h100", 2), ("fat-tree", 6), ("abci", 2)]),
       routing=st.sampled_from(["first", "dest"]),
       case=st.sampled_from([("alltoall", "direct"), ("alltoall", "pairwise"), ("allgather", "ring")]))
def test_compiled_runs_on_bulk_rows_match_simpy(machine, routing, case):
    """A whole run on rows made in bulk: every rank's time and every link's bytes and busy
    time as on the SimPy path."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pr, "BULK_MIN_PAIRS", 0)
        a, b = both(topology=machine[0], nodes=machine[1], collective=case[0], algorithm=case[1],
                    elements=40000, routing=routing)
    assert_identical(a, b)
