"""The seeded MoE gate: deterministic for a seed, exact totals, skew, bad keys."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.data.moe import MOE_DTYPES, moe_sizes, parse_moe
from simcollective.errors import UserInputError


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(1, 40), st.integers(1, 64), st.integers(1, 3), st.integers(1, 4),
       st.sampled_from([0.0, 0.5, 1.2]), st.sampled_from(sorted(MOE_DTYPES)), st.integers(0, 2**32))
def test_totals_and_determinism(P, tokens, hidden, X, topk, skew, dtype, seed):
    topk = min(topk, P * X)
    spec = parse_moe(f"tokens={tokens},hidden={hidden},topk={topk},experts_per_rank={X},skew={skew},dtype={dtype}")
    m = moe_sizes(spec, P, seed)
    assert m.shape == (P, P) and m.dtype == np.int64 and (m >= 0).all()
    # every rank's tokens, topk copies each, hidden x itemsize bytes per copy
    assert (m.sum(axis=1) == tokens * topk * hidden * MOE_DTYPES[dtype]).all()
    assert int(m.sum()) == P * tokens * topk * hidden * MOE_DTYPES[dtype]
    assert (m % (hidden * MOE_DTYPES[dtype]) == 0).all()
    assert np.array_equal(m, moe_sizes(spec, P, seed))


def test_topk_distinct_experts_and_skew():
    # topk = all experts: every token goes to every expert once
    m = moe_sizes(parse_moe("tokens=10,hidden=1,topk=8,experts_per_rank=2,dtype=float8"), 4, 1)
    assert (m == 20).all()
    flat = moe_sizes(parse_moe("tokens=4096,hidden=1,topk=2,dtype=float8"), 16, 7)
    hot = moe_sizes(parse_moe("tokens=4096,hidden=1,topk=2,skew=1.5,dtype=float8"), 16, 7)
    load = lambda a: a.sum(axis=0).max() / a.sum(axis=0).mean()
    assert load(flat) < 1.2 < 3 < load(hot)
    assert not np.array_equal(moe_sizes(parse_moe("tokens=64,hidden=1,topk=2"), 8, 1),
                              moe_sizes(parse_moe("tokens=64,hidden=1,topk=2"), 8, 2))


@pytest.mark.parametrize("text,needle", [
    ("tokens=4,hidden=8", "needs topk"),
    ("tokens=4,hidden=8,topk=1,colour=red", "key 'colour' is unknown"),
    ("tokens=4,tokens=5,hidden=8,topk=1", "given twice"),
    ("tokens=0,hidden=8,topk=1", "tokens='0' must be an integer >= 1"),
    ("tokens=4,hidden=8,topk=1,skew=x", "skew='x' must be a number"),
    ("tokens=4,hidden=8,topk=1,dtype=int4", "dtype='int4' must be one of"),
    ("tokens=4,hidden,topk=1", "is not KEY=VALUE"),
])
def test_bad_gate_keys(text, needle):
    with pytest.raises(UserInputError) as exc:
        parse_moe(text)
    assert needle in str(exc.value)


def test_topk_above_the_experts():
    with pytest.raises(UserInputError, match="topk=5 exceeds the 4 experts"):
        moe_sizes(parse_moe("tokens=4,hidden=8,topk=5"), 4)
