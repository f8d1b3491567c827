"""Allgather algorithms: alpha-beta closed forms on contention-free meshes, sparse allgather verified."""

import math

import pytest

from simcollective.simulate import RunConfig, run
from tests.conftest import ALPHA, BETA, E, mesh_graph, sim


# -- closed forms on a contention-free mesh ------------------------------------------------------------
C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
def test_allgather_closed_forms(P):
    b = C * E                   # one block = S / P
    lg = math.ceil(math.log2(P))
    assert sim("allgather", "ring", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("allgather", "bruck", P, C)["time_s"] == pytest.approx(lg * ALPHA + (P - 1) * b * BETA, rel=1e-12)
    assert sim("allgather", "direct", P, C)["time_s"] == pytest.approx(ALPHA + b * BETA, rel=1e-12)
    if P & (P - 1) == 0:
        rd = sim("allgather", "recursive-doubling", P, C)["time_s"]
        assert rd == pytest.approx(lg * ALPHA + (P - 1) * b * BETA, rel=1e-12)
    rep = sim("allgather", "ring", P, C, chunk_size=b // 2)
    assert rep["time_s"] == pytest.approx((P - 1) * (2 * ALPHA + b * BETA), rel=1e-12)
    assert rep["messages"] == 2 * P * (P - 1)


@pytest.mark.parametrize("variant", ["direct", "ring", "recursive-doubling"])
@pytest.mark.parametrize("P", [1, 3, 8])
def test_sparse_allgather_verifies(variant, P):
    cfg = RunConfig(topology="t", collective="allgather", algorithm="sparse-streams", elements=500, gpus=P,
                    density=0.05, options={"allgather": variant}, dtype="float32")
    rep = run(cfg, graph=mesh_graph(P))
    assert rep["verified"] and rep["k"] == 25 and rep["kind"] == "sparse"
    if P > 1 and variant == "ring":
        assert rep["messages"] == P * (P - 1)
