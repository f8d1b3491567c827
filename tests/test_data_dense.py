"""Dense and symbolic payloads: inputs, references, verification."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from simcollective.data import (
    DTYPES,
    DenseReference,
    Parts,
    SymbolicArray,
    add,
    block_bounds,
    check_dtype,
    concat,
    dense_input,
    format_ranks,
    sub_bounds,
    symbolic_input,
    verify_dense,
    verify_symbolic,
)
from simcollective.errors import UserInputError, VerificationError


def ring_allreduce(inputs):
    """Textbook ring allreduce on any payload supporting slicing and ``+``.

    Returns each rank's output as the list of its P blocks (shared references).
    """
    p = len(inputs)
    bounds = block_bounds(len(inputs[0]), p)
    blocks = [[x[s:e] for s, e in bounds] for x in inputs]
    for step in range(p - 1):  # reduce-scatter: r sends block r-s, receives r-s-1 from r-1
        sent = [blocks[r][(r - step) % p] for r in range(p)]
        for r in range(p):
            j = (r - step - 1) % p
            blocks[r][j] = add(blocks[r][j], sent[(r - 1) % p])
    for step in range(p - 1):  # allgather: r sends block r+1-s, receives r-s
        sent = [blocks[r][(r + 1 - step) % p] for r in range(p)]
        for r in range(p):
            blocks[r][(r - step) % p] = sent[(r - 1) % p]
    return blocks


# -- blocks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, q, expected",
    [
        (10, 3, [(0, 3), (3, 6), (6, 10)]),
        (12, 4, [(0, 3), (3, 6), (6, 9), (9, 12)]),
        (2, 4, [(0, 0), (0, 0), (0, 0), (0, 2)]),
        (7, 1, [(0, 7)]),
        (0, 2, [(0, 0), (0, 0)]),
    ],
)
def test_block_bounds(n, q, expected):
    assert block_bounds(n, q) == expected


def test_sub_bounds_inside_a_range():
    assert sub_bounds(100, 111, 3) == [(100, 103), (103, 106), (106, 111)]
    with pytest.raises(ValueError, match="must be >= 1"):
        block_bounds(10, 0)


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


def test_concat_and_add_return_readonly_without_touching_inputs():
    a = dense_input(0, 8, "float32", 1)
    b = dense_input(1, 8, "float32", 1)
    s = add(a, b)
    assert not s.flags.writeable and np.array_equal(s, a + b)
    c = concat([a[:3], a[3:]])
    assert not c.flags.writeable and np.array_equal(c, a)
    assert Parts([a[:3], a[3:]]).nbytes == 32 and Parts([a[:3], a[3:]]).size == 8


# -- symbolic ----------------------------------------------------------------------------


def test_symbolic_surface():
    a = symbolic_input(2, 100, "float16")
    assert (len(a), a.size, a.shape, a.nbytes, a.dtype) == (100, 100, (100,), 200, np.float16)
    s = a[10:-30]
    assert (s.start, s.stop, s.segments) == (10, 70, ((10, 70, 4),))
    with pytest.raises(ValueError, match="broadcast"):
        a[:3] + a[:4]
    assert format_ranks(0b101110) == "1-3, 5"


def test_symbolic_ring_verifies_for_every_rank():
    p, n = 7, 50
    out = ring_allreduce([symbolic_input(r, n, "float32") for r in range(p)])
    for blocks in out:
        msg = verify_symbolic(blocks, n, p)
        assert msg == "symbolic: every element holds each of the P contributions exactly once"
    whole = concat(out[0])
    assert isinstance(whole, SymbolicArray) and whole.segments == ((0, n, (1 << p) - 1),)


def test_symbolic_double_count_is_recorded_and_propagates():
    p, n = 4, 20
    xs = [symbolic_input(r, n, "int32") for r in range(p)]
    total = xs[0] + xs[1] + xs[2] + xs[3]
    twice = total[5:10] + xs[2][5:10]  # rank 2 counted twice on [5, 10)
    assert twice.error == "elements [5, 10) count rank(s) 2 twice"
    later = concat([total[:5], twice, total[10:]])[0:20] + symbolic_input(0, 20, "int32")[0:20]
    assert later.error == "elements [5, 10) count rank(s) 2 twice"  # the first error is kept
    with pytest.raises(VerificationError, match=r"count rank\(s\) 2 twice"):
        verify_symbolic([total[:5], twice, total[10:]], n, p)


def test_symbolic_double_count_inside_multi_segment_array():
    xs = [symbolic_input(r, 10, "float32") for r in range(3)]
    mixed = concat([xs[0][:4], xs[1][4:]])  # segments {0} on [0,4), {1} on [4,10)
    out = mixed + concat([xs[2][:6], xs[1][6:]])
    assert out.error == "elements [6, 10) count rank(s) 1 twice"


def test_symbolic_missing_rank_and_coverage_errors():
    p, n = 5, 30
    xs = [symbolic_input(r, n, "float32") for r in range(p)]
    no3 = xs[0] + xs[1] + xs[2] + xs[4]
    with pytest.raises(VerificationError, match=r"elements \[0, 30\): missing rank\(s\) 3"):
        verify_symbolic(no3, n, p)
    total = no3 + xs[3]
    assert verify_symbolic([total[:10], total[10:]], n, p).startswith("symbolic")
    with pytest.raises(VerificationError, match="element 10 comes next"):
        verify_symbolic([total[:10], total[12:]], n, p)
    with pytest.raises(VerificationError, match=r"covers elements \[0, 20\)"):
        verify_symbolic([total[:20]], n, p)
    with pytest.raises(VerificationError, match=r"unexpected rank\(s\) 5"):
        verify_symbolic(total + symbolic_input(5, n, "float32"), n, p)


def test_symbolic_misaligned_add_is_recorded():
    a = symbolic_input(0, 10, "float32")
    b = symbolic_input(1, 10, "float32")
    s = a[0:5] + b[5:10]
    assert "misaligned" in s.error
    with pytest.raises(VerificationError, match="misaligned"):
        verify_symbolic([s, (a + b)[5:]], 10, 2)


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
