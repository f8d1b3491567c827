"""Sparse streams: the stream itself (:mod:`simcollective.data.stream`, its wire format and
:func:`merge`), and cutting one into ranges or joining contiguous ones (here).

Every name of the stream module is also importable from here.

Examples
--------
>>> import numpy as np
>>> s = SparseStream.from_pairs(0, 8, [1, 6], np.array([1.0, 2.0], np.float32))
>>> [p.nnz for p in split(s, 2)], concat(split(s, 2)).indices.tolist()
([1, 1], [1, 6])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .arrays import freeze, positions
from .blocks import iter_parts, sub_bounds
from .stream import DENSIFY_POLICIES, HEADER_BYTES, INDEX_BYTES, SparseStream, merge, turns_dense

__all__ = [
    "HEADER_BYTES",
    "INDEX_BYTES",
    "DENSIFY_POLICIES",
    "turns_dense",
    "SparseStream",
    "merge",
    "split",
    "split_at",
    "concat",
    "concat_is_dense",
]


def split(stream: SparseStream, q: int) -> list[SparseStream]:
    """Split a stream into ``q`` parts by :func:`~simcollective.data.blocks.sub_bounds`.

    Parts have ``n // q`` elements and the last absorbs the remainder; each part applies
    the dense rule on its exact count.
    """
    return split_at(stream, sub_bounds(stream.start, stream.stop, q))


def split_at(stream: SparseStream, bounds: Sequence[tuple[int, int]]) -> list[SparseStream]:
    """Cut a stream into explicit global ranges ``[(start, stop), ...]`` inside its range.

    Parameters
    ----------
    stream : SparseStream
    bounds : sequence of (int, int)
        Ranges within ``[stream.start, stream.stop)`` (any order, overlaps allowed).

    Returns
    -------
    list of SparseStream
        One part per range. Parts of a sparse stream share its arrays (views) unless the
        exact dense rule turns them dense; parts of a dense stream are dense views.
    """
    b = np.asarray(bounds, dtype=np.int64).reshape(-1, 2)
    if b.size and (b[:, 0].min() < stream.start or b[:, 1].max() > stream.stop
                   or np.any(b[:, 1] < b[:, 0])):
        raise ValueError(f"split bounds must be ranges within [{stream.start}, {stream.stop})")
    ib = stream.index_bytes
    parts = []
    if stream.indices is None:
        for s, e in b.tolist():
            vals = stream.values[s - stream.start: e - stream.start]
            parts.append(SparseStream(s, e, None, vals, ib))
        return parts
    idx = stream.indices
    cuts = np.searchsorted(idx, b, side="left").tolist()  # works on uint32 keys
    itemsize = stream.values.itemsize
    for (s, e), (lo, hi) in zip(b.tolist(), cuts):
        part = SparseStream(s, e, idx[lo:hi], stream.values[lo:hi], ib)
        if turns_dense(hi - lo, e - s, itemsize, ib):
            part = SparseStream(s, e, None, part.to_dense(), ib)
        parts.append(part)
    return parts


def concat(parts) -> SparseStream:
    """Join contiguous streams into one over their union range.

    Parameters
    ----------
    parts : sequence of SparseStream
        Non-empty, contiguous (``parts[i].stop == parts[i+1].start``), same dtype.

    Returns
    -------
    SparseStream
        Dense if the total is not smaller dense (entries of dense parts count as present,
        exact zeros included), else sparse. A single part already in that form is
        returned as is.
    """
    parts = list(iter_parts(parts))
    if not parts:
        raise ValueError("concat needs at least one stream")
    first = parts[0]
    if len(parts) == 1 and (first.is_dense or not concat_is_dense(parts)):
        return first
    for p, q in zip(parts, parts[1:]):
        if p.stop != q.start:
            raise ValueError(f"concat: stream [{q.start}, {q.stop}) does not follow [{p.start}, {p.stop})")
        if q.dtype != first.dtype or q.index_bytes != first.index_bytes:
            raise ValueError("concat: streams differ in dtype or index size")
    start, stop, ib = first.start, parts[-1].stop, first.index_bytes
    if concat_is_dense(parts):
        out = np.empty(stop - start, dtype=first.dtype)
        for p in parts:
            if p.indices is None:
                out[p.start - start: p.stop - start] = p.values
            else:
                seg = out[p.start - start: p.stop - start]
                seg[:] = 0
                seg[positions(p.indices, p.start)] = p.values
        return SparseStream(start, stop, None, freeze(out), ib)
    idx = np.concatenate([
        np.arange(p.start, p.stop, dtype=np.uint32) if p.indices is None else p.indices
        for p in parts
    ])
    vals = np.concatenate([p.values for p in parts])
    return SparseStream(start, stop, freeze(idx), freeze(vals), ib)


def concat_is_dense(parts: Sequence[SparseStream]) -> bool:
    """Whether :func:`concat` of these contiguous parts is dense (without building it)."""
    first = parts[0]
    total = sum(p.nnz for p in parts)
    n = sum(p.n for p in parts)
    return turns_dense(total, n, first.dtype.itemsize, first.index_bytes)
