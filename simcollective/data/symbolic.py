"""Size-only payloads and symbolic verification.

When ``P x N x itemsize`` does not fit in memory, payloads carry no values but keep their
real sizes. A :class:`SymbolicArray` stands for a contiguous range ``[start, stop)`` of the
global vector and records, for each element, the set of ranks whose contribution it holds
(a Python ``int`` bitset per segment). Adding two arrays ORs the sets; if a rank would be
counted twice the array records the error (it never raises inside the simulation) and the
error propagates to everything derived from it. :func:`verify_symbolic` then checks that
every element of a result holds each of the ``P`` contributions exactly once.

>>> a = symbolic_input(0, 8, "float32"); b = symbolic_input(1, 8, "float32")
>>> s = a[0:4] + b[0:4]
>>> s.start, s.stop, s.nbytes, s.segments
(0, 4, 16, ((0, 4, 3),))
"""

from __future__ import annotations

import numpy as np

from .arrays import check_dtype, freeze
from .blocks import iter_parts

__all__ = ["SymbolicArray", "SymbolicPieces", "symbolic_input", "concat", "cut", "format_ranks"]


def format_ranks(mask: int, limit: int = 16) -> str:
    """Format the ranks of a bitset ``mask`` (bit ``r`` set = rank ``r``) compactly, at most
    ``limit`` runs shown before eliding the rest: ``format_ranks(0b1011) == '0-1, 3'``."""
    runs: list[str] = []
    total = mask.bit_count()
    while mask and len(runs) < limit:
        lo = (mask & -mask).bit_length() - 1  # lowest rank present
        shifted = mask >> lo
        hi = lo + (shifted ^ (shifted + 1)).bit_length() - 1  # first rank after the run
        runs.append(str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}")
        mask = mask >> hi << hi
    if mask:
        runs.append(f"... ({total} ranks in all)")
    return ", ".join(runs) if runs else "none"


