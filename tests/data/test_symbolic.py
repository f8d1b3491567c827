"""Symbolic (size-only) payloads: ring verification, double counts, missing ranks, misaligned
adds, slices and sums against a per-element model, nesting."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.data import concat, format_ranks, symbolic_input, SymbolicArray, verify_symbolic
from simcollective.data.symbolic import concat as symbolic_concat
from simcollective.errors import VerificationError
from simcollective.patterns.dense import flatten
from tests.conftest import ring_allreduce


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


# -- size-only arrays -------------------------------------------------------------------------------
def _model(arr):
    """Per-element rank sets of a symbolic array (the reference model)."""
    out = []
    for s, e, m in arr.segments:
        out += [m] * (e - s)
    return out


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_slices_and_sums_match_a_per_element_model(data):
    n = data.draw(st.integers(1, 40))
    P = data.draw(st.integers(1, 6))
    xs = [symbolic_input(r, n, "float32") for r in range(P)]
    # a sum of random slices of random ranks laid end to end: any segment structure
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=4)) if n > 1 else []))
    bounds = list(zip([0] + cuts, cuts + [n]))
    parts = []
    for a, b in bounds:
        ranks = data.draw(st.sets(st.integers(0, P - 1), min_size=1))
        acc = None
        for r in sorted(ranks):
            acc = xs[r][a:b] if acc is None else acc + xs[r][a:b]
        parts.append(acc)
    arr = symbolic_concat(parts)
    model = _model(arr)
    assert len(model) == len(arr) == n and arr.nbytes == 4 * n
    assert (arr.mask is not None) == (len(arr.segments) == 1)  # one bitset: kept as .mask
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    sub = arr[lo:hi]
    assert _model(sub) == model[lo:hi] and (sub.start, sub.stop) == (lo, hi)
    other = xs[data.draw(st.integers(0, P - 1))][lo:hi]
    total = sub + other
    om = _model(other)
    assert _model(total) == [m | o for m, o in zip(model[lo:hi], om)]
    assert (total.error is not None) == any(m & o for m, o in zip(model[lo:hi], om))


def test_one_bitset_arrays_still_record_double_counts_and_misuse():
    a = symbolic_input(0, 10, "float32")
    b = symbolic_input(1, 10, "float32")
    s = a[2:6] + b[2:6]
    assert s.mask == 3 and s.segments == ((2, 6, 3),) and s.error is None
    assert "count rank(s) 0 twice" in (s + a[2:6]).error
    assert "misaligned" in (a[0:4] + b[2:6]).error
    assert (a[0:0] + b[0:0]).segments == () and a[5:5].segments == ()
    assert SymbolicArray(0, 4, "float32", ((0, 4, 5),)).mask == 5
    with pytest.raises(VerificationError, match="twice"):
        verify_symbolic([s + a[2:6]], 4, 2)


def test_flatten_walks_deeper_nesting():
    x, y, z, w = (symbolic_input(r, 4, "float32") for r in range(4))
    assert flatten([[x, [y, z]], w, (x,)]) == [x, y, z, w, x]
    assert flatten([[x], [y, z]]) == [x, y, z]


def test_slices_of_every_rank_at_the_same_place_share_their_bounds_and_size():
    from simcollective.data.symbolic import symbolic_input

    a, b = symbolic_input(0, 10**6, "float32"), symbolic_input(5, 10**6, "float32")
    x, y = a[1000:300000], b[1000:300000]
    assert (x.start, x.stop, x.nbytes) == (y.start, y.stop, y.nbytes) == (1000, 300000, 299000 * 4)
    assert x.start is y.start and x.stop is y.stop and x.nbytes is y.nbytes
    assert x.segments == ((1000, 300000, 1),) and y.segments == ((1000, 300000, 1 << 5),)


def test_slices_at_the_same_bounds_of_other_dtypes_and_starts_keep_their_own_sizes():
    """A slice's bounds and size are found by the array's start, the bounds and the dtype
    together: the same relative bounds of a float16 array, of a float64 one and of an array
    starting elsewhere each give their own global bounds and bytes (and the ints shared)."""
    f4, h2, f8 = (symbolic_input(0, 1000, dt) for dt in ("float32", "float16", "float64"))
    later = f4[100:1000]   # starts at 100
    for arr, item, start in ((f4, 4, 0), (h2, 2, 0), (f8, 8, 0), (later, 4, 100)):
        for _ in range(2):   # made once, then found
            s = arr[10:30]
            assert (s.start, s.stop, s.nbytes, s.dtype.itemsize) == (start + 10, start + 30, 20 * item, item)
    assert h2[10:30].start is f8[10:30].start and f4[10:30].nbytes is h2[10:50].nbytes is f8[20:30].nbytes
