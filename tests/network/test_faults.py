"""Timed capacity changes in the flow engine, against hand-computed flow times: a link that
drops to a fraction mid-flow, one that fails with another route to move to, a fault before
any flow, and faults leaving the max-min rates exact (two flows sharing a degraded link)."""

import networkx as nx
import pytest

from simcollective.network.engine import Network, SimEnvironment
from simcollective.network.faults import FAULT_TUNING, LinkFault
from simcollective.profiles import load_profile

C = 10e9
S = 10**9    # bytes: 0.1 s at C


def diamond():
    """a -> {s0, s1} -> b: two equal routes (``first`` takes s0), every link C, no latency."""
    g = nx.DiGraph()
    for i, n in enumerate(("a", "b")):
        g.add_node(n, kind="gpu", server=i, local=0)
    for s in ("s0", "s1"):
        g.add_node(s, kind="switch")
    for u, v in (("a", "s0"), ("s0", "b"), ("a", "s1"), ("s1", "b"),
                 ("b", "s0"), ("s0", "a"), ("b", "s1"), ("s1", "a")):
        g.add_edge(u, v, bandwidth=C, latency=0.0, duplex="full", link_type="ethernet")
    return g


def run(flows, faults):
    env = SimEnvironment()
    net = Network(env, diamond(), load_profile("ideal").network, tuning=FAULT_TUNING)
    net.schedule_faults(faults)
    done = [None] * len(flows)
    for i, (s, d, size) in enumerate(flows):
        net.transfer(s, d, size, lambda f, i=i: done.__setitem__(i, env.now))
    env.run()
    return done, net


def test_a_link_at_half_capacity_from_the_start_halves_the_rate():
    done, _ = run([("a", "b", S)], [LinkFault(0.0, (("a", "s0"),), 0.5)])
    assert done == [pytest.approx(S / (C / 2), rel=1e-12)]


def test_a_link_dropping_to_a_quarter_mid_flow_sends_the_rest_at_a_quarter():
    t = 0.04   # 0.4 GB sent at C, 0.6 GB left at C / 4
    done, _ = run([("a", "b", S)], [LinkFault(t, (("s0", "b"),), 0.25)])
    assert done == [pytest.approx(t + (S - C * t) / (C / 4), rel=1e-12)]


def test_two_flows_on_a_degraded_link_share_it_max_min():
    # both on a -> s0 -> b; at t the link s0 -> b drops to C / 2: each then gets C / 4
    t = 0.05
    done, _ = run([("a", "b", S), ("a", "b", S)], [LinkFault(t, (("s0", "b"),), 0.5)])
    left = S - C / 2 * t
    assert done == [pytest.approx(t + left / (C / 4), rel=1e-12)] * 2


def test_a_failed_link_moves_its_flow_to_the_other_route_without_loss():
    t = 0.03
    done, net = run([("a", "b", S)], [LinkFault(t, (("a", "s0"),), 0.0)])
    assert done == [pytest.approx(S / C, rel=1e-12)]         # s1 has the same capacity
    assert net.route("a", "b").nodes == ("a", "s1", "b")


def test_a_failure_moves_flows_onto_a_shared_route():
    # two flows a -> b, both on s0; s0's links fail at t: both move to s1 and keep sharing C
    t = 0.02
    done, _ = run([("a", "b", S), ("a", "b", S)], [LinkFault(t, (("a", "s0"), ("s0", "b")), 0.0)])
    assert done == [pytest.approx(2 * S / C, rel=1e-12)] * 2


def test_flows_started_after_a_failure_take_the_remaining_route():
    done, net = run([("a", "b", S)], [LinkFault(0.0, (("a", "s1"),), 0.0), LinkFault(0.0, (("a", "s0"),), 0.5)])
    # s0 degraded, s1 failed: the only route is the degraded one
    assert done == [pytest.approx(S / (C / 2), rel=1e-12)]
    stats = {ls.name: ls.bytes for ls in net.link_stats()}
    assert stats["a->s0"] == S and "a->s1" not in stats


def test_a_fault_after_the_flows_changes_nothing():
    clean, _ = run([("a", "b", S), ("b", "a", S // 2)], [])
    late, _ = run([("a", "b", S), ("b", "a", S // 2)], [LinkFault(1.0, (("a", "s0"),), 0.0)])
    assert late == clean
