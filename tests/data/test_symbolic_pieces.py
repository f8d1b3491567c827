"""Size-only pieces (:func:`cut`, :class:`SymbolicPieces`): the same slices and sums as a
list of slices, one object until they are read."""

from hypothesis import given, strategies as st

from simcollective.data.symbolic import SymbolicArray, SymbolicPieces, cut, symbolic_input


def _fields(a: SymbolicArray) -> tuple:
    return a.start, a.stop, a.segments, a.nbytes, a.error


@st.composite
def cuts(draw):
    n = draw(st.integers(1, 300))
    marks = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=10)))
    return n, tuple(zip(marks[:-1], marks[1:]))


@given(cuts(), st.integers(0, 200), st.integers(0, 5), st.integers(0, 5))
def test_pieces_slice_and_add_as_a_list_of_slices(cut_, offset, ra, rb):
    n, bounds = cut_
    xa, xb = symbolic_input(ra, offset + n, "float32"), symbolic_input(rb, offset + n, "float32")
    xa, xb = xa[offset:], xb[offset:]   # (pieces of an array that does not start at 0)
    pa, pb = cut(xa, bounds), cut(xb, bounds)
    assert isinstance(pa, SymbolicPieces) and len(pa) == len(bounds)
    la, lb = [xa[a:b] for a, b in bounds], [xb[a:b] for a, b in bounds]
    assert [_fields(p) for p in pa] == [_fields(p) for p in la]
    total = pa + pb
    want = [a + b for a, b in zip(la, lb)]
    assert [(p.start, p.stop, p.segments, p.nbytes) for p in total] == [(p.start, p.stop, p.segments, p.nbytes)
                                                                        for p in want]
    # a double count is recorded (on the first piece's range), as each slice's sum records it
    assert (total.error is not None) == (ra == rb and any(a < b for a, b in bounds))
    if any(a < b for a, b in bounds):
        assert (total.error is None) == all(p.error is None for p in want)
    # sums with lists of slices go piece by piece, either way round
    assert [_fields(p) for p in pa + lb] == [_fields(p) for p in want]
    assert [_fields(p) for p in lb + pa] == [_fields(b + a) for a, b in zip(la, lb)]


def test_pieces_cut_at_other_places_add_piece_by_piece():
    x, y = symbolic_input(0, 10, "float32"), symbolic_input(1, 10, "float32")
    got = cut(x, ((0, 4), (4, 10))) + cut(y, ((1, 5), (4, 10)))
    assert isinstance(got, list) and [p.error is not None for p in got] == [True, False]   # misaligned: recorded
    assert [_fields(p) for p in got] == [_fields(x[0:4] + y[1:5]), _fields(x[4:10] + y[4:10])]


def test_pieces_out_of_range_carry_an_error():
    x = symbolic_input(0, 10, "float32")
    assert [p.error is not None for p in cut(x, ((0, 4), (4, 12)))] == [False, True]


def test_arrays_of_several_bitsets_and_numpy_arrays_are_cut_into_lists():
    x = symbolic_input(0, 10, "float32")[:5] + symbolic_input(1, 10, "float32")[5:]
    mixed = symbolic_input(2, 5, "float32")
    two = SymbolicArray(0, 5, "float32", ((0, 2, 1), (2, 5, 3)))
    assert isinstance(cut(two, ((0, 3),)), list) and isinstance(cut(x + mixed, ((0, 1),)), SymbolicPieces)
