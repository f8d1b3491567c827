"""The compiled sparse union (``data/merge_kernel.py``): every dtype, values moved bit for bit,
sums at common indices a + b in the dtype."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.data.sparse import merge, SparseStream


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_values_keep_their_bits_signed_zeros_and_nan_payloads_included(dtype):
    # a value present in one run only is copied, not added to 0 (0.0 + -0.0 would be +0.0)
    nan = np.array([np.nan], dtype=dtype).view(f"u{np.dtype(dtype).itemsize}")[0] | 1
    bv = np.array([-0.0, 1.5, 0.0], dtype=dtype)
    bv[2:].view(f"u{np.dtype(dtype).itemsize}")[0] = nan
    a = SparseStream.from_pairs(0, 10**6, [3, 9], np.array([2.0, -0.0], dtype=dtype))
    b = SparseStream.from_pairs(0, 10**6, [1, 3, 700], bv)
    m = merge(a, b)
    assert not m.is_dense and m.indices.tolist() == [1, 3, 9, 700]
    bits = m.values.view(f"u{np.dtype(dtype).itemsize}")
    want = np.array([-0.0, np.float64(2.0) + np.float64(1.5), -0.0, 0.0], dtype=dtype)
    wbits = want.view(bits.dtype).copy()
    wbits[3] = nan
    assert bits.tolist() == wbits.tolist()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["int32", "float16", "float32", "float64"]), st.integers(0, 2**32 - 1),
       st.integers(1, 300), st.integers(1, 300))
def test_union_matches_a_sorted_python_merge_bit_for_bit(dtype, seed, n1, n2):
    rng = np.random.default_rng(seed)
    n = 4 * (n1 + n2) + 10_000  # stays sparse
    ia = np.sort(rng.choice(n, n1, replace=False))
    ib = np.sort(rng.choice(n, n2, replace=False))
    va = rng.integers(-100, 100, n1).astype(dtype) if dtype == "int32" else rng.standard_normal(n1).astype(dtype)
    vb = rng.integers(-100, 100, n2).astype(dtype) if dtype == "int32" else rng.standard_normal(n2).astype(dtype)
    m = merge(SparseStream.from_pairs(5, 5 + n, ia + 5, va), SparseStream.from_pairs(5, 5 + n, ib + 5, vb))
    want = {}
    for i, v in zip((ib + 5).tolist(), vb):
        want[i] = v
    for i, v in zip((ia + 5).tolist(), va):
        want[i] = v + want[i] if i in want else v
    keys = sorted(want)
    assert m.indices.tolist() == keys
    assert m.values.tobytes() == np.array([want[k] for k in keys], dtype=dtype).tobytes()


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["int32", "float32", "float64"]), st.integers(0, 2**32 - 1),
       st.integers(1, 400), st.integers(1, 400), st.sampled_from([1, 2, 3, 5]))
def test_union_both_loops_with_many_common_indices(dtype, seed, n1, n2, spread):
    # indices drawn from a range barely larger than the runs: many indices in both runs,
    # runs of comparable length (the selecting loop) and skewed ones (the branching loop)
    rng = np.random.default_rng(seed)
    n = spread * max(n1, n2) + 1
    ia = np.sort(rng.choice(n, min(n1, n), replace=False))
    ib = np.sort(rng.choice(n, min(n2, n), replace=False))
    va = rng.integers(-100, 100, ia.size).astype(dtype)
    vb = rng.integers(-100, 100, ib.size).astype(dtype)
    a = SparseStream.from_pairs(0, 10**7, ia, va)
    b = SparseStream.from_pairs(0, 10**7, ib, vb)
    for x, y in ((a, b), (b, a)):
        m = merge(x, y)
        want = dict(zip(y.indices.tolist(), y.values.tolist()))
        for i, v in zip(x.indices.tolist(), x.values.tolist()):
            want[i] = want.get(i, 0) + v
        keys = sorted(want)
        assert m.indices.tolist() == keys
        assert m.values.tolist() == [want[k] for k in keys]


def test_union_of_a_run_with_itself_and_with_a_subset():
    idx = np.arange(0, 3000, 3)
    a = SparseStream.from_pairs(0, 10**6, idx, np.arange(idx.size, dtype=np.int32))
    sub = SparseStream.from_pairs(0, 10**6, idx[::7], np.full(idx[::7].size, 10, dtype=np.int32))
    assert merge(a, a).values.tolist() == (2 * np.arange(idx.size)).tolist()
    for x, y in ((a, sub), (sub, a)):   # skewed (ratio 7): the branching loop
        m = merge(x, y)
        assert m.indices.tolist() == idx.tolist()
        want = np.arange(idx.size)
        want[::7] += 10
        assert m.values.tolist() == want.tolist()
