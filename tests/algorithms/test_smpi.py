"""SMPI's own collectives (``smpi-*``): verified on every rank count SMPI runs them on,
exact message hooks, closed forms on contention-free meshes, the shift that tells SMPI's
allgather ring from a neighbour ring, and the one-line refusals where SMPI refuses."""

import math

import networkx as nx
import pytest

from simcollective.algorithms.registry import REGISTRY, algorithms_for
from simcollective.errors import UserInputError
from simcollective.resolve import resolve
from simcollective.simulate import RunConfig, run
from tests.conftest import ALPHA, BETA, BW, E, SMPI, mesh_graph, one_line_error, sim

KEYS = sorted((coll, name) for coll, names in SMPI.items() for name in names)
POF2_ONLY = {("allgather", "smpi-pair"), ("alltoall", "smpi-pair")}


def test_the_smpi_algorithms_are_registered_under_smpis_names():
    for coll, names in SMPI.items():
        assert names <= set(algorithms_for(coll)), coll
    assert all(REGISTRY[k].messages is not None for k in KEYS)


def _runs(coll, name, P):
    """Counts each algorithm takes on P ranks (smpi-lr: multiples of P; scatter-LR: whole pieces)."""
    if name == "smpi-lr":
        return (P, 3 * P)
    if name.startswith("smpi-scatter-"):   # ceil(4 n / P) a multiple of 4 (int32), some pieces empty
        return tuple(n for n in (P, 4 * P, 4 * P - 1, 2 * P + 2) if -(-4 * n // P) % 4 == 0)
    return (1, 7)


@pytest.mark.parametrize("coll,name", KEYS)
def test_every_smpi_algorithm_verifies_and_counts_its_messages(coll, name):
    algo = REGISTRY[(coll, name)]
    rooted = coll in ("broadcast", "reduce")
    checked = 0
    for P in (1, 2, 3, 5, 8, 12, 16, 24):
        if (coll, name) in POF2_ONLY and P & (P - 1):
            continue
        for count in _runs(coll, name, P):
            for root in ((0, P - 1, P // 2) if rooted else (None,)):
                cfg = RunConfig(topology="test", collective=coll, algorithm=name, elements=count, dtype="int32",
                                gpus=P, root=root)
                graph = mesh_graph(P)
                rep = run(cfg, graph=graph)
                plan = resolve(cfg, graph=graph)
                assert rep["verified"] and rep["ranks"] == P, (P, count, root)
                assert algo.messages(P, n=plan.n, dtype=plan.dtype) == rep["messages"], (P, count, root)
                checked += 1
    assert checked >= 8


C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 4, 8])
def test_closed_forms_on_a_contention_free_mesh(P):
    b = C * E                   # one block
    lg = int(math.log2(P))
    step = ALPHA + b * BETA
    for coll, name in [("allgather", "smpi-ring"), ("allgather", "smpi-pair"), ("alltoall", "smpi-pair"),
                       ("alltoall", "smpi-ring"), ("reduce-scatter", "smpi-mpich-pair")]:
        assert sim(coll, name, P, C)["time_s"] == pytest.approx((P - 1) * step, rel=1e-12), name
    gather = lg * ALPHA + (P - 1) * b * BETA
    assert sim("allgather", "smpi-rdb", P, C)["time_s"] == pytest.approx(gather, rel=1e-12)
    assert sim("allgather", "smpi-bruck", P, C)["time_s"] == pytest.approx(gather, rel=1e-12)
    n = P * C                   # the whole vector
    assert sim("allreduce", "smpi-lr", P, n)["time_s"] == pytest.approx(2 * (P - 1) * step, rel=1e-12)
    assert sim("allreduce", "smpi-rab-rdb", P, n)["time_s"] == pytest.approx(2 * gather, rel=1e-12)
    assert sim("allreduce", "smpi-rdb", P, n)["time_s"] == pytest.approx(lg * (ALPHA + n * E * BETA), rel=1e-12)
    tree = lg * (ALPHA + n * E * BETA)
    assert sim("broadcast", "smpi-binomial-tree", P, n)["time_s"] == pytest.approx(tree, rel=1e-12)
    assert sim("reduce", "smpi-binomial", P, n)["time_s"] == pytest.approx(tree, rel=1e-12)
    # every send leaves the root on its own cable at once
    assert sim("broadcast", "smpi-flattree", P, n)["time_s"] == pytest.approx(ALPHA + n * E * BETA, rel=1e-12)
    # the root's blocking receives, one after the other (P - 1 of them)
    flat = (P - 1) * (ALPHA + n * E * BETA)
    assert sim("reduce", "smpi-flat-tree", P, n, root=P - 1)["time_s"] == pytest.approx(flat, rel=1e-12)
    # all sends and receives posted at once, each pair on its own cable
    assert sim("alltoall", "smpi-basic-linear", P, C)["time_s"] == pytest.approx(step, rel=1e-12)
    # (P - 2^i) blocks at step i
    rdb = sum(ALPHA + (P - 2**i) * b * BETA for i in range(lg))
    assert sim("reduce-scatter", "smpi-mpich-rdb", P, C)["time_s"] == pytest.approx(rdb, rel=1e-12)
    # halves: p'/2, p'/4, ..., 1 blocks
    halving = lg * ALPHA + (P - 1) * b * BETA
    assert sim("reduce-scatter", "smpi-ompi-basic-recursivehalving", P, C)["time_s"] == pytest.approx(halving,
                                                                                                   rel=1e-12)


def _one_way_ring(P):
    """P GPUs on a one-way ring of cables (r -> r + 1): a message to r + i crosses i of them."""
    g = nx.DiGraph(name=f"ring{P}", description="one-way ring", gpus_per_node=P, default_group_size=P)
    for i in range(P):
        g.add_node(f"g{i}", kind="gpu", server=0, local=i)
    for i in range(P):
        g.add_edge(f"g{i}", f"g{(i + 1) % P}", bandwidth=BW, latency=ALPHA, duplex="full", link_type="nvlink")
    return g


@pytest.mark.parametrize("P", [3, 5, 6])
def test_smpis_allgather_ring_is_a_shift_not_a_neighbour_ring(P):
    # step i sends every block i hops: i flows share each cable, i latencies on the way
    b = C * E
    g = _one_way_ring(P)
    shift = sum(i * ALPHA + i * b * BETA for i in range(1, P))
    assert sim("allgather", "smpi-ring", P, C, graph=g)["time_s"] == pytest.approx(shift, rel=1e-9)
    assert sim("allgather", "ring", P, C, graph=g)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA),
                                                                              rel=1e-9)


@pytest.mark.parametrize("coll", ["allgather", "alltoall"])
def test_pair_refuses_what_smpi_refuses(capsys, coll):
    line = one_line_error(capsys, ["run", "--collective", coll, "--algorithm", "smpi-pair", "--topology", "abci",
                                   "--nodes", "3", "--bytes", "96K"], "smpi-pair", "power-of-two", "12")
    assert "SMPI" in line
    with pytest.raises(UserInputError):
        REGISTRY[(coll, "smpi-pair")].check(6)
    REGISTRY[(coll, "smpi-pair")].check(16)


def test_counts_smpi_runs_through_another_algorithm_are_refused(capsys):
    one_line_error(capsys, ["run", "--algorithm", "smpi-lr", "--topology", "abci", "--nodes", "3",
                            "--elements", "1000"], "smpi-lr", "multiple of the 12 ranks", "1000")
    one_line_error(capsys, ["run", "--collective", "broadcast", "--algorithm", "smpi-scatter-lr-allgather",
                            "--topology", "abci", "--nodes", "3", "--bytes", "64K"],
                   "smpi-scatter-lr-allgather", "5462 bytes")
