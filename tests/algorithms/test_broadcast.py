"""Rooted collectives (broadcast, reduce): alpha-beta closed forms, scatter-allgather broadcast."""

import math

import pytest

from tests.conftest import ALPHA, BETA, E, sim


# -- closed forms on a contention-free mesh ------------------------------------------------------------
C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
@pytest.mark.parametrize("root", ["first", "last"])
def test_rooted_closed_forms(P, root):
    r = 0 if root == "first" else P - 1
    S = 8 * C * E               # 1 MiB vector
    lg = math.ceil(math.log2(P))
    for coll in ("broadcast", "reduce"):
        t = sim(coll, "binomial-tree", P, 8 * C, root=r)["time_s"]
        assert t == pytest.approx(lg * (ALPHA + S * BETA), rel=1e-12), coll
        for k in (1, 4):
            t = sim(coll, "pipelined-chain", P, 8 * C, root=r, chunk_size=S // k)["time_s"]
            assert t == pytest.approx((P - 2 + k) * (ALPHA + S / k * BETA), rel=1e-12), (coll, k)
    # NCCL's ring: the chain in 512 KiB steps
    t = sim("broadcast", "ring", P, 8 * C, root=r)["time_s"]
    assert t == pytest.approx(P * (ALPHA + S / 2 * BETA), rel=1e-12)
    if P & (P - 1) == 0:
        t = sim("reduce", "reduce-scatter-gather", P, 8 * C, root=r)["time_s"]
        assert t == pytest.approx(2 * lg * ALPHA + 2 * (P - 1) / P * S * BETA, rel=1e-12)


@pytest.mark.parametrize("P", [2, 4, 8])
def test_scatter_allgather_broadcast_closed_form(P):
    """Binomial scatter (log2 P alpha + (P-1) S/(P beta)) then ring allgather ((P-1)(alpha +
    S/(P beta))), P a power of two."""
    S = 8 * C * E
    t = sim("broadcast", "scatter-allgather", P, 8 * C, root=P - 1)["time_s"]
    expected = math.log2(P) * ALPHA + (P - 1) / P * S * BETA + (P - 1) * (ALPHA + S / P * BETA)
    assert t == pytest.approx(expected, rel=1e-12)
    # cheaper than the binomial tree for large vectors from 4 ranks on
    if P >= 4:
        assert t < sim("broadcast", "binomial-tree", P, 8 * C)["time_s"]
