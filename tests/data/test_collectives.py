"""Sparse contributions sum window by window like dense ones."""

import numpy as np
from hypothesis import given, settings, strategies as st


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["int32", "float16", "float32", "float64"]), st.integers(0, 2**32 - 1),
       st.booleans())
def test_sparse_contributions_sum_window_by_window_like_dense_ones(dtype, seed, shuffled):
    # sparse contributions are added window by window (several windows here: 20,000
    # entries per contribution over 300,000 elements); every element still takes its terms
    # in rank order, so the sum is bit for bit that of the same contributions given dense
    # (adding the zeros of a dense vector changes no partial sum); unsorted indices are sorted
    from simcollective.data.dense import Reference

    rng = np.random.default_rng(seed)
    n, k, P = 300_000, 20_000, 5
    pairs, dense = [], []
    for _ in range(P):
        idx = np.sort(rng.choice(n, k, replace=False))
        vals = (rng.integers(-100, 100, k) if dtype == "int32" else rng.standard_normal(k)).astype(dtype)
        full = np.zeros(n, dtype=dtype)
        full[idx] = vals
        dense.append((None, full))
        if shuffled:
            order = rng.permutation(k)
            idx, vals = idx[order], vals[order]
        pairs.append((idx.astype(np.uint32), vals))
    got = Reference.accumulate(n, dtype, P, pairs)
    want = Reference.accumulate(n, dtype, P, dense)
    assert got.expected.tobytes() == want.expected.tobytes()
    assert (got.abs_sum is None and want.abs_sum is None) or got.abs_sum.tobytes() == want.abs_sum.tobytes()
    mixed = Reference.accumulate(n, dtype, P, [pairs[0], dense[1], pairs[2], pairs[3], dense[4]])
    assert mixed.expected.tobytes() == want.expected.tobytes()
