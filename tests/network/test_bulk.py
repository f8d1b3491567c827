"""Big components solved vectorized match processor sharing."""

import pytest

from tests.conftest import line_graph, run_flows


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
