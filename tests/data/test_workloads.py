"""Seeded sparse workloads: deterministic, distinct per rank, uniform, top-k, .npy files."""

import math

import numpy as np
import pytest

from simcollective.data import DTYPES, expected_union, make_workload, verify_sparse_result
from simcollective.errors import UserInputError


@pytest.mark.parametrize("name", ["uniform", "topk"])
def test_workloads_deterministic_and_distinct_per_rank(name):
    w = make_workload(name, 10_000, 300, 4, "int32", seed=11, overlap=0.25)
    again = make_workload(name, 10_000, 300, 4, "int32", seed=11, overlap=0.25)
    other = make_workload(name, 10_000, 300, 4, "int32", seed=12, overlap=0.25)
    a0, a1 = w.input(0), w.input(1)
    assert w.name == name
    assert np.array_equal(a0.indices, again.input(0).indices)
    assert np.array_equal(a0.values, again.input(0).values)
    assert not np.array_equal(a0.indices, a1.indices)
    assert not np.array_equal(a0.indices, other.input(0).indices)
    ref = w.reference()
    assert ref.dtype == np.int32
    direct = np.zeros(10_000, np.int64)
    for r in range(4):
        direct[w.input(r).indices] += w.input(r).values
    assert np.array_equal(ref, direct)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_uniform_inputs(dtype):
    w = make_workload("uniform", 50_000, 1000, 3, dtype, seed=5)
    s = w.input(2)
    idx = s.indices
    assert s.nnz == 1000 and idx.dtype == np.uint32 and s.dtype == np.dtype(dtype)
    assert np.all(np.diff(idx.astype(np.int64)) > 0) and idx[0] >= 0 and idx[-1] < 50_000
    assert s.values.min() >= -100 and s.values.max() <= 99
    assert np.array_equal(s.values, np.round(s.values))  # integer-valued


def test_uniform_union_size_matches_expectation():
    n, k, trials, ranks = 2000, 100, 200, 8
    d = k / n
    sums = np.zeros(ranks)
    for t in range(trials):
        w = make_workload("uniform", n, k, ranks, "int32", seed=1000 + t)
        union = np.zeros(n, bool)
        for j in range(ranks):
            union[w.input(j).indices] = True
            sums[j] += union.sum()
    for j in range(1, ranks + 1):
        mean = sums[j - 1] / trials
        expect = expected_union(n, d, j)
        p = 1 - (1 - d) ** j
        # the indicators are negatively correlated, so Var(U) <= n p (1-p)
        sigma = math.sqrt(n * p * (1 - p) / trials)
        assert abs(mean - expect) <= 5 * sigma, (j, mean, expect, sigma)
    assert expected_union(n, d, 1) == pytest.approx(k)


def test_topk_workload_construction():
    n, k, p = 5000, 200, 6
    w = make_workload("topk", n, k, p, "int32", seed=3, overlap=0.4)
    common = set(w.common.tolist())
    assert len(common) == 80
    owns = []
    for r in range(p):
        s = w.input(r)
        idx = set(s.indices.tolist())
        assert s.nnz == k and common <= idx
        assert np.all(np.abs(s.values) >= 100) and np.all(np.abs(s.values) < 1000)
        owns.append(idx - common)
    assert all(len(o) == k - 80 for o in owns)
    assert len(owns[0] & owns[1]) < 30  # rank-specific parts are (mostly) distinct
    full = make_workload("topk", n, k, p, "int32", seed=3, overlap=1.0)
    assert np.array_equal(full.input(0).indices, full.input(5).indices)
    with pytest.raises(UserInputError, match="overlap"):
        make_workload("topk", n, k, p, "int32", seed=3, overlap=1.5)


def test_npy_workload_and_errors(tmp_path):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(1000).astype(np.float32) for _ in range(3)]
    for r, a in enumerate(arrays):
        np.save(tmp_path / f"rank{r}.npy", a)
    w = make_workload("npy", 1000, 50, 3, "float32", seed=0, inputs_dir=tmp_path)
    s = w.input(1)
    expect = np.sort(np.argsort(-np.abs(arrays[1]), kind="stable")[:50])
    assert s.indices.tolist() == expect.tolist()
    assert np.array_equal(s.values, arrays[1][expect])
    ref = w.exact_reference()
    assert verify_sparse_result(w.input(0) + w.input(1) + w.input(2), ref).startswith("within")
    with pytest.raises(UserInputError, match=r"rank3\.npy is missing"):
        make_workload("npy", 1000, 50, 4, "float32", seed=0, inputs_dir=tmp_path)
    np.save(tmp_path / "rank3.npy", np.zeros(999, np.float32))
    with pytest.raises(UserInputError, match=r"rank3\.npy holds an array of shape \(999,\); expected \(1000,\)"):
        make_workload("npy", 1000, 50, 4, "float32", seed=0, inputs_dir=tmp_path)
    with pytest.raises(UserInputError, match="cannot become int32"):
        make_workload("npy", 1000, 50, 3, "int32", seed=0, inputs_dir=tmp_path)
