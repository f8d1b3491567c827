"""Dense payloads: inputs, dtype names, references, float tolerance, read-only concat and add."""

import numpy as np
import pytest

from simcollective.data import add, check_dtype, concat, dense_input, DenseReference, DTYPES, Parts, verify_dense
from simcollective.errors import UserInputError, VerificationError
from tests.conftest import ring_allreduce


# -- inputs ------------------------------------------------------------------------------


def test_check_dtype_names_allowed_values():
    assert check_dtype("float16") == np.float16
    with pytest.raises(UserInputError, match="float16, float32, float64, int32"):
        check_dtype("int64")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_dense_input_deterministic_readonly_and_in_range(dtype):
    a = dense_input(3, 5000, dtype, seed=7)
    assert a.dtype == np.dtype(dtype) and a.shape == (5000,)
    assert np.array_equal(a, dense_input(3, 5000, dtype, seed=7))
    assert not np.array_equal(a, dense_input(4, 5000, dtype, seed=7))
    assert not np.array_equal(a, dense_input(3, 5000, dtype, seed=8))
    assert not a.flags.writeable
    if dtype == "int32":
        assert a.min() == -100 and a.max() == 99
    else:
        assert a.min() >= -1 and a.max() < 1 and a.min() < -0.99 and a.max() > 0.99


# -- dense reference and verification ----------------------------------------------------


def test_int32_reference_is_exact_and_catches_corruption():
    p, n = 6, 1001
    ref = DenseReference(n, "int32", seed=1, nranks=p)
    direct = np.sum([dense_input(r, n, "int32", 1).astype(np.int64) for r in range(p)], axis=0)
    assert ref.expected.dtype == np.int32 and np.array_equal(ref.expected, direct)
    out = ring_allreduce([dense_input(r, n, "int32", 1) for r in range(p)])
    for blocks in out:
        assert verify_dense(blocks, ref) == "exact (int32)"
    bad = np.array(concat(out[0]))
    bad[123] += 1
    want = int(direct[123])
    with pytest.raises(VerificationError, match=rf"element 123: got {want + 1}, expected {want} "):
        verify_dense(bad, ref)


def test_float_tolerance_accepts_any_order_and_rejects_a_perturbation():
    p, n = 16, 4000
    ref = DenseReference(n, "float32", seed=3, nranks=p)
    xs = [dense_input(r, n, "float32", 3) for r in range(p)]
    forward = xs[0]
    for x in xs[1:]:
        forward = forward + x
    backward = xs[-1]
    for x in xs[-2::-1]:
        backward = backward + x
    level = xs  # pairwise tree
    while len(level) > 1:
        level = [level[i] + level[i + 1] for i in range(0, len(level), 2)]
    assert not np.array_equal(forward, backward)  # the orders really differ
    for out in (forward, backward, level[0]):
        assert verify_dense(out, ref) == "within (P-1)*eps*sum|x| (float32)"
    tol = ref.tolerance(0, n)
    assert tol[42] == pytest.approx(15 * np.finfo(np.float32).eps * ref.abs_sum[42], rel=1e-6)
    bad = forward.copy()
    bad[42] += np.float32(3 * tol[42])
    with pytest.raises(VerificationError, match=r"element 42: .*tolerance"):
        verify_dense(bad, ref)
    with pytest.raises(VerificationError, match="element"):
        verify_dense(forward - xs[5], ref)  # a missing contribution


def test_float16_and_float64_results_verify():
    for dtype in ("float16", "float64"):
        ref = DenseReference(3000, dtype, seed=9, nranks=8)
        out = ring_allreduce([dense_input(r, 3000, dtype, 9) for r in range(8)])
        assert verify_dense(out[3], ref) == f"within (P-1)*eps*sum|x| ({dtype})"


def test_concat_and_add_return_readonly_without_touching_inputs():
    a = dense_input(0, 8, "float32", 1)
    b = dense_input(1, 8, "float32", 1)
    s = add(a, b)
    assert not s.flags.writeable and np.array_equal(s, a + b)
    c = concat([a[:3], a[3:]])
    assert not c.flags.writeable and np.array_equal(c, a)
    assert Parts([a[:3], a[3:]]).nbytes == 32 and Parts([a[:3], a[3:]]).size == 8


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [1, 5, 3 * (1 << 16) + 7])
def test_reference_regenerated_by_windows_is_the_whole_inputs_sum_to_the_bit(dtype, n):
    """The reference draws each rank's input window by window; its sum is bit for bit the
    one of the whole vectors (a stream cut at window edges would shift every later value)."""
    from simcollective.data import Reference

    P = 3
    ref = DenseReference(n, dtype, 11, P)
    whole = Reference.accumulate(n, dtype, P, ((None, dense_input(r, n, dtype, 11)) for r in range(P)))
    assert ref.expected.dtype == whole.expected.dtype
    assert ref.expected.tobytes() == whole.expected.tobytes()
    if whole.abs_sum is None:
        assert ref.abs_sum is None
    else:
        assert ref.abs_sum.tobytes() == whole.abs_sum.tobytes()


def test_windowed_sum_widens_an_integer_sum_that_would_overflow():
    from simcollective.data.exact_sum import int_sum, windowed_sum

    big = np.iinfo(np.int32).max
    a = np.array([big, 1, -big], np.int32)
    b = np.array([-big, 2, big], np.int32)
    c = np.array([1, 3, -1], np.int32)
    windows = [(0, 2, [a[:2], b[:2], c[:2]]), (2, 3, [a[2:], b[2:], c[2:]])]
    total = windowed_sum(3, np.dtype(np.int32), windows)
    assert total.dtype == np.int32 and total.tolist() == [1, 6, -1]
    assert total.tolist() == int_sum(3, np.dtype(np.int32), [(None, a), (None, b), (None, c)]).tolist()
    bounded = windowed_sum(3, np.dtype(np.int32), windows, abs_max=big)   # widened from the bound
    assert bounded.dtype == np.int32 and bounded.tolist() == [1, 6, -1]
    with pytest.raises(UserInputError, match="overflows int32"):
        windowed_sum(1, np.dtype(np.int32), [(0, 1, [a[:1], c[:1]])])
