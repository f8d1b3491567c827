"""SparCML-style sparse streams carrying real values.

A :class:`SparseStream` is a vector over the global index range ``[start, stop)``, either
SPARSE (sorted unique absolute ``uint32`` indices and their values) or DENSE (all ``n``
values). On the wire it is a 4-byte count followed by ``nnz`` (index, value) pairs, or by
the ``n`` values when dense:

* sparse: ``4 + nnz * (index_bytes + itemsize)`` bytes,
* dense: ``4 + n * itemsize`` bytes.

Dense switch rule: a stream is dense as soon as ``nnz * (index_bytes + itemsize) >=
n * itemsize``. Merges test it on the exact union size (``densify="exact"``, the default)
or on the upper bound ``n1 + n2`` before merging (``densify="upper-bound"``, as the
study's code does, so parts turn dense slightly early); splits and concatenations always
test the exact count. Once dense, a stream stays dense (only :meth:`SparseStream.drop_zeros`
and :meth:`SparseStream.topk` produce sparse streams from dense ones). Exact zeros produced
by cancellation stay present as entries.

Streams are immutable and share their arrays: splitting a sparse stream returns views,
and merging never modifies an operand.

Sizing API: the runtime sizes every payload with ``payload.nbytes``; for a stream that is
:attr:`SparseStream.wire_bytes` (its wire size with the stream's own index size, 4 bytes
unless chosen otherwise at construction). :meth:`SparseStream.wire_size` gives the size
for another index width.
"""

from __future__ import annotations

import numpy as np

from .arrays import check_dtype, freeze, positions, scatter_add

__all__ = ["HEADER_BYTES", "INDEX_BYTES", "DENSIFY_POLICIES", "turns_dense", "SparseStream", "merge"]

#: Bytes of the count header that starts every stream.
HEADER_BYTES = 4
#: Default bytes per index on the wire (the study's 32-bit indices).
INDEX_BYTES = 4
#: Accepted values of the ``densify`` policy of :func:`merge`.
DENSIFY_POLICIES = ("exact", "upper-bound")

_MAX_INDEX = 2**32 - 1  # indices (and range ends) are stored as uint32


def turns_dense(nnz: int, n: int, itemsize: int, index_bytes: int = INDEX_BYTES) -> bool:
    """The dense switch rule: ``nnz * (index_bytes + itemsize) >= n * itemsize``.

    Parameters
    ----------
    nnz : int
        Number of (index, value) entries.
    n : int
        Length of the stream's range.
    itemsize : int
        Bytes per value.
    index_bytes : int
        Bytes per index.

    Returns
    -------
    bool
        True if the stream is not smaller dense.
    """
    return nnz * (index_bytes + itemsize) >= n * itemsize


