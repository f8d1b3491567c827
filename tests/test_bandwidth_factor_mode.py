"""network.bandwidth_factor_mode: "progress" (network-model.md item 4) against "bound"
(SimGrid SMPI: f_bw x the route's smallest capacity bounds the rate; data advances at the
rate the flow occupies). --study switches the smpi profile to "bound"."""

import networkx as nx
import pytest

from simcollective.errors import UserInputError
from simcollective.network.engine import Network, SimEnvironment
from simcollective.network.model import NetworkModel
from simcollective.profiles import load_profile

C = 10e9


def two_hosts():
    g = nx.DiGraph()
    for i, n in enumerate(("a", "b")):
        g.add_node(n, kind="gpu", server=0, local=i)
    for u, v in (("a", "b"), ("b", "a")):
        g.add_edge(u, v, bandwidth=C, latency=0.0, duplex="full", link_type="nvlink")
    return g


def finish(profile, sizes):
    env = SimEnvironment()
    net = Network(env, two_hosts(), profile)
    done = [None] * len(sizes)
    for i, s in enumerate(sizes):
        net.transfer("a", "b", s, lambda f, i=i: done.__setitem__(i, env.now))
    env.run()
    return done


def prof(mode):
    return NetworkModel(bw_thresholds=(0.0,), bw_factors=(0.5,), bandwidth_factor_mode=mode)


def test_lone_flow_same_in_both_modes():
    S = 10**9
    assert finish(prof("progress"), [S])[0] == pytest.approx(S / (0.5 * C), rel=1e-12)
    assert finish(prof("bound"), [S])[0] == pytest.approx(S / (0.5 * C), rel=1e-12)


def test_contention_differs():
    # two equal flows on one link: each gets C/2. "progress": data at 0.5 x C/2;
    # "bound": the bound 0.5 C does not bind, data at C/2
    S = 10**9
    assert finish(prof("progress"), [S, S]) == pytest.approx([S / (0.25 * C)] * 2, rel=1e-12)
    assert finish(prof("bound"), [S, S]) == pytest.approx([S / (0.5 * C)] * 2, rel=1e-12)


def test_smpi_profile_keeps_progress_and_study_uses_bound():
    p = load_profile("smpi")
    assert p.network.bandwidth_factor_mode == "progress"
    assert p.with_study_compute().network.bandwidth_factor_mode == "bound"
    assert load_profile("cm02").with_study_compute().network.bandwidth_factor_mode == "progress"
    assert load_profile("ideal").with_study_compute() == load_profile("ideal")


def test_bad_mode(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[network]\nbandwidth_factor_mode = "later"\n')
    with pytest.raises(UserInputError, match="bandwidth_factor_mode 'later' must be one of: progress, bound"):
        load_profile(str(f))
