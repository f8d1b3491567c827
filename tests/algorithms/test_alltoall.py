"""Alltoall algorithms (direct, pairwise, Bruck, hierarchical): alpha-beta closed forms."""

import math

import pytest

from tests.conftest import ALPHA, BETA, E, sim, two_level_mesh


# -- closed forms on a contention-free mesh ------------------------------------------------------------
C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 4, 8, 16])
def test_alltoall_closed_forms(P):
    b = C * E
    S = P * b
    assert sim("alltoall", "pairwise", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("alltoall", "direct", P, C)["time_s"] == pytest.approx(ALPHA + b * BETA, rel=1e-12)
    rep = sim("alltoall", "bruck", P, C)
    # ceil(log2 P) rounds of S / 2 bytes
    assert rep["time_s"] == pytest.approx(math.log2(P) * (ALPHA + S / 2 * BETA), rel=1e-12)
    assert rep["messages"] == P * math.log2(P)


@pytest.mark.parametrize("groups,L", [(2, 2), (3, 4), (2, 3)])
def test_hierarchical_closed_forms(groups, L):
    intra, inter = (1e10, 1e-6), (1e9, 5e-6)
    g = two_level_mesh(groups, L, intra, inter)
    ai, bi, ae, be = intra[1], 1 / intra[0], inter[1], 1 / inter[0]
    P, M, b = groups * L, groups, C * E
    t = sim("allgather", "ring-ring", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((M - 1) * (ae + b * be) + (L - 1) * (ai + M * b * bi), rel=1e-12)
    t = sim("reduce-scatter", "hierarchical", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((L - 1) * (ai + M * b * bi) + (M - 1) * (ae + b * be), rel=1e-12)
    t = sim("alltoall", "hierarchical", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((L - 1) * (ai + M * b * bi) + (M - 1) * (ae + L * b * be), rel=1e-12)
