"""The filling's pass for problems whose weights and coefficients are all 1.0 (capacity taken
summed as flows are fixed, weight sums as counts) against its general pass: the same rates,
capacities left and passes, to the last bit, interpreted and compiled."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.network import filling
from simcollective.network.kernels import fill as compiled_fill


@st.composite
def unit_problems(draw):
    """Flows over distinct resources each, entries in flow order; bounds and capacities
    from a few values (equal levels), or any."""
    m, n = draw(st.integers(1, 30)), draw(st.integers(1, 8))
    values = st.sampled_from([1.0, 2.0, 3.0, 0.1, 1 / 3, 7.5]) | st.floats(0.01, 100.0)
    fi, rj = [], []
    for i in range(m):
        for r in sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))):
            fi.append(i)
            rj.append(r)
    b = draw(st.lists(values | st.just(np.inf), min_size=m, max_size=m))
    c = draw(st.lists(values, min_size=n, max_size=n))
    return np.array(fi, np.intp), np.array(rj, np.intp), np.array(b), np.array(c)


def _run(fill, prob):
    fi, rj, b, c = prob
    c, rates = c.copy(), np.zeros(b.shape[0])
    passes = fill(np.ones(b.shape[0]), b, fi, rj, np.ones(fi.shape[0]), c, rates, 1e-12)
    return rates.view(np.int64).tolist(), c.view(np.int64).tolist(), passes


@settings(max_examples=300, deadline=None)
@given(unit_problems())
def test_unit_pass_is_the_general_pass(prob):
    assert filling._unit(np.ones(prob[2].shape[0]), prob[0], np.ones(prob[0].shape[0]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(filling, "_unit", lambda w, fi, av: False)
        general = _run(filling.fill, prob)
    assert _run(filling.fill, prob) == general
    assert _run(compiled_fill, prob) == general


def test_unit_needs_ones_in_flow_order():
    one = np.ones(2)
    assert filling._unit(one, np.array([0, 1], np.intp), one)
    assert not filling._unit(np.array([1.0, 0.5]), np.array([0, 1], np.intp), one)
    assert not filling._unit(one, np.array([0, 1], np.intp), np.array([1.0, 2.0]))
    assert not filling._unit(one, np.array([1, 0], np.intp), one)
