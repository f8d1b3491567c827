"""The array store against the component solver and the per-flow mode."""

import pytest
from hypothesis import given, HealthCheck, settings, strategies as st

from simcollective.network.engine import Tuning
from tests.conftest import graph_and_flows, run_flows


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


@pytest.mark.parametrize("slack", [0, 4096])
def test_leaving_the_array_store_lists_the_flows_in_activation_order(monkeypatch, slack):
    # the store keeps the flows in the order they moved in (the engine's dict of active
    # flows is empty meanwhile; its list drops the completed ones past a slack, 0: at every
    # addition): leaving gives the per-flow mode its flows in activation order (start
    # time, then creation), whatever slots they took, and the same finish times
    import random

    import topologies

    from simcollective.network import bulk
    from simcollective.network.engine import Network

    monkeypatch.setattr(bulk, "STAGED_SLACK", slack)
    g = topologies.fat_tree(16, oversubscription=3.0)
    gpus = topologies.gpus(g)
    rnd = random.Random(5)
    flows = [(gpus[rnd.randrange(16)], gpus[rnd.randrange(16)], float(rnd.randint(1, 40) * 10**5),
              rnd.choice([0.0, 1e-4, 2e-4, 3e-3, 3.1e-3, 9e-3])) for _ in range(400)]
    flows = [f for f in flows if f[0] != f[1]]
    expected, _ = run_flows(g, flows, profile="cm02")
    orders = []
    leave = Network._leave_bulk

    def checked_leave(self, now):
        leave(self, now)
        active = list(self._active)
        orders.append(active == sorted(active, key=lambda f: (f.t_start, f.seq)) and len(active) == self.active_count)

    monkeypatch.setattr(Network, "_leave_bulk", checked_leave)
    got, net = run_flows(g, flows, profile="cm02", tuning=Tuning(bulk_min=8, walk_limit=4, bulk_off=30))
    assert net.modes["leave"] >= 2 and orders and all(orders)
    for t, e in zip(got, expected):
        assert t == pytest.approx(e, rel=1e-9, abs=1e-12)
