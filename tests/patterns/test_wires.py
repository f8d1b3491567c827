"""Payloads sized as a protocol sends them: Wire, Wires (several in one message) and WireCut
(pieces of an input, cut when read) give the same bytes and data."""

import numpy as np
from hypothesis import given, strategies as st

from simcollective.data.symbolic import symbolic_input
from simcollective.patterns.channels import Wire, WireCut, Wires

FACTORS = st.sampled_from([1.0, 1.0 + 1 / 7, 2.0, 15 / 8])


@st.composite
def cuts(draw):
    n = draw(st.integers(1, 500))
    marks = sorted(draw(st.lists(st.integers(0, n), min_size=2, max_size=12)))
    return n, tuple(zip(marks[:-1], marks[1:]))


@given(cuts(), FACTORS, st.booleans())
def test_wires_and_wirecut_send_the_bytes_of_their_wires_and_carry_the_same_pieces(cut, factor, symbolic):
    n, bounds = cut
    x = symbolic_input(3, n, "float32") if symbolic else np.arange(n, dtype=np.float32)
    pieces = [x[a:b] for a, b in bounds]
    expected = sum(Wire(p, factor).nbytes for p in pieces)
    assert Wires(pieces, factor).nbytes == expected
    cut_payload = WireCut(x, bounds, factor)
    assert cut_payload.nbytes == expected
    for got, want in zip(cut_payload.data, pieces):
        if symbolic:
            assert (got.start, got.stop, got.segments, got.nbytes) == (want.start, want.stop, want.segments, want.nbytes)
        else:
            assert np.array_equal(got, want)
    assert len(cut_payload.data) == len(pieces)
