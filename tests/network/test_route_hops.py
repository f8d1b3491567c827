"""The compiled breadth-first searches of the routes' next hops (``network/route_hops.py``)."""

import networkx as nx
import numpy as np
import pytest

from simcollective.network.route_hops import hop_rows


def _reversed_links(g, N):
    pred = [sorted(g.predecessors(v)) for v in range(N)]
    return np.cumsum([0] + [len(x) for x in pred]), np.array([u for x in pred for u in x], np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_hop_rows_are_the_distances_as_far_as_the_sources_need(seed):
    """Each row holds the exact hop distance to its destination of every node up to the
    level of its farthest source (a level searched whole), -1 beyond: the search stops there."""
    rng = np.random.default_rng(seed)
    N = 40
    g = nx.gnp_random_graph(N, 0.08, seed=seed, directed=True)
    ptr, pred = _reversed_links(g, N)
    dsts = rng.choice(N, size=5, replace=False)
    needs = [rng.choice(N, size=int(rng.integers(0, 3)), replace=False) for _ in dsts]
    need_ptr = np.cumsum([0] + [len(x) for x in needs])
    need = np.concatenate(needs).astype(np.int64)
    hops = hop_rows(ptr, pred, dsts.astype(np.int64), need_ptr, need, N)
    assert hops.shape == (5, N) and hops.dtype == np.int32
    for i, d in enumerate(dsts.tolist()):
        dist = nx.single_target_shortest_path_length(g, d)   # every node's distance to d
        dist = dict(dist) if not isinstance(dist, dict) else dist
        wanted = [dist[v] for v in needs[i].tolist() if v in dist]
        unreachable = any(v not in dist for v in needs[i].tolist())
        reach = max(dist.values()) if unreachable else max(wanted, default=0)   # the levels searched
        want = [dist[v] if v in dist and dist[v] <= reach else -1 for v in range(N)]
        assert hops[i].tolist() == want


def test_a_line_searched_to_its_source():
    ptr, pred = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])   # 0 - 1 - 2, links both ways
    got = hop_rows(ptr, pred, np.array([0, 0]), np.array([0, 1, 2]), np.array([1, 2]), 3)
    assert got.tolist() == [[0, 1, -1], [0, 1, 2]]
