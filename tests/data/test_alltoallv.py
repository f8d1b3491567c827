"""alltoallv's definition: the layout every run is verified against, the sizes checks and
files, and the totals."""

import json

import numpy as np
import pytest

from simcollective.data.alltoallv import alltoallv_collective, check_sizes, load_sizes, sizes_stats
from simcollective.data.collectives import Piece
from simcollective.errors import UserInputError


def test_layout_is_the_blocks_sent_to_each_rank_by_source():
    m = np.array([[4, 8, 0], [0, 12, 4], [8, 8, 8]])      # bytes, int32 elements of 4
    c = alltoallv_collective(m, 4)
    assert c.input_elements(0, 3) == 6                      # the longest send buffer: rank 2's
    # rank 1 gets rank 0's elements [1, 3), rank 1's own [0, 3), rank 2's [2, 4)
    assert c.pieces(1, 3, 0, None) == [Piece(1, 3, 1), Piece(0, 3, 2), Piece(2, 4, 4)]
    assert c.pieces(0, 3, 0, None) == [Piece(0, 1, 1), Piece(0, 0, 2), Piece(0, 2, 4)]
    assert c.size_bytes(0, 3, 4) == m.sum() // 3
    back = alltoallv_collective(m, 4, combine=True)
    assert back.pieces(2, 3, 0, None) == [Piece(0, 6, 4)]   # the combine returns rank 2's buffer


def test_uniform_matrix_is_alltoall():
    from simcollective.data.collectives import COLLECTIVES

    a2a, P, c = COLLECTIVES["alltoall"], 4, 5
    v = alltoallv_collective(np.full((P, P), c * 4), 4)
    for r in range(P):
        assert v.pieces(r, P, c, None) == a2a.pieces(r, P, c, None)
    assert v.size_bytes(c, P, 4) == a2a.size_bytes(c, P, 4) and v.busbw_factor(P) == a2a.busbw_factor(P)


@pytest.mark.parametrize("matrix,needle", [
    (np.zeros((2, 3)), "shape (2, 3) must be (2, 2)"),
    ([[0, 1], [2]], "rows of equal length"),
    ([[0, -4], [4, 0]], "entry [0, 1] = -4 is negative"),
    ([[0, 4.5], [4, 0]], "entry [0, 1] = 4.5 is not a whole number of bytes"),
    ([[0, float("nan")], [4, 0]], "is not a finite number"),
    ([[0, 6], [4, 0]], "entry [0, 1] = 6 is not a multiple of the element size (4 bytes)"),
    ([["a", "b"], ["c", "d"]], "give integers"),
    ([[0, 2**51], [0, 0]], "too large"),
])
def test_bad_matrices_name_the_entry(matrix, needle):
    with pytest.raises(UserInputError) as exc:
        check_sizes(matrix, 2, 4)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_files_npy_csv_json_read_alike(tmp_path):
    m = np.array([[0, 4, 8], [12, 0, 16], [20, 24, 0]])
    np.save(tmp_path / "m.npy", m)
    np.savetxt(tmp_path / "m.csv", m, delimiter=",", fmt="%d")
    (tmp_path / "m.json").write_text(json.dumps(m.tolist()))
    for name in ("m.npy", "m.csv", "m.json"):
        assert (check_sizes(load_sizes(tmp_path / name), 3, 4) == m).all()
    (tmp_path / "bad.csv").write_text("1,2\n3,x\n")
    with pytest.raises(UserInputError, match="cannot read a matrix"):
        load_sizes(tmp_path / "bad.csv")


def test_totals_and_imbalance():
    s = sizes_stats([[100, 10, 10], [10, 0, 10], [10, 10, 0]])
    assert s == {"total_bytes": 160, "network_bytes": 60, "max_rank_bytes": 20, "imbalance": 1.0}
    hot = sizes_stats([[0, 30, 0], [0, 0, 0], [0, 30, 0]])   # rank 1 receives 60 of the 60
    assert hot["max_rank_bytes"] == 60 and hot["imbalance"] == 3.0
    assert sizes_stats(np.zeros((2, 2)))["imbalance"] == 0.0


@pytest.mark.parametrize("module", ["simcollective.data.alltoallv", "simcollective.data.moe"])
def test_doctests(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
