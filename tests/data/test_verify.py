"""Verification of results (``data/verify.py``): dense and sparse checks, tolerances, wrong
results caught, parts of verified ranks accepted and misplaced parts walked."""

import numpy as np
import pytest

from simcollective.data import DenseReference, make_workload, merge, Parts, SparseStream, split, split_at, verify_dense, verify_sparse_result
from simcollective.errors import VerificationError
from simcollective.simulate import make_inputs, resolve, RunConfig, simulate, verify
from tests.conftest import run_cli


def test_verify_dense_walks_parts_and_checks_coverage_and_dtype():
    ref = DenseReference(10, "int32", seed=2, nranks=3)
    full = ref.expected
    assert verify_dense([full[:4], [full[4:7], full[7:]]], ref) == "exact (int32)"
    assert verify_dense(Parts([full[:5], full[5:]]), ref) == "exact (int32)"
    plain = np.array(full)  # a plain array is an exact reference; it stays writable
    assert verify_dense(full, plain) == "exact (int32)" and plain.flags.writeable
    with pytest.raises(VerificationError, match="element 9"):
        verify_dense(np.concatenate([full[:9], full[9:] + 1]), plain)
    with pytest.raises(VerificationError, match=r"covers elements \[0, 7\) of \[0, 10\)"):
        verify_dense([full[:7]], ref)
    with pytest.raises(VerificationError, match="longer than 10"):
        verify_dense([full, full[:1]], ref)
    with pytest.raises(VerificationError, match="dtype int64, expected int32"):
        verify_dense(full.astype(np.int64), ref)
    swapped = [full[5:], full[:5]]
    if not np.array_equal(np.concatenate(swapped), full):
        with pytest.raises(VerificationError, match="element"):
            verify_dense(swapped, ref)


# -- verification ------------------------------------------------------------------------


def test_verify_sparse_result_exact_and_errors():
    w = make_workload("uniform", 3000, 60, 5, "int32", seed=2)
    total = w.input(0)
    for r in range(1, 5):
        total = total + w.input(r)
    ref = w.exact_reference()
    assert verify_sparse_result(total, ref) == "exact (int32)"
    assert verify_sparse_result(split(total, 7), w.reference()) == "exact (int32)"
    assert verify_sparse_result([total.to_dense()[:1000], split_at(total, [(1000, 3000)])], ref)
    i = int(total.indices[10])
    vals = total.values.copy()
    vals[10] += 1
    with pytest.raises(VerificationError, match=rf"element {i}: got"):
        verify_sparse_result(SparseStream.from_pairs(0, 3000, total.indices, vals), ref)
    missing = total.indices[total.values != 0][0]
    keep = total.indices != missing
    with pytest.raises(VerificationError, match=rf"element {missing}: .*missing"):
        verify_sparse_result(SparseStream.from_pairs(0, 3000, total.indices[keep], total.values[keep]), ref)
    with pytest.raises(VerificationError, match="element 1000 comes next"):
        verify_sparse_result(split_at(total, [(0, 1000), (1500, 3000)]), ref)
    with pytest.raises(VerificationError, match=r"covers elements \[0, 2000\)"):
        verify_sparse_result(split_at(total, [(0, 2000)]), ref)


