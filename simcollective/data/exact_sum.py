"""The exact sum of per-rank contributions, dense or sparse, one contribution at a time.

:meth:`simcollective.data.dense.Reference.accumulate` builds a reference with
:func:`int_sum` or :func:`float_sum`; :func:`sparse_windows` also serves the
sparse patterns, which add streams the same way.

Examples
--------
>>> import numpy as np
>>> int_sum(4, np.dtype("int32"), [(None, np.array([1, 2, 3, 4], np.int32)),
...                                (np.array([0, 3], np.uint32), np.array([5, 6], np.int32))])
array([ 6,  2,  3, 10], dtype=int32)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import UserInputError
from .arrays import CHUNK, positions, scatter_add

__all__ = ["int_sum", "float_sum", "windowed_sum", "windowed_float_sum", "sparse_windows", "WINDOW_ENTRIES"]


def int_sum(n: int, dt: np.dtype, contributions: Iterable) -> np.ndarray:
    """The exact integer sum in `dt` (a UserInputError when it does not fit).

    Accumulates in the data's own dtype while a running bound on |partial sums| proves no
    overflow (half the memory and time of int64); widens to int64 only if needed.
    """
    info = np.iinfo(dt)
    total = np.zeros(n, dtype=dt)
    bound = 0
    for idx, batch in _batches(contributions):
        for _, vals in batch:
            if vals.size:
                bound += max(abs(int(vals.max())), abs(int(vals.min())))
        if bound > info.max and total.dtype != np.int64:
            total = total.astype(np.int64)
        if idx is None:
            total += batch[0][1]
        else:
            for lo, hi, items in sparse_windows(n, batch):
                for pos, vals in items:
                    scatter_add(total[lo:hi], pos, vals)
    return _fitted(total, dt)


def float_sum(n: int, dt: np.dtype, contributions: Iterable) -> tuple[np.ndarray, np.ndarray]:
    """The sum in float64 (compensated for ``float64`` data) and ``sum |x|`` per element;
    a UserInputError when partial sums can overflow `dt`."""
    total = np.zeros(n, dtype=np.float64)
    abs_sum = np.zeros(n, dtype=np.float64)
    comp = np.zeros(n, dtype=np.float64) if dt == np.float64 else None
    for idx, batch in _batches(contributions):
        if idx is not None:
            for lo, hi, items in sparse_windows(n, batch):
                for pos, vals in items:
                    _accumulate_float(total[lo:hi], abs_sum[lo:hi], None if comp is None else comp[lo:hi], pos, vals)
            continue
        vals = batch[0][1]
        for lo in range(0, n, CHUNK):  # chunks keep the temporaries small
            sel = slice(lo, min(lo + CHUNK, n))
            _accumulate_float(total, abs_sum, comp, sel, vals[sel])
    return _float_result(dt, total, abs_sum, comp)


def windowed_float_sum(n: int, dt: np.dtype, windows: Iterable) -> tuple[np.ndarray, np.ndarray]:
    """:func:`float_sum` of dense contributions given window by window (``windows`` as for
    :func:`windowed_sum`): the same two arrays, to the bit (every element takes its terms in
    contribution order either way), with one window of one contribution alive at a time."""
    total = np.zeros(n, dtype=np.float64)
    abs_sum = np.zeros(n, dtype=np.float64)
    comp = np.zeros(n, dtype=np.float64) if dt == np.float64 else None
    for lo, hi, values in windows:
        sel = slice(lo, hi)
        for vals in values:
            _accumulate_float(total, abs_sum, comp, sel, vals)
    return _float_result(dt, total, abs_sum, comp)


def _float_result(dt: np.dtype, total: np.ndarray, abs_sum: np.ndarray, comp) -> tuple[np.ndarray, np.ndarray]:
    """``(total, abs_sum)`` of a float sum, its compensation added (a UserInputError when
    partial sums can overflow `dt`)."""
    if comp is not None:
        total += comp
    if abs_sum.size and abs_sum.max() > float(np.finfo(dt).max):
        raise UserInputError(
            f"partial sums can overflow {dt.name} (sum of |x| reaches {abs_sum.max():.4g}); "
            "use fewer ranks or a wider dtype"
        )
    return total, abs_sum


def windowed_sum(n: int, dt: np.dtype, windows: Iterable, abs_max: int | None = None) -> np.ndarray:
    """The exact integer sum of dense contributions given window by window: the same array,
    to the bit, as :func:`int_sum` of the whole vectors (a UserInputError when it does not
    fit `dt`).

    ``windows`` yields ``(lo, hi, values)`` for consecutive windows ``[lo, hi)`` of ``[0, n)``,
    ``values`` an iterable of every contribution's elements there, in contribution order:
    only one window of one contribution is alive at a time (no vector-sized temporary is
    touched). ``abs_max``: a bound on every contribution's ``|x|`` known beforehand (each
    window's extremes are then not computed).
    """
    info = np.iinfo(dt)
    total = np.zeros(n, dtype=dt)
    for lo, hi, values in windows:
        bound = 0       # |partial sums| in this window: widen before an add could overflow
        for vals in values:
            if abs_max is not None:
                bound += abs_max
            elif vals.size:
                bound += max(abs(int(vals.max())), abs(int(vals.min())))
            if bound > info.max and total.dtype != np.int64:
                total = total.astype(np.int64)
            total[lo:hi] += vals
    return _fitted(total, dt)


def _fitted(total: np.ndarray, dt: np.dtype) -> np.ndarray:
    """An integer sum back in ``dt`` (a UserInputError when it does not fit)."""
    if total.dtype == np.int64 and total.dtype != dt:
        info = np.iinfo(dt)
        if total.size and (total.min() < info.min or total.max() > info.max):
            raise UserInputError(f"the exact sum overflows {dt.name}; use fewer ranks")
        total = total.astype(dt)
    return total


#: Sparse contributions are added window by window (each window of the sum taking every
#: contribution's entries in it, in rank order), about this many entries per contribution
#: and window: one scatter per contribution over the whole vector misses the cache on
#: nearly every entry (64 x 262,144 entries into 32M int32: about 50 ns per entry).
WINDOW_ENTRIES = 4096


def _batches(contributions):
    """``(None, [(None, values)])`` for each dense contribution, and ``(True, [(indices,
    values), ...])`` for each run of consecutive sparse ones (dense vectors are handled
    one at a time; sparse ones, small, are added together window by window)."""
    batch = []
    for idx, vals in contributions:
        if idx is not None:
            batch.append((idx, vals))
            continue
        if batch:
            yield True, batch
            batch = []
        yield None, [(None, vals)]
    if batch:
        yield True, batch


def sparse_windows(n: int, pairs, start: int = 0):
    """Cut sparse contributions by windows of the vector: ``(lo, hi, [(positions, values),
    ...])`` for each window ``[lo, hi)`` of ``[0, n)`` holding entries, windows in order,
    and in each the entries of every pair ``(indices, values)`` of ``pairs`` in it, in
    list order (``positions = indices - start - lo``, native-width; indices unique per
    pair, in ``[start, start + n)``, sorted here if they are not).

    Adding window by window keeps the part of the vector being written in cache (about
    :data:`WINDOW_ENTRIES` entries per pair and window, windows of 2**16 to 2**24
    elements) while every element still takes its terms in list order.
    """
    pairs = [(idx, vals) if np.all(idx[1:] > idx[:-1]) else _sorted_pairs(idx, vals) for idx, vals in pairs]
    if not pairs:
        return
    per = max(1, sum(v.shape[0] for _, v in pairs) // len(pairs))
    width = 1 << max(16, min(24, (n * WINDOW_ENTRIES // per).bit_length()))
    bounds = np.minimum(np.arange(0, n + width, width, dtype=np.int64), n)
    cuts = [np.searchsorted(idx, (bounds + start).astype(idx.dtype)).tolist() for idx, _ in pairs]
    for w in range(bounds.shape[0] - 1):
        lo, hi = int(bounds[w]), int(bounds[w + 1])
        if lo == hi:
            break
        items = [(positions(idx[c[w]:c[w + 1]], start + lo), vals[c[w]:c[w + 1]])
                 for (idx, vals), c in zip(pairs, cuts) if c[w] < c[w + 1]]
        if items:
            yield lo, hi, items


def _sorted_pairs(idx, vals):
    """``(idx, vals)`` in increasing index order (contributions need not come sorted)."""
    order = np.argsort(idx, kind="stable")
    return idx[order], vals[order]


def _accumulate_float(total, abs_sum, comp, sel, vals) -> None:
    """Add ``vals`` into ``total[sel]`` (compensated when ``comp`` is given) and |vals| into
    ``abs_sum[sel]``."""
    x = vals.astype(np.float64)
    abs_sum[sel] += np.abs(x)
    if comp is None:
        total[sel] += x
        return
    s = total[sel]
    t = s + x  # TwoSum: t + err == s + x exactly
    bp = t - s
    comp[sel] += (s - (t - bp)) + (x - bp)
    total[sel] = t
