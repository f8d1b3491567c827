"""Sparse streams: merge, dense switch, split/concat, wire bytes, top-k, errors."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.data import block_bounds, DTYPES, make_workload, merge, Parts, sparse_concat, sparse_k, SparseStream, split, split_at, turns_dense, verify_sparse_result
from simcollective.errors import UserInputError


def random_stream(rng, start, stop, density, dtype, as_dense=False):
    n = stop - start
    k = int(round(density * n))
    idx = np.sort(rng.choice(n, k, replace=False)) + start
    vals = rng.integers(-5, 5, k).astype(dtype)  # small values: many cancellations
    if as_dense:
        dense = np.zeros(n, dtype)
        dense[idx - start] = vals
        return SparseStream.from_dense(start, dense)
    return SparseStream.from_pairs(start, stop, idx, vals)


# -- merge -------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 400),
    start=st.integers(0, 1000),
    d1=st.floats(0, 1),
    d2=st.floats(0, 1),
    dtype=st.sampled_from(sorted(DTYPES)),
    policy=st.sampled_from(["exact", "upper-bound"]),
    dense1=st.booleans(),
    dense2=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_merge_matches_dense_numpy(n, start, d1, d2, dtype, policy, dense1, dense2, seed):
    rng = np.random.default_rng(seed)
    a = random_stream(rng, start, start + n, d1, dtype, dense1)
    b = random_stream(rng, start, start + n, d2, dtype, dense2)
    da, db = a.to_dense().copy(), b.to_dense().copy()
    m = merge(a, b, densify=policy)
    assert m.dtype == np.dtype(dtype) and (m.start, m.stop) == (start, start + n)
    assert np.array_equal(m.to_dense(), da + db)
    assert np.array_equal(a.to_dense(), da) and np.array_equal(b.to_dense(), db)  # untouched
    assert not m.values.flags.writeable
    if a.is_dense or b.is_dense:
        assert m.is_dense
    else:
        union = np.union1d(a.indices, b.indices)
        sv, rule_n = np.dtype(dtype).itemsize, union.size
        if policy == "upper-bound":
            rule_n = a.nnz + b.nnz
        assert m.is_dense == turns_dense(rule_n, n, sv)
        if not m.is_dense:
            assert np.array_equal(m.indices, union)  # cancelled entries stay present
            assert m.indices.dtype == np.uint32


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("small_first", [True, False])
def test_merge_of_a_short_run_into_a_long_one(dtype, small_first):
    # more than 8x shorter: the searchsorted/insert path; common, new-before, new-after
    # and new-between indices all occur
    rng = np.random.default_rng(5)
    n = 10_000
    big = SparseStream.from_pairs(10, 10 + n, np.sort(rng.choice(n, 2000, replace=False)) + 10,
                                  rng.standard_normal(2000).astype(dtype) if dtype != "int32"
                                  else rng.integers(-9, 9, 2000).astype(dtype))
    small_idx = np.concatenate(([10, 10 + n - 1], big.indices[::200], np.arange(5000, 5100, 7) + 10))
    small_idx = np.unique(small_idx)
    small = SparseStream.from_pairs(10, 10 + n, small_idx, np.ones(small_idx.shape[0], dtype=dtype))
    a, b = (small, big) if small_first else (big, small)
    m = merge(a, b)
    assert not m.is_dense and 8 * small.nnz < big.nnz
    assert np.array_equal(m.indices, np.union1d(big.indices, small.indices))
    assert np.array_equal(m.to_dense(), a.to_dense() + b.to_dense())


def test_merge_keeps_cancelled_zeros_and_drop_zeros_removes_them():
    a = SparseStream.from_pairs(0, 100, [3, 7, 9], np.array([5, 2, -1], np.int32))
    b = SparseStream.from_pairs(0, 100, [7, 50], np.array([-2, 4], np.int32))
    m = a + b
    assert m.indices.tolist() == [3, 7, 9, 50] and m.values.tolist() == [5, 0, -1, 4]
    nz = m.drop_zeros()
    assert nz.indices.tolist() == [3, 9, 50] and nz.values.tolist() == [5, -1, 4]
    dense = SparseStream.from_dense(10, np.array([0, 1.5, 0, -2], np.float32)).drop_zeros()
    assert not dense.is_dense and dense.indices.tolist() == [11, 13]


def test_merge_requires_same_range_and_dtype():
    a = SparseStream.empty(0, 10, "int32")
    with pytest.raises(ValueError, match="ranges"):
        merge(a, SparseStream.empty(0, 11, "int32"))
    with pytest.raises(ValueError, match="dtypes"):
        merge(a, SparseStream.empty(0, 10, "float32"))
    with pytest.raises(ValueError, match="densify policy"):
        merge(a, a, densify="lazy")


# -- the dense switch --------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, n, at",  # nnz*(4+sv) == n*sv exactly at nnz == at
    [("int32", 100, 50), ("float32", 64, 32), ("float16", 99, 33), ("float64", 30, 20)],
)
def test_dense_switch_boundary(dtype, n, at):
    sv = np.dtype(dtype).itemsize
    assert at * (4 + sv) == n * sv
    at_rule = SparseStream.from_pairs(0, n, np.arange(at), np.ones(at, dtype))
    below = SparseStream.from_pairs(0, n, np.arange(at - 1), np.ones(at - 1, dtype))
    assert at_rule.is_dense and at_rule.wire_bytes == 4 + n * sv
    assert not below.is_dense and below.wire_bytes == 4 + (at - 1) * (4 + sv)
    assert below.wire_bytes < at_rule.wire_bytes  # one below is really smaller sparse
    # the same boundary reached by merging disjoint streams
    a = SparseStream.from_pairs(0, n, np.arange(0, at // 2), np.ones(at // 2, dtype))
    b_idx = np.arange(n - (at - at // 2), n)
    assert (a + SparseStream.from_pairs(0, n, b_idx, np.ones(b_idx.size, dtype))).is_dense
    assert not (a + SparseStream.from_pairs(0, n, b_idx[1:], np.ones(b_idx.size - 1, dtype))).is_dense


def test_upper_bound_policy_turns_dense_early():
    a = SparseStream.from_pairs(0, 100, np.arange(0, 30), np.ones(30, np.int32))
    b = SparseStream.from_pairs(0, 100, np.arange(20, 45), np.ones(25, np.int32))
    exact, early = merge(a, b), merge(a, b, densify="upper-bound")
    assert not exact.is_dense and exact.nnz == 45  # 45*8 < 100*4
    assert early.is_dense  # tested 30 + 25 = 55 entries: 440 >= 400
    assert np.array_equal(exact.to_dense(), early.to_dense())
    assert (exact.wire_bytes, early.wire_bytes) == (4 + 45 * 8, 4 + 100 * 4)


# -- split / concat ----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), q=st.integers(1, 20), d=st.floats(0, 1), seed=st.integers(0, 999),
       start=st.integers(0, 50))
def test_split_concat_round_trip(n, q, d, seed, start):
    s = random_stream(np.random.default_rng(seed), start, start + n, d, "int32")
    parts = split(s, q)
    assert [(p.start, p.stop) for p in parts] == [(a + start, b + start) for a, b in block_bounds(n, q)]
    for p in parts:
        assert p.is_dense == (s.is_dense or turns_dense(p.nnz, p.n, 4))
    back = sparse_concat(parts)
    assert np.array_equal(back.to_dense(), s.to_dense())
    # entries of parts that turned dense count as present (all n of them)
    assert back.is_dense == turns_dense(sum(p.nnz for p in parts), n, 4)
    assert Parts(parts).nbytes == back.nbytes
    if start == 0:
        assert verify_sparse_result(parts, s.to_dense()) == "exact (int32)"


def test_split_shares_memory_and_tests_exact_count_per_part():
    idx = np.concatenate([np.arange(0, 60), [150, 399]])  # crowded first part
    s = SparseStream.from_pairs(0, 400, idx, np.arange(1, 63, dtype=np.int32))
    p0, p1, p2, p3 = split(s, 4)
    assert p0.is_dense and p0.nnz == 100  # 60 entries * 8 >= 100 * 4
    assert not p1.is_dense and p1.nnz == 1 and np.shares_memory(p1.indices, s.indices)
    assert p2.nnz == 0 and p3.indices.tolist() == [399]
    back = sparse_concat([p0, p1, p2, p3])  # 102 entries (p0 counts 100): 816 < 1600 bytes
    assert not back.is_dense and back.nnz == 102
    assert np.array_equal(back.to_dense(), s.to_dense())
    assert sparse_concat([p0.drop_zeros(), p1, p2, p3]).nnz == 62
    q = split_at(s, [(50, 80), (0, 10)])  # 10 entries in 30 stay sparse
    assert q[0].indices.tolist() == list(range(50, 60)) and q[1].is_dense
    with pytest.raises(ValueError, match="within"):
        split_at(s, [(390, 401)])
    with pytest.raises(ValueError, match="does not follow"):
        sparse_concat([p0, p2])


def test_wire_bytes_formula():
    s = SparseStream.from_pairs(0, 1000, [1, 5, 9], np.array([1.0, 2.0, 3.0], np.float64))
    assert s.wire_bytes == s.nbytes == 4 + 3 * (4 + 8)
    assert s.wire_size(8) == 4 + 3 * (8 + 8)
    d = SparseStream.from_dense(0, np.zeros(1000, np.float16))
    assert d.nnz == 1000 and d.wire_bytes == 4 + 1000 * 2 and d.wire_size(8) == 4 + 2000
    wide = SparseStream.from_pairs(0, 1000, [1], np.ones(1, np.int32), index_bytes=8)
    assert wide.wire_bytes == 4 + 12
    assert SparseStream.empty(5, 10, "int32").wire_bytes == 4


def test_from_pairs_validates():
    with pytest.raises(ValueError, match="sorted and unique"):
        SparseStream.from_pairs(0, 10, [3, 3], np.ones(2, np.int32))
    with pytest.raises(ValueError, match=r"in \[0, 10\)"):
        SparseStream.from_pairs(0, 10, [3, 10], np.ones(2, np.int32))
    with pytest.raises(ValueError, match="same length"):
        SparseStream.from_pairs(0, 10, [3], np.ones(2, np.int32))
    kept = SparseStream.from_pairs(0, 4, [0, 1, 2], np.ones(3, np.int32), keep_sparse=True)
    assert not kept.is_dense
    src = np.ones(3, np.int32)
    SparseStream.from_pairs(0, 100, [0, 1, 2], src)
    assert src.flags.writeable  # the caller's array is not frozen, it is copied


# -- topk --------------------------------------------------------------------------------


def test_topk_deterministic_with_ties_by_lower_index():
    vals = np.array([5, -7, 7, 1, -5, 3, 5], np.int32)
    s = SparseStream.from_pairs(0, 100, [2, 10, 11, 20, 30, 40, 50], vals)
    assert s.topk(2).indices.tolist() == [10, 11]
    t3 = s.topk(3)
    assert t3.indices.tolist() == [2, 10, 11] and t3.values.tolist() == [5, -7, 7]
    assert s.topk(4).indices.tolist() == [2, 10, 11, 30]
    assert s.topk(0).nnz == 0 and s.topk(99) is s
    d = SparseStream.from_dense(10, np.array([0.5, -2.0, 2.0, 0.0], np.float32)).topk(2)
    assert not d.is_dense and d.indices.tolist() == [11, 12]


# -- workloads ---------------------------------------------------------------------------


def test_sparse_k_and_errors():
    assert sparse_k(2**25, density=1 / 128) == 262144 and sparse_k(10, k=3) == 3
    assert sparse_k(10, density=0.25) == 2
    for kwargs, msg in [({}, "exactly one"), ({"density": 0.1, "k": 2}, "exactly one"),
                        ({"k": 11}, "exceeds the vector length n = 10"), ({"k": 0}, "k = 0"),
                        ({"density": 0.05}, "< 1"), ({"density": 1.5}, "density 1.5")]:
        with pytest.raises(UserInputError, match=msg):
            sparse_k(10, **kwargs)
    with pytest.raises(UserInputError, match="uniform, topk, npy"):
        make_workload("zipf", 100, 5, 2, "int32", 0)


def test_float16_overflow_is_a_user_error():
    w = make_workload("topk", 1000, 10, 200, "float16", seed=0, overlap=1.0)
    with pytest.raises(UserInputError, match="overflow float16"):
        w.exact_reference()
