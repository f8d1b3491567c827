"""Summing sparse streams against sequential dense sums and a plain sum, window by window."""

import numpy as np
from hypothesis import given, settings, strategies as st

from simcollective import data


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(1, 300),
    start=st.integers(0, 50),
    q=st.integers(1, 6),
    density=st.floats(0, 1),
    dtype=st.sampled_from(["int32", "float32", "float64"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_sum_streams_matches_sequential_dense_sums(n, start, q, density, dtype, seed):
    # both ways of summing (sort, or a dense buffer when entries >= range / 8) must give
    # the sequential sum in list order, keep cancelled zeros, and follow the dense rule
    from simcollective.patterns.sparse import sum_streams

    rng = np.random.default_rng(seed)
    streams = []
    for _ in range(q):
        k = int(rng.binomial(n, density))
        idx = np.sort(rng.choice(n, size=k, replace=False)) + start
        vals = (rng.integers(-3, 4, size=k) if dtype == "int32" else rng.standard_normal(k)).astype(dtype)
        streams.append(data.SparseStream.from_pairs(start, start + n, idx, vals))
    out = sum_streams(streams)
    expected = np.zeros(n, dtype=dtype)
    present = np.zeros(n, dtype=bool)
    for s in streams:
        expected = expected + s.to_dense()
        if s.is_dense:
            present[:] = True
        else:
            present[s.indices - start] = True
    assert out.dtype == np.dtype(dtype) and (out.start, out.stop) == (start, start + n)
    assert np.array_equal(out.to_dense(), expected)
    union = int(present.sum())
    if union and not out.is_dense:
        assert np.array_equal(out.indices, np.flatnonzero(present) + start)
    if union:
        assert out.is_dense == data.turns_dense(union, n, np.dtype(dtype).itemsize, streams[0].index_bytes)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 20, 60]), st.sampled_from(["int32", "float32"]),
       st.sampled_from([1, 8]))
def test_sum_streams_window_by_window_matches_a_plain_sum(seed, P, dtype, fill):
    # many entries for the range (8 x entries >= n): summed window by window in a buffer
    # the size of a window; the union and the sums (in list order) are those of a plain
    # dense sum, sparse or dense by the exact rule, exact zeros from cancellation kept
    from simcollective.patterns.sparse import sum_streams

    rng = np.random.default_rng(seed)
    start, n = 1000, 200_000
    k = n // fill // P + 50   # fill 1: a dense sum, over several windows for P = 3
    streams, want, present = [], np.zeros(n, dtype=dtype), np.zeros(n, dtype=bool)
    for r in range(P):
        idx = np.sort(rng.choice(n, k, replace=False))
        vals = rng.integers(-3, 4, k).astype(dtype)
        streams.append(data.SparseStream.from_pairs(start, start + n, idx + start, vals, keep_sparse=True))
        want[idx] += vals
        present[idx] = True
    got = sum_streams(streams)
    if got.is_dense:
        assert present.sum() * (4 + want.itemsize) >= n * want.itemsize
        assert got.values.tobytes() == want.tobytes()
    else:
        assert got.indices.tolist() == (np.flatnonzero(present) + start).tolist()
        assert got.values.tobytes() == want[present].tobytes()