def test_verify_sparse_float16_uses_tolerance():
    # sums of integer values beyond 2048 are not exact in float16
    w = make_workload("topk", 2000, 100, 8, "float16", seed=4, overlap=1.0)
    total = w.input(0)
    for r in range(1, 8):
        total = total + w.input(r)
    assert np.abs(w.exact_reference().expected).max() > 2048
    assert verify_sparse_result(total, w.exact_reference()) == "within (P-1)*eps*sum|x| (float16)"
    assert w.verify(split(total, 3)).startswith("within")


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_sparse_check_counts_the_entries_it_needs(dtype):
    # the check counts the entries a result must hold instead of masking the range: a
    # missing nonzero entry is still named, a missing zero-sum (cancelled) entry is allowed,
    # and the count is kept per range for the next rank's result
    n = 5000
    a = SparseStream.from_pairs(0, n, [10, 20, 30, 40], np.array([1, 2, 3, -4], dtype=dtype))
    b = SparseStream.from_pairs(0, n, [20, 40, 4000], np.array([5, 4, 7], dtype=dtype))
    from simcollective.data.dense import Reference

    ref = Reference.accumulate(n, dtype, 2, [(a.indices, a.values), (b.indices, b.values)])
    total = merge(a, b)                   # 40 cancels to an exact zero, kept as an entry
    assert verify_sparse_result(total, ref)
    assert ref._needed == {(0, n): 4}
    keep = total.indices != 40            # dropping the zero entry is fine
    assert verify_sparse_result(SparseStream.from_pairs(0, n, total.indices[keep], total.values[keep]), ref)
    for gone in (30, 4000):
        keep = total.indices != gone
        with pytest.raises(VerificationError, match=rf"element {gone}: .*missing"):
            verify_sparse_result(SparseStream.from_pairs(0, n, total.indices[keep], total.values[keep]), ref)
    # an extra entry holding zero is fine, a nonzero one is not
    extra = SparseStream.from_pairs(0, n, np.append(total.indices, 4999), np.append(total.values, 0).astype(dtype))
    assert verify_sparse_result(extra, ref)
    bad = SparseStream.from_pairs(0, n, np.append(total.indices, 4999), np.append(total.values, 1).astype(dtype))
    with pytest.raises(VerificationError, match=r"element 4999: got 1"):
        verify_sparse_result(bad, ref)
    # parts: the count is per range
    assert verify_sparse_result(split(total, 3), ref)
    assert (0, n // 3) in ref._needed


# -- a wrong result fails loudly, end to end --------------------------------------------------------

def test_a_wrong_result_fails_verification(capsys, monkeypatch):
    """The one test of the failing path: an algorithm that drops one rank's contribution."""
    import dataclasses

    from simcollective.algorithms import load_all
    from simcollective.algorithms.registry import REGISTRY

    load_all()
    ring = REGISTRY[("allreduce", "ring")]

    def wrong(comm, x, **kw):
        out = yield from ring.func(comm, x, **kw)
        return x if comm.rank == 1 else out        # rank 1 keeps its own input

    monkeypatch.setitem(REGISTRY, ("allreduce", "ring"), dataclasses.replace(ring, func=wrong))
    code, out, err = run_cli(capsys, "run", "--algorithm", "ring", "--elements", "4K", "--dtype", "int32")
    assert code == 3
    assert err.startswith("simcollective: verification FAILED: rank 1:") and "element 0" in err


# -- verification ---------------------------------------------------------------------------------
def _ring_run(collective="allreduce", P=4, n=64):
    cfg = RunConfig(topology="fat-tree", nodes=P, algorithm="ring" if collective == "allreduce" else "ring",
                    elements=n, dtype="float32", verify="symbolic", collective=collective)
    plan = resolve(cfg)
    return plan, simulate(plan, make_inputs(plan))


def test_results_made_of_the_parts_of_a_verified_rank_are_accepted():
    plan, res = _ring_run()
    outs = res.outputs
    assert all(o[i] is outs[0][i] for o in outs for i in range(len(o)))  # the allgather shares parts
    assert verify(plan, res).startswith("symbolic")


def test_a_result_differing_in_one_part_from_the_verified_one_is_walked_and_fails():
    plan, res = _ring_run()
    bad = list(res.outputs[0])
    bad[1] = bad[1] + bad[1]  # rank contributions counted twice in block 1
    res.outputs[2] = bad
    with pytest.raises(VerificationError, match="rank 2: part 1"):
        verify(plan, res)


def test_the_same_parts_expected_at_another_place_are_walked_and_fail():
    """Reduce-scatter: rank r must hold block r. Every rank returning rank 0's (correct)
    block is the very same part, but against other pieces: rank 1 fails."""
    cfg = RunConfig(topology="fat-tree", nodes=4, algorithm="ring", elements=16, dtype="float32",
                    verify="symbolic", collective="reduce-scatter")
    plan = resolve(cfg)
    res = simulate(plan, make_inputs(plan))
    verify(plan, res)
    res.outputs[1:] = [res.outputs[0]] * 3
    with pytest.raises(VerificationError, match="rank 1"):
        verify(plan, res)
