"""Every (collective, algorithm) pair: verified results for many rank counts, dtypes and roots
(also on random small clusters), broken algorithms caught with real and size-only data, bad
roots and sizes refused."""

import pytest
from hypothesis import given, HealthCheck, settings, strategies as st

import topologies
from simcollective.algorithms import register
from simcollective.algorithms.registry import get_algorithm, REGISTRY
from simcollective.data.collectives import COLLECTIVES as DEFS
from simcollective.errors import UserInputError, VerificationError
from simcollective.simulate import run, RunConfig
from tests.conftest import EXPECTED, mesh_graph, random_cluster


ALPHA, BW = 1e-6, 1e9          # mesh_graph defaults


def sim(collective, algorithm, P, count, graph=None, dtype="int32", verify="full", root=None, **options):
    graph = mesh_graph(P, BW, ALPHA) if graph is None else graph
    cfg = RunConfig(topology="test", collective=collective, algorithm=algorithm, elements=count, dtype=dtype,
                    gpus=P, options=options, verify=verify, root=root)
    return run(cfg, graph=graph)


# -- correctness: P x algorithms x dtypes x roots -------------------------------------------------------
def _group(P):
    return max(d for d in (1, 2, 3, 4) if P % d == 0)


# nccl-* run NCCL's model of a hardware preset (GPU models, NVSwitch): tested on presets in
# tests/test_nccl_other_collectives.py
CASES = [(coll, name) for coll, names in sorted(EXPECTED.items()) for name in sorted(names)
         if name != "sparse-streams" and not name.startswith(("nccl", "smpi-"))]   # smpi-*: tests/algorithms/test_smpi.py


@pytest.mark.parametrize("coll,name", CASES)
def test_every_algorithm_verifies(coll, name):
    algo = get_algorithm(name, coll)
    for P in (1, 2, 3, 5, 8, 16, 24):
        g = mesh_graph(P)
        for dtype in (("int32", "float16", "float32", "float64") if P <= 5 else ("int32", "float32")):
            roots = (0, P - 1, P // 2) if DEFS[coll].rooted else (None,)
            for root in roots:
                opts = {"group_size": _group(P)} if "group_size" in algo.options else {}
                for count in (1, 7):
                    rep = sim(coll, name, P, count, graph=g, dtype=dtype, root=root, **opts)
                    assert rep["verified"] and rep["ranks"] == P
        rep = sim(coll, name, P, 5, graph=g, verify="symbolic", root=(P - 1) if DEFS[coll].rooted else None,
                  **({"group_size": _group(P)} if "group_size" in algo.options else {}))
        assert rep["mode"] == "symbolic"


# -- broken algorithms fail verification ------------------------------------------------------------------
def _broken(collective, name, body):
    register(name, kind="dense", collective=collective)(body)


def test_broken_algorithms_are_caught():
    from simcollective.patterns.dense import split

    def swapped(comm, x):
        """Allgather with two blocks swapped."""
        items = yield from __import__("simcollective.patterns.doubling", fromlist=["x"]).allgather(comm, x, "direct")
        items[0], items[1] = items[1], items[0]
        return items

    def own_data(comm, x, *, root=0):
        """Broadcast that keeps every rank's own vector."""
        yield comm.compute(0)
        return x

    def no_add(comm, x):
        """Reduce-scatter that forgets one rank's contribution."""
        P, r = comm.size, comm.rank
        blocks = split(x, P)
        acc = blocks[r]
        for i in range(1, P - 1):
            got = yield comm.sendrecv((r + i) % P, blocks[(r + i) % P], (r - i) % P)
            acc = yield comm.add(acc, got)
        for i in range(P - 1, P):     # the last block is received but not added
            yield comm.sendrecv((r + i) % P, blocks[(r + i) % P], (r - i) % P)
        return acc

    def keep_own(comm, x):
        """Alltoall that returns its own input blocks."""
        yield comm.compute(0)
        return split(x, comm.size)

    cases = [("allgather", "test-swapped", swapped, "rank 0"), ("broadcast", "test-own", own_data, "rank 1"),
             ("reduce-scatter", "test-no-add", no_add, "rank 0"), ("alltoall", "test-keep", keep_own, "rank 0")]
    try:
        for coll, name, body, who in cases:
            _broken(coll, name, body)
            for verify in ("full", "symbolic"):
                with pytest.raises(VerificationError, match=who):
                    sim(coll, name, 4, 6, verify=verify)
    finally:
        for coll, name, _, _ in cases:
            REGISTRY.pop((coll, name), None)


# -- bad input -------------------------------------------------------------------------------------
def test_bad_roots_and_sizes():
    with pytest.raises(UserInputError, match=r"--root 4 is out of range: the run has ranks 0..3"):
        sim("broadcast", "binomial-tree", 4, 8, root=4)
    with pytest.raises(UserInputError, match="--root applies to broadcast and reduce, not to allgather"):
        sim("allgather", "ring", 4, 8, root=0)
    cfg = RunConfig(topology="t", collective="allgather", algorithm="ring", bytes=100, gpus=8)
    with pytest.raises(UserInputError, match="gives 0 float32 elements per rank .* multiple of 16 bytes"):
        run(cfg, graph=mesh_graph(8))


# -- random clusters -------------------------------------------------------------------------------------
ALL_DENSE = [(c, n) for c, n in CASES]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_cluster(), st.sampled_from(ALL_DENSE), st.integers(1, 300), st.sampled_from(["int32", "float32"]),
       st.sampled_from(["ideal", "cm02", "smpi"]), st.integers(0, 100))
def test_collectives_verify_on_random_clusters(g, case, count, dtype, profile, rootseed):
    coll, name = case
    P = len(topologies.gpus(g))
    algo = get_algorithm(name, coll)
    root = rootseed % P if DEFS[coll].rooted else None
    opts = {"group_size": g.graph["gpus_per_node"]} if "group_size" in algo.options else {}
    cfg = RunConfig(topology="random", collective=coll, algorithm=name, elements=count, dtype=dtype,
                    profile=profile, root=root, options=opts)
    rep = run(cfg, graph=g)
    assert rep["verified"] and rep["ranks"] == P
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-9, abs=1e-15)
    again = run(cfg, graph=g)
    assert again["time_s"] == rep["time_s"] and again["messages"] == rep["messages"]
