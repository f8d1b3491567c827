"""alltoallv: an all-to-all with one size per (source, destination) pair.

Rank i sends ``sizes[i][j]`` bytes to rank j (``sizes`` a P x P matrix of integers >= 0,
the diagonal what a rank keeps). Rank i's send buffer is its blocks laid end to end in
destination order (``sdispls`` = the row's exclusive prefix sums, as ``MPI_Alltoallv`` and
NCCL's grouped send/recv take them); its result is the blocks it receives, in source
order. In elements of the run's dtype (every entry must be a whole number of elements):

=============== ==================================================================
input of rank i ``max_i sum_j sizes[i][j]`` elements (the longest send buffer; the
                tail past rank i's own row sum is not sent)
result of r     ``(sdispls[j][r], sdispls[j][r] + counts[j][r], {j})`` for j = 0..P-1
after combine   the combine is the transpose (every block returns to its sender), so
                rank r holds ``(0, sum_j counts[r][j], {r})``: its own send buffer
=============== ==================================================================

``bytes`` (what algbw divides by) is the mean send buffer, ``sum(sizes) / P`` (for uniform
sizes exactly the nccl-tests size of an alltoall); busbw uses alltoall's factor (P-1)/P.

>>> c = alltoallv_collective([[0, 4], [8, 4]], 4)
>>> c.pieces(1, 2, 0, None)
[Piece(lo=0, hi=1, source=1), Piece(lo=2, hi=3, source=2)]
>>> sizes_stats([[0, 4], [8, 4]])["imbalance"]     # rank 1 sends 8 bytes, the mean is 6
1.3333333333333333
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np

from ..errors import UserInputError
from .collectives import Collective, Piece

__all__ = ["VCollective", "alltoallv_collective", "check_sizes", "load_sizes", "sizes_stats",
           "SIZES_SUFFIXES"]

#: the file types ``--sizes`` reads
SIZES_SUFFIXES = (".npy", ".csv", ".json")


@dataclass(frozen=True)
class VCollective(Collective):
    """alltoallv with its matrix of counts (elements) and whether the combine follows."""

    counts: np.ndarray = None   # P x P int64, elements
    combine: bool = False

    def input_elements(self, count: int, nranks: int) -> int:
        return max(1, int(self.counts.sum(axis=1).max()))

    def size_bytes(self, count: int, nranks: int, itemsize: int) -> int:
        return int(self.counts.sum()) * itemsize // nranks


def _layout(counts: np.ndarray, combine: bool):
    displs = np.zeros_like(counts)
    displs[:, 1:] = np.cumsum(counts, axis=1)[:, :-1]
    rows = counts.sum(axis=1)

    def layout(r, P, count, root):
        if combine:
            return [Piece(0, int(rows[r]), 1 << r)]
        return [Piece(int(displs[j, r]), int(displs[j, r] + counts[j, r]), 1 << j) for j in range(P)]
    return layout


def alltoallv_collective(sizes, itemsize: int, combine: bool = False) -> VCollective:
    """The alltoallv of a checked ``sizes`` matrix in bytes (see :func:`check_sizes`),
    counted in elements of ``itemsize`` bytes; ``combine``: the transpose follows."""
    counts = np.asarray(sizes, dtype=np.int64) // itemsize
    return VCollective("alltoallv", "alltoall_perf", True, False, False, lambda P: 1,
                       _layout(counts, combine), counts, combine)


def _entry_error(where: str, i: int, j: int, value, why: str) -> UserInputError:
    return UserInputError(f"{where}: entry [{i}, {j}] = {value!r} {why}")


def check_sizes(matrix, nranks: int, itemsize: int, where: str = "--sizes") -> np.ndarray:
    """``matrix`` as a P x P int64 array of bytes, checked: the shape, every entry a finite
    integer >= 0 and a whole number of ``itemsize``-byte elements. One-line errors naming
    the bad value and what is allowed."""
    try:
        a = np.asarray(matrix)
    except (ValueError, TypeError):
        raise UserInputError(f"{where}: not a matrix of numbers (rows of equal length); give a "
                             f"{nranks} x {nranks} matrix of bytes") from None
    if a.dtype == object or a.ndim != 2 or a.shape != (nranks, nranks):
        shape = "ragged rows" if a.dtype == object else f"shape {a.shape}"
        raise UserInputError(f"{where}: {shape} must be ({nranks}, {nranks}): one row (source) and one "
                             f"column (destination) per rank of the run")
    if a.dtype.kind not in "iuf" or a.dtype.kind == "b":
        raise UserInputError(f"{where}: entries are {a.dtype} values; give integers (bytes >= 0)")
    bad = ~np.isfinite(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    for mask, why in ((bad, "is not a finite number; give bytes >= 0"),
                      (~bad & (a < 0), "is negative; sizes are bytes >= 0"),
                      (~bad & (a != np.floor(a)) if a.dtype.kind == "f" else bad, "is not a whole number of bytes"),
                      (~bad & (a > 2**50), "is too large (at most 2^50 bytes per pair)")):
        if mask.any():
            i, j = map(int, np.argwhere(mask)[0])
            raise _entry_error(where, i, j, a[i, j].item(), why)
    out = a.astype(np.int64)
    rest = out % itemsize
    if rest.any():
        i, j = map(int, np.argwhere(rest)[0])
        raise _entry_error(where, i, j, int(out[i, j]),
                           f"is not a multiple of the element size ({itemsize} bytes); give whole elements")
    return out


def load_sizes(path, what: str = "--sizes"):
    """The matrix of a ``.npy``, ``.csv`` (comma-separated rows) or ``.json`` (list of rows)
    file, read with :mod:`simcollective.files`' limits (checked later by :func:`check_sizes`)."""
    from ..files import load_json, read_bytes, read_text

    name = str(path)
    low = name.lower()
    if not low.endswith(SIZES_SUFFIXES):
        raise UserInputError(f"{what} {name!r}: unknown file type; give one of: {', '.join(SIZES_SUFFIXES)}")
    where = f"{what} {name}"
    try:
        if low.endswith(".npy"):
            return np.load(io.BytesIO(read_bytes(path, what, "sizes file")), allow_pickle=False)
        if low.endswith(".json"):
            return load_json(path, what, "sizes file")
        text = read_text(path, what, "sizes file")
        return np.loadtxt(io.StringIO(text), delimiter=",", ndmin=2)
    except UserInputError:
        raise
    except (ValueError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserInputError(f"{where}: cannot read a matrix ({first})") from None


def sizes_stats(sizes) -> dict:
    """Totals of a bytes matrix: ``total_bytes`` (every entry), ``network_bytes`` (off the
    diagonal), ``max_rank_bytes`` (the largest of any rank's bytes sent or received off the
    diagonal) and ``imbalance`` = max_rank_bytes / the mean bytes sent per rank (1 for a
    uniform matrix; 0 when nothing moves)."""
    a = np.asarray(sizes, dtype=np.int64)
    off = a - np.diag(np.diag(a))
    sent, recv = off.sum(axis=1), off.sum(axis=0)
    top = int(max(sent.max(), recv.max())) if a.size else 0
    mean = float(sent.mean()) if a.size else 0.0
    return {"total_bytes": int(a.sum()), "network_bytes": int(off.sum()), "max_rank_bytes": top,
            "imbalance": top / mean if mean > 0 else 0.0}
