"""Reduce-scatter algorithms: alpha-beta closed forms."""

import math

import pytest

from tests.conftest import ALPHA, BETA, E, sim


# -- closed forms on a contention-free mesh ------------------------------------------------------------
C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
def test_reduce_scatter_closed_forms(P):
    b = C * E
    assert sim("reduce-scatter", "ring", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("reduce-scatter", "direct", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    if P & (P - 1) == 0:
        rh = sim("reduce-scatter", "recursive-halving", P, C)["time_s"]
        assert rh == pytest.approx(math.log2(P) * ALPHA + (P - 1) * b * BETA, rel=1e-12)