class SymbolicArray:
    """An immutable, value-less stand-in for a contiguous slice of the global vector.

    Parameters
    ----------
    start, stop : int
        Global range ``[start, stop)`` represented.
    dtype : str or numpy.dtype
        Element type (sets :attr:`nbytes`).
    segments : tuple of (int, int, int)
        ``(seg_start, seg_stop, mask)`` triples in global coordinates, contiguous, covering
        ``[start, stop)`` in order; ``mask`` is the bitset of contributing ranks.
    error : str or None
        First double count (or misuse) recorded on the way to this array.

    Notes
    -----
    Supports the NumPy surface algorithms use on payloads: ``a + b`` (same length),
    ``a[i:j]`` (slices with step 1, relative indices), ``len(a)``, ``.size``, ``.nbytes``,
    ``.dtype``, ``.shape`` and ``.ndim``.

    An array whose elements all hold the same ranks (every input, every block a
    simulation cuts and sums) keeps that bitset in :attr:`mask` and no segment tuples:
    slicing it and adding two aligned ones is O(1) and makes one object, the new array.
    Otherwise ``mask`` is None and the segments are kept as given.
    """

    __slots__ = ("start", "stop", "dtype", "mask", "_segs", "error", "nbytes")

    def __init__(self, start: int, stop: int, dtype, segments: tuple, error: str | None = None):
        self.start = start
        self.stop = stop
        self.dtype = dtype = dtype if isinstance(dtype, np.dtype) else check_dtype(dtype)
        segments = tuple(segments)
        if len(segments) == 1 and segments[0][0] == start and segments[0][1] == stop:
            self.mask, self._segs = segments[0][2], None
        else:
            self.mask, self._segs = None, segments
        self.error = error
        # bytes the real array would occupy, size x itemsize (read once per message)
        self.nbytes = (stop - start) * dtype.itemsize

    @property
    def segments(self) -> tuple:
        """``(seg_start, seg_stop, mask)`` triples covering ``[start, stop)`` in order."""
        if self.mask is not None:
            return ((self.start, self.stop, self.mask),)
        return self._segs

    # -- NumPy-like surface ---------------------------------------------------------------

    @property
    def size(self) -> int:
        """Number of elements."""
        return self.stop - self.start

    def __len__(self) -> int:
        return self.stop - self.start

    @property
    def shape(self) -> tuple[int]:
        """``(size,)``."""
        return (self.stop - self.start,)

    @property
    def ndim(self) -> int:
        """Always 1."""
        return 1

    def __repr__(self) -> str:
        segs = ", ".join(f"[{s},{e}):{{{format_ranks(m, 4)}}}" for s, e, m in self.segments[:4])
        more = ", ..." if len(self.segments) > 4 else ""
        err = f", error={self.error!r}" if self.error else ""
        return f"SymbolicArray([{self.start}, {self.stop}) {self.dtype.name}: {segs}{more}{err})"

    def __getitem__(self, key) -> "SymbolicArray":
        start = self.start
        mask = self.mask
        if key.__class__ is slice:
            lo, hi = key.start, key.stop
            if (mask is not None and lo.__class__ is int and hi.__class__ is int and key.step is None
                    and 0 <= lo < hi <= self.stop - start):
                # the slices ``split`` cuts (one per block and rank): nothing to normalize
                # (the bounds and the size: the one int object of each value, see _spans)
                a = _new_symbolic(SymbolicArray)
                a.dtype = dtype = self.dtype
                try:
                    a.start, a.stop, a.nbytes = _spans[start, lo, hi, dtype]
                except KeyError:
                    a.start, a.stop, a.nbytes = _span(start, lo, hi, dtype)
                a.mask = mask
                a._segs = None
                a.error = self.error
                return a
        elif not isinstance(key, slice):
            raise TypeError("SymbolicArray supports only slicing a[i:j]")
        lo, hi, step = key.indices(self.stop - start)
        if step != 1:
            raise TypeError("SymbolicArray slices must have step 1")
        hi = max(hi, lo)
        gs, ge = start + lo, start + hi
        if ge <= gs:
            return _symbolic(gs, ge, self.dtype, None, (), self.error)
        if mask is not None:
            return _symbolic(gs, ge, self.dtype, mask, None, self.error)
        return SymbolicArray(gs, ge, self.dtype, _clipped(self._segs, gs, ge), self.error)

    def __add__(self, other):
        start = self.start
        ma = self.mask
        if (other.__class__ is SymbolicArray and ma is not None and other.mask is not None and other.start == start
                and other.stop == self.stop and other.dtype is self.dtype):
            # the sums of a simulation: aligned blocks with one bitset each
            mb = other.mask
            error = self.error or other.error
            if ma & mb and error is None:
                error = _double_count(start, self.stop, ma & mb)
            a = _new_symbolic(SymbolicArray)
            a.start = start
            a.stop = self.stop
            a.dtype = self.dtype
            a.mask = ma | mb
            a._segs = None
            a.error = error
            a.nbytes = self.nbytes
            return a
        if not isinstance(other, SymbolicArray):
            return NotImplemented
        n = self.stop - self.start
        if other.stop - other.start != n:
            raise ValueError(f"operands could not be broadcast together with shapes ({n},) "
                             f"({other.stop - other.start},)")
        error = self.error or other.error
        if other.dtype != self.dtype and error is None:
            error = f"added {other.dtype.name} data to {self.dtype.name} data"
        shift = self.start - other.start
        if shift and error is None:
            error = (f"added elements [{other.start}, {other.stop}) to elements "
                     f"[{self.start}, {self.stop}) (misaligned blocks)")
        if not n:
            return _symbolic(self.start, self.stop, self.dtype, None, (), error)
        if ma is not None and other.mask is not None:  # one bitset each over the same range
            mb = other.mask
            if ma & mb and error is None:
                error = _double_count(self.start, self.stop, ma & mb)
            return _symbolic(self.start, self.stop, self.dtype, ma | mb, None, error)
        a, b = self.segments, other.segments
        if shift:
            b = _shifted(b, shift)
        segs, dup = _merge_segments(a, b)
        if dup is not None and error is None:
            error = _double_count(*dup)
        return SymbolicArray(self.start, self.stop, self.dtype, segs, error)


# (comprehensions of their own: in a method, the names they read would be cells made at
# every call of it, slices and sums included)
def _clipped(segs: tuple, lo: int, hi: int) -> tuple:
    return tuple((max(s, lo), min(e, hi), m) for s, e, m in segs if s < hi and e > lo)