class SparseStream:
    """An immutable sparse-or-dense vector over the global range ``[start, stop)``.

    Build streams with :meth:`from_pairs`, :meth:`from_dense` or :meth:`empty`; the
    constructor itself does no validation and is internal.

    Attributes
    ----------
    start, stop : int
        Global index range; ``n = stop - start``.
    dtype : numpy.dtype
        Value type.
    index_bytes : int
        Bytes per index on the wire (used by the dense rule and :attr:`wire_bytes`).
    """

    __slots__ = ("start", "stop", "dtype", "index_bytes", "_indices", "_values")

    def __init__(self, start: int, stop: int, indices: np.ndarray | None, values: np.ndarray,
                 index_bytes: int = INDEX_BYTES):
        self.start = start
        self.stop = stop
        self.dtype = values.dtype
        self.index_bytes = index_bytes
        self._indices = indices
        self._values = values

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_pairs(cls, start: int, stop: int, indices, values, *, index_bytes: int = INDEX_BYTES,
                   keep_sparse: bool = False) -> "SparseStream":
        """Build a stream from sorted unique absolute indices and their values.

        Parameters
        ----------
        start, stop : int
            Global range, ``0 <= start <= stop < 2**32``.
        indices : array_like of int
            Strictly increasing indices in ``[start, stop)``.
        values : array_like
            One value per index; dtype one of ``float32, float16, float64, int32``.
        index_bytes : int
            Bytes per index on the wire.
        keep_sparse : bool
            If False (default) the dense rule applies and a stream with too many entries
            is returned dense; if True it stays sparse whatever its size.

        Returns
        -------
        SparseStream

        Raises
        ------
        ValueError
            If the range, the indices or the lengths are invalid.
        """
        start, stop = _check_range(start, stop)
        values = np.asarray(values)
        check_dtype(values.dtype)
        idx = np.asarray(indices)
        if idx.ndim != 1 or values.ndim != 1 or idx.shape != values.shape:
            raise ValueError(
                f"indices {idx.shape} and values {values.shape} must be 1-D of the same length"
            )
        if idx.size:
            if idx.dtype.kind not in "iu":
                raise ValueError(f"indices must be integers, not {idx.dtype.name}")
            if int(idx[0]) < start or int(idx[-1]) >= stop:
                raise ValueError(f"indices must lie in [{start}, {stop})")
            if not np.all(idx[1:] > idx[:-1]):
                raise ValueError("indices must be sorted and unique")
        idx = freeze(idx.astype(np.uint32)) if idx.dtype != np.uint32 else _frozen(idx)
        values = _frozen(values)
        stream = cls(start, stop, idx, values, index_bytes)
        if not keep_sparse and turns_dense(idx.size, stop - start, values.itemsize, index_bytes):
            return stream._densified()
        return stream

    @classmethod
    def from_dense(cls, start: int, values, *, index_bytes: int = INDEX_BYTES) -> "SparseStream":
        """A dense stream holding ``values`` over ``[start, start + len(values))``.

        ``values`` is used as is when it is already read-only, otherwise copied.
        """
        values = np.asarray(values)
        check_dtype(values.dtype)
        if values.ndim != 1:
            raise ValueError(f"values must be 1-D, not of shape {values.shape}")
        start, stop = _check_range(start, int(start) + values.shape[0])
        return cls(start, stop, None, _frozen(values), index_bytes)

    @classmethod
    def empty(cls, start: int, stop: int, dtype, *, index_bytes: int = INDEX_BYTES) -> "SparseStream":
        """A sparse stream with no entries over ``[start, stop)``."""
        start, stop = _check_range(start, stop)
        dt = check_dtype(dtype)
        return cls(start, stop, freeze(np.empty(0, np.uint32)), freeze(np.empty(0, dt)), index_bytes)

    # -- properties ------------------------------------------------------------------------

    @property
    def n(self) -> int:
        """Length of the range, ``stop - start``."""
        return self.stop - self.start

    @property
    def size(self) -> int:
        """Number of elements of the vector represented (``n``, as NumPy's ``size``)."""
        return self.stop - self.start

    def __len__(self) -> int:
        return self.stop - self.start

    @property
    def is_dense(self) -> bool:
        """True when the stream holds all ``n`` values."""
        return self._indices is None

    @property
    def nnz(self) -> int:
        """Number of entries: the (index, value) pairs, or ``n`` when dense."""
        return self._values.shape[0]

    @property
    def indices(self) -> np.ndarray | None:
        """Sorted unique absolute ``uint32`` indices (read-only), or None when dense."""
        return self._indices

    @property
    def values(self) -> np.ndarray:
        """The values (read-only): one per index, or all ``n`` when dense."""
        return self._values

    def wire_size(self, index_bytes: int | None = None) -> int:
        """Bytes on the wire with ``index_bytes`` per index (default: the stream's own)."""
        ib = self.index_bytes if index_bytes is None else index_bytes
        per = self._values.itemsize if self._indices is None else ib + self._values.itemsize
        return HEADER_BYTES + self._values.shape[0] * per

    @property
    def wire_bytes(self) -> int:
        """Bytes on the wire: ``4 + nnz*(index_bytes+itemsize)`` sparse, ``4 + n*itemsize`` dense."""
        return self.wire_size()

    @property
    def nbytes(self) -> int:
        """Same as :attr:`wire_bytes` (the runtime sizes messages with ``payload.nbytes``)."""
        return self.wire_size()

    def __repr__(self) -> str:
        kind = "dense" if self.is_dense else f"sparse nnz={self.nnz}"
        return f"SparseStream([{self.start}, {self.stop}) {self.dtype.name} {kind})"

    # -- arithmetic and conversions --------------------------------------------------------

    def __add__(self, other):
        if not isinstance(other, SparseStream):
            return NotImplemented
        return merge(self, other)

    def to_dense(self) -> np.ndarray:
        """All ``n`` values as a read-only array (the dense stream's own when dense)."""
        if self._indices is None:
            return self._values
        out = np.zeros(self.n, dtype=self.dtype)
        out[positions(self._indices, self.start)] = self._values
        return freeze(out)

    def drop_zeros(self) -> "SparseStream":
        """The entries whose value is not exactly zero, as a sparse stream (never densified)."""
        if self._indices is None:
            nz = np.flatnonzero(self._values)
            idx = (nz + self.start).astype(np.uint32)
            return SparseStream(self.start, self.stop, freeze(idx), freeze(self._values[nz]),
                                self.index_bytes)
        keep = self._values != 0
        if keep.all():
            return self
        return SparseStream(self.start, self.stop, freeze(self._indices[keep]),
                            freeze(self._values[keep]), self.index_bytes)

    def topk(self, k: int) -> "SparseStream":
        """Keep the ``k`` entries of largest ``|value|`` (ties: lower index first).

        Parameters
        ----------
        k : int
            Number of entries to keep (>= 0); all entries are kept if ``k >= nnz``.

        Returns
        -------
        SparseStream
            A sparse stream (never densified: a top-k selection is a list of k pairs),
            indices ascending.
        """
        k = int(k)
        if k < 0:
            raise ValueError(f"k = {k} must be >= 0")
        vals = self._values
        m = vals.shape[0]
        if self._indices is not None and k >= m:
            return self
        if k >= m:
            sel = np.arange(m)
        elif k == 0:
            sel = np.empty(0, dtype=np.intp)
        else:
            mag = np.abs(vals.astype(np.int64) if vals.dtype.kind == "i" else vals)
            thr = np.partition(mag, m - k)[m - k]  # the k-th largest magnitude
            take = mag > thr
            need = k - int(np.count_nonzero(take))
            take[np.flatnonzero(mag == thr)[:need]] = True  # ties: lowest positions first
            sel = np.flatnonzero(take)
        if self._indices is None:
            idx = (sel + self.start).astype(np.uint32)
        else:
            idx = self._indices[sel]
        return SparseStream(self.start, self.stop, freeze(idx), freeze(vals[sel]), self.index_bytes)

    # -- internals -------------------------------------------------------------------------

    def _densified(self) -> "SparseStream":
        return SparseStream(self.start, self.stop, None, self.to_dense(), self.index_bytes)

    def _same_shape(self, other: "SparseStream", what: str) -> None:
        if (self.start, self.stop) != (other.start, other.stop):
            raise ValueError(
                f"{what}: ranges [{self.start}, {self.stop}) and [{other.start}, {other.stop}) differ"
            )
        if self.dtype != other.dtype:
            raise ValueError(f"{what}: dtypes {self.dtype.name} and {other.dtype.name} differ")
        if self.index_bytes != other.index_bytes:
            raise ValueError(f"{what}: index sizes {self.index_bytes} and {other.index_bytes} differ")


