"""Block bounds of a payload split over ranks."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simcollective.data import block_bounds, sub_bounds
from simcollective.data.blocks import largest_block


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


def test_block_bounds_gives_a_new_list_at_every_call():
    """The bounds are computed once for every rank: a caller that changes its list changes
    no other caller's."""
    first = block_bounds(10, 3)
    first[0] = (5, 5)
    first.append((0, 0))
    assert block_bounds(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert block_bounds(10, 3) is not block_bounds(10, 3)


@given(st.integers(0, 10_000), st.integers(1, 300))
def test_largest_block_is_the_largest_part(n, q):
    """The ring's chunking reads the largest block without cutting: it equals the largest
    of the parts ``block_bounds`` cuts."""
    assert largest_block(n, q) == max(b - a for a, b in block_bounds(n, q))


def test_largest_block_refuses_what_block_bounds_refuses():
    with pytest.raises(ValueError, match="must be >= 1"):
        largest_block(10, 0)