def _shifted(segs: tuple, shift: int) -> tuple:
    return tuple((s + shift, e + shift, m) for s, e, m in segs)


def _symbolic(start: int, stop: int, dtype: np.dtype, mask, segs, error) -> SymbolicArray:
    """``SymbolicArray(...)`` for a dtype already checked and segments already in their
    stored form (``mask`` for one bitset over the whole range, else ``segs``), without
    ``__init__``'s checks."""
    a = _new_symbolic(SymbolicArray)
    a.start = start
    a.stop = stop
    a.dtype = dtype
    a.mask = mask
    a._segs = segs
    a.error = error
    a.nbytes = (stop - start) * dtype.itemsize
    return a


_new_symbolic = object.__new__
# Every rank of a simulation cuts the same global vector at the same places: the slices'
# bounds and sizes take one int object per value from here (a slice holds three ints of
# 32 B each otherwise: at 16k ranks cutting 2048 blocks each, 3 GB of equal ints), a slice's
# three found together in _spans by the array's start, the bounds and the dtype (one lookup).
# Both emptied when they grow past _MAX_INTS (by symbolic_input, once per rank and run).
_ints: dict = {}
_shared_int = _ints.setdefault
_spans: dict = {}
_MAX_INTS = 1 << 20


def _span(start: int, lo: int, hi: int, dtype: np.dtype) -> tuple:
    """The global bounds and the bytes of the slice ``[lo, hi)`` of an array starting at
    ``start`` (each the shared int of its value), kept in ``_spans``."""
    gs, ge, nbytes = start + lo, start + hi, (hi - lo) * dtype.itemsize
    span = _spans[start, lo, hi, dtype] = (_shared_int(gs, gs), _shared_int(ge, ge), _shared_int(nbytes, nbytes))
    return span


class SymbolicPieces:
    """The pieces ``[x[a:b] for a, b in bounds]`` of a :class:`SymbolicArray` ``x`` whose
    elements all hold the same ranks, as one object (:func:`cut` makes them).

    Adding pieces cut at the same places (the partial sums of an algorithm that reduces
    several ranges at once, e.g. one chunk of every channel) is one OR of two bitsets and
    one double-count check, where a list of slices takes a slice and a sum per piece.
    ``len``, iteration and indexing give the slices themselves (made on first use, then
    kept: the object is immutable); any other sum goes piece by piece and gives a list.
    Bounds outside ``[0, size)`` are found when the slices are made: they carry an error.
    """

    __slots__ = ("offset", "size", "bounds", "dtype", "mask", "error", "_list")

    def __init__(self, offset: int, size: int, bounds: tuple, dtype: np.dtype, mask: int, error: str | None):
        self.offset = offset   # global start of the array the bounds are relative to
        self.size = size       # and its length
        self.bounds = bounds
        self.dtype = dtype
        self.mask = mask
        self.error = error
        self._list = None

    def __len__(self) -> int:
        return len(self.bounds)

    def _pieces(self) -> list:
        out = self._list
        if out is None:
            o, dtype, mask, error = self.offset, self.dtype, self.mask, self.error
            out = self._list = []
            for a, b in self.bounds:   # (the bounds and sizes: one int object per value, see _spans)
                if not 0 <= a <= b <= self.size and error is None:
                    error = f"cut [{a}, {b}) out of [0, {self.size})"
                p = _new_symbolic(SymbolicArray)
                try:
                    p.start, p.stop, p.nbytes = _spans[o, a, b, dtype]
                except KeyError:
                    p.start, p.stop, p.nbytes = _span(o, a, b, dtype)
                p.dtype, p.mask, p._segs, p.error = dtype, mask, None, error
                if b == a:   # (an empty slice holds no segment, as a[i:i] has none)
                    p.mask, p._segs = None, ()
                out.append(p)
        return out

    def __iter__(self):
        return iter(self._pieces())

    def __getitem__(self, i: int) -> SymbolicArray:
        return self._pieces()[i]

    def __add__(self, other):
        if (type(other) is SymbolicPieces and other.offset == self.offset and other.size == self.size
                and other.dtype is self.dtype
                and (other.bounds is self.bounds or other.bounds == self.bounds)):
            ma, mb = self.mask, other.mask
            error = self.error or other.error
            if ma & mb and error is None:   # (recorded on the first piece that holds elements)
                a, b = next(((a, b) for a, b in self.bounds if a < b), (0, 0))
                if a < b:
                    error = _double_count(self.offset + a, self.offset + b, ma & mb)
            return SymbolicPieces(self.offset, self.size, self.bounds, self.dtype, ma | mb, error)
        if len(other) != len(self.bounds):
            raise ValueError(f"added {len(other)} pieces to {len(self.bounds)}")
        return [a + b for a, b in zip(self, other)]

    def __radd__(self, other):
        if len(other) != len(self.bounds):
            raise ValueError(f"added {len(self.bounds)} pieces to {len(other)}")
        return [a + b for a, b in zip(other, self)]