def _check_range(start, stop) -> tuple[int, int]:
    start, stop = int(start), int(stop)
    if not 0 <= start <= stop <= _MAX_INDEX:
        raise ValueError(f"invalid stream range [{start}, {stop}); need 0 <= start <= stop <= 2**32 - 1")
    return start, stop


def _frozen(arr: np.ndarray) -> np.ndarray:
    """``arr`` if it is read-only, else a read-only copy (never touches the caller's array)."""
    if not arr.flags.writeable:
        return arr
    return freeze(arr.copy())


def merge(a: SparseStream, b: SparseStream, densify: str = "exact") -> SparseStream:
    """Sum two streams over the same range (also ``a + b``, with the default policy).

    Parameters
    ----------
    a, b : SparseStream
        Same range, dtype and index size.
    densify : {"exact", "upper-bound"}
        How two sparse operands decide whether the result is dense: on the exact union size
        (default) or on ``nnz(a) + nnz(b)`` before merging (the study's code).

    Returns
    -------
    SparseStream
        Sparse + sparse: the sorted union with values summed at common indices (dense if
        the policy says so). Anything + dense: dense (scatter-add into a copy, or
        elementwise). Exact zeros from cancellation stay present. An operand may be
        returned as is when the other one is an empty sparse stream.

    Notes
    -----
    The sparse union is one compiled pass over both sorted runs
    (:func:`~simcollective.data.merge_kernel.union`, linear in both, for every dtype: it
    moves the values' bits), and one NumPy addition at the indices common to both. It
    replaced a NumPy union (a stable argsort of the concatenated runs, or ``searchsorted``
    of a run more than 16 times shorter than the other), which cost about half of the
    sparse-ring allreduce's time in benchmark S2 (``benchmarks/``).
    """
    if densify not in DENSIFY_POLICIES:
        raise ValueError(f"densify policy {densify!r} is not one of {', '.join(DENSIFY_POLICIES)}")
    a._same_shape(b, "merge")
    start, stop, n = a.start, a.stop, a.n
    ai, bi = a._indices, b._indices
    if ai is None and bi is None:
        return SparseStream(start, stop, None, freeze(a._values + b._values), a.index_bytes)
    if ai is None or bi is None:
        dense, sp = (a, b) if ai is None else (b, a)
        out = dense._values.copy()
        scatter_add(out, positions(sp._indices, start), sp._values)
        return SparseStream(start, stop, None, freeze(out), a.index_bytes)
    n1, n2 = ai.shape[0], bi.shape[0]
    if n2 == 0:
        return a
    if n1 == 0:
        return b
    itemsize, ib = a._values.itemsize, a.index_bytes
    if densify == "upper-bound" and turns_dense(n1 + n2, n, itemsize, ib):
        out = np.zeros(n, dtype=a.dtype)
        out[positions(ai, start)] = a._values
        scatter_add(out, positions(bi, start), b._values)
        return SparseStream(start, stop, None, freeze(out), ib)
    idx, vals = _sum_union(ai, a._values, bi, b._values)
    if turns_dense(idx.shape[0], n, itemsize, ib):
        out = np.zeros(n, dtype=a.dtype)
        out[positions(idx, start)] = vals
        return SparseStream(start, stop, None, freeze(out), ib)
    return SparseStream(start, stop, freeze(idx), freeze(vals), ib)


def _sum_union(ai, av, bi, bv):
    """The sorted union of two non-empty sparse runs, values summed where both have one."""
    from .merge_kernel import union  # (numba loads on the first sparse + sparse merge)

    n1, n2 = ai.shape[0], bi.shape[0]
    bits = np.dtype(f"u{av.itemsize}")
    idx = np.empty(n1 + n2, dtype=np.uint32)
    vals = np.empty(n1 + n2, dtype=av.dtype)
    at = np.empty(min(n1, n2), dtype=np.intp)
    src = np.empty(min(n1, n2), dtype=np.intp)
    u, h = union(ai, av.view(bits), bi, bv.view(bits), idx, vals.view(bits), at, src)
    idx, vals = idx[:u], vals[:u]
    if h:
        # at an index in both runs: a's value + b's (two operands: a + b == b + a,
        # also in floating point)
        vals[at[:h]] += bv[src[:h]]
    return idx, vals
