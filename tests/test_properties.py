"""Property tests over random small hardware graphs: every dense algorithm verifies on
real data, the phase breakdown adds up to the makespan, and runs are deterministic."""

import networkx as nx
import pytest

from conftest import expected_check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topologies
from topologies.nodes import add_cable
from simcollective.simulate import RunConfig, run_allreduce

DENSE = ["ring", "recursive-doubling", "rabenseifner", "binomial-tree", "double-binary-tree", "ring-ring"]


@st.composite
def random_cluster(draw):
    """A random valid cluster: servers of 1-4 GPUs, random intra-server links, GPUs wired
    to random switches of a random connected switch graph, random figures and duplex."""
    servers = draw(st.integers(1, 3))
    gpn = draw(st.integers(1, 4))
    nsw = draw(st.integers(1, 3))
    g = nx.DiGraph(name="random", description="hypothesis", gpus_per_node=gpn, default_group_size=gpn)
    bw = st.sampled_from([1e9, 5e9, 12.5e9, 5e10])
    lat = st.sampled_from([0.0, 1e-7, 1e-6, 5e-6])
    dup = st.sampled_from(["full", "shared"])

    def cable(u, v, link_type):
        add_cable(g, u, v, bandwidth=draw(bw), latency=draw(lat), link_type=link_type, duplex=draw(dup))

    for k in range(nsw):
        g.add_node(f"sw{k}", kind="switch", level="leaf")
        if draw(st.booleans()):
            g.nodes[f"sw{k}"].update(bandwidth=draw(bw), latency=draw(lat))
    for k in range(1, nsw):
        cable(f"sw{draw(st.integers(0, k - 1))}", f"sw{k}", "infiniband")
    for s in range(servers):
        for l in range(gpn):
            g.add_node(f"n{s}/gpu{l}", kind="gpu", server=s, local=l)
            cable(f"n{s}/gpu{l}", f"sw{draw(st.integers(0, nsw - 1))}", "infiniband")
            if l and draw(st.booleans()):
                cable(f"n{s}/gpu{l}", f"n{s}/gpu{draw(st.integers(0, l - 1))}", "nvlink")
    return topologies.validate(g)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_cluster(), st.sampled_from(DENSE), st.integers(1, 3000), st.sampled_from(["int32", "float32"]),
       st.sampled_from(["ideal", "cm02", "smpi"]), st.sampled_from(["first", "hash"]))
def test_dense_algorithms_verify_on_random_clusters(g, algorithm, n, dtype, profile, routing):
    gpus = len(topologies.gpus(g))
    cfg = RunConfig(topology="random", algorithm=algorithm, elements=n, dtype=dtype, profile=profile,
                    routing=routing, options={"group_size": g.graph["gpus_per_node"]} if algorithm == "ring-ring" else {})
    rep = run_allreduce(cfg, graph=g)          # raises VerificationError on a wrong result
    assert rep["verification"] == expected_check(dtype, nranks=gpus) and rep["ranks"] == gpus
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-9, abs=1e-15)
    assert rep["time_s"] >= 0
    again = run_allreduce(cfg, graph=g)
    assert again["time_s"] == rep["time_s"] and again["messages"] == rep["messages"]