def cut(x, bounds: tuple):
    """The pieces ``x[a:b]`` for each ``(a, b)`` of ``bounds``: one :class:`SymbolicPieces`
    when ``x`` is size-only with one bitset over all its elements, else a list of slices."""
    if type(x) is SymbolicArray and x.mask is not None:
        return SymbolicPieces(x.start, x.stop - x.start, bounds, x.dtype, x.mask, x.error)
    return [x[a:b] for a, b in bounds]


def _double_count(lo: int, hi: int, mask: int) -> str:
    return f"elements [{lo}, {hi}) count rank(s) {format_ranks(mask)} twice"


def _merge_segments(a: tuple, b: tuple) -> tuple[tuple, tuple | None]:
    """OR two segment lists over the same range; return them and the first overlap."""
    out: list[tuple[int, int, int]] = []
    dup = None
    i = j = 0
    pos = a[0][0] if a else 0
    while i < len(a) and j < len(b):
        sa, ea, ma = a[i]
        sb, eb, mb = b[j]
        end = min(ea, eb)
        if dup is None and ma & mb:
            dup = (pos, end, ma & mb)
        m = ma | mb
        if out and out[-1][2] == m:
            out[-1] = (out[-1][0], end, m)
        else:
            out.append((pos, end, m))
        pos = end
        i += ea == end
        j += eb == end
    return tuple(out), dup


def symbolic_input(rank: int, n: int, dtype) -> SymbolicArray:
    """Rank ``rank``'s symbolic input: ``[0, n)`` holding only its own contribution."""
    dt = check_dtype(dtype)
    if len(_ints) > _MAX_INTS or len(_spans) > _MAX_INTS:
        _ints.clear()
        _spans.clear()
    return SymbolicArray(0, n, dt, ((0, n, 1 << rank),) if n else ())


def concat(parts):
    """Concatenate NumPy arrays or :class:`SymbolicArray` pieces, in order.

    Parameters
    ----------
    parts : sequence of numpy.ndarray or sequence of SymbolicArray
        Non-empty. Symbolic parts should be contiguous ranges; a gap or overlap is
        recorded as the result's ``error`` (not raised).

    Returns
    -------
    numpy.ndarray or SymbolicArray
        A read-only array, or a symbolic array with adjacent equal segments merged.
    """
    parts = list(iter_parts(parts))
    if not parts:
        raise ValueError("concat needs at least one part")
    if isinstance(parts[0], np.ndarray):
        return freeze(np.concatenate(parts))
    if not all(isinstance(p, SymbolicArray) for p in parts):
        raise TypeError("concat: cannot mix SymbolicArray with other payloads")
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    error = next((p.error for p in parts if p.error), None)
    segs: list[tuple[int, int, int]] = []
    pos = first.start
    for p in parts:
        if p.start != pos and error is None:
            error = f"concatenated elements [{p.start}, {p.stop}) at position {pos} (not contiguous)"
        if p.dtype != first.dtype and error is None:
            error = f"concatenated {p.dtype.name} data with {first.dtype.name} data"
        shift = pos - p.start
        for s, e, m in p.segments:
            if segs and segs[-1][2] == m and segs[-1][1] == s + shift:
                segs[-1] = (segs[-1][0], e + shift, m)
            else:
                segs.append((s + shift, e + shift, m))
        pos += p.stop - p.start
    return SymbolicArray(first.start, pos, first.dtype, tuple(segs), error)


