"""Real dense inputs, their exact reference sum, and verification of allreduce results.

Inputs are deterministic functions of ``(seed, rank)``: ``np.random.default_rng([seed,
rank])`` draws them, so any rank's input can be regenerated at any time and ranks never
need to be held all at once.

* ``int32`` inputs are integers in ``[-100, 100)``: every sum of up to ``2**20`` of them
  fits in ``int32``, so results are compared for exact equality.
* Float inputs are uniform in ``[-1, 1)``. A sum of ``P`` terms computed in any order and
  any tree shape, rounding to nearest after every addition, differs from the exact sum by
  at most ``(P-1) * u * sum_i |x_i|`` (plus second-order terms) with ``u = eps/2``. The
  check uses the slightly looser ``(P-1) * eps(dtype) * sum_i |x_i| + P * tiny`` where
  ``tiny`` is the dtype's smallest subnormal (covering underflow), so it accepts every
  summation order and rejects any missing, duplicated or corrupted contribution whose size
  exceeds that bound.

Payloads are immutable: every array returned here is read-only (:func:`freeze`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import UserInputError, VerificationError
from .arrays import CHUNK, DTYPES, check_dtype, freeze, positions, scatter_add
from .exact_sum import float_sum, int_sum, sparse_windows, windowed_float_sum, windowed_sum

__all__ = [
    "positions",
    "scatter_add",
    "sparse_windows",
    "DTYPES",
    "check_dtype",
    "freeze",
    "dense_input",
    "Reference",
    "DenseReference",
    "as_reference",
]


#: ``int32`` inputs are in ``[-INT_ABS_MAX, INT_ABS_MAX)``
INT_ABS_MAX = 100


def dense_input(rank: int, n: int, dtype, seed: int) -> np.ndarray:
    """Return rank ``rank``'s dense input vector (read-only), deterministic in (seed, rank).

    Parameters
    ----------
    rank : int
        The rank (>= 0).
    n : int
        Number of elements.
    dtype : str or numpy.dtype
        One of :data:`DTYPES`.
    seed : int
        Run seed (>= 0).

    Returns
    -------
    numpy.ndarray
        ``int32``: integers in ``[-100, 100)``; floats: uniform in ``[-1, 1)``.
    """
    dt = check_dtype(dtype)
    return freeze(_draw(np.random.default_rng([int(seed), int(rank)]), n, dt))


def _draw(rng: np.random.Generator, n: int, dt: np.dtype) -> np.ndarray:
    """The next ``n`` elements of a rank's input from its generator ``rng``. Consecutive
    draws continue one stream: drawing ``a`` then ``b`` elements gives the same values as
    drawing ``a + b`` at once (PCG64's 32-bit outputs and NumPy's bounded draws keep no
    state outside the generator), which lets the reference regenerate inputs window by window."""
    if dt.kind == "i":
        return rng.integers(-INT_ABS_MAX, INT_ABS_MAX, size=n, dtype=dt)
    # random() in [0, 1) with the dtype's resolution; 2x - 1 is exact in binary.
    gen_dt = np.float64 if dt == np.float64 else np.float32
    out = rng.random(n, dtype=gen_dt)
    out *= 2
    out -= 1
    if dt == np.float16:
        out = out.astype(np.float16)
        # rounding to float16 may reach 1.0; keep the half-open interval
        np.minimum(out, np.nextafter(np.float16(1), np.float16(0)), out=out)
    return out


#: Elements per window when the reference regenerates the inputs: a window of every rank
#: (and, for floats, its float64 temporaries) stays in the L2 cache while it is drawn and
#: added (32M int32 on 8 ranks: 0.53 s against 0.63 s for whole vectors and 0.71 s for
#: windows of 2**20; 32M float32 on 8 ranks: 1.2 s against 4.0 s for whole vectors, on a
#: 2-core machine).
REFERENCE_WINDOW = 1 << 16


def _input_windows(n: int, dt: np.dtype, seed: int, nranks: int):
    """``(lo, hi, values)`` of :func:`~.exact_sum.windowed_sum`: every rank's input over
    windows of :data:`REFERENCE_WINDOW` elements, regenerated window by window (rank ``r``'s
    generator continues its stream: the values of :func:`dense_input`)."""
    rngs = [np.random.default_rng([int(seed), r]) for r in range(nranks)]
    for lo in range(0, n, REFERENCE_WINDOW):
        hi = min(lo + REFERENCE_WINDOW, n)
        yield lo, hi, (_draw(rng, hi - lo, dt) for rng in rngs)


class Reference:
    """Exact result of an allreduce, and the rule a simulated result must meet.

    Parameters
    ----------
    expected : numpy.ndarray
        The exact sum: ``int32`` for integer data (checked to fit), ``float64`` for floats.
    dtype : numpy.dtype
        Element type of the data being reduced.
    nranks : int
        Number of contributions ``P``.
    abs_sum : numpy.ndarray or None
        For floats, ``sum_i |x_i|`` per element (float64), which sets the tolerance;
        ``None`` means exact comparison (always the case for integers).

    Attributes
    ----------
    n : int
        Vector length.
    expected, abs_sum, dtype, nranks
        As given (arrays read-only).

    Notes
    -----
    Build one from per-rank contributions with :meth:`accumulate`; it never holds more
    than one contribution at a time.
    """

    __slots__ = ("n", "dtype", "nranks", "expected", "abs_sum", "_needed")

    def __init__(self, expected: np.ndarray, dtype, nranks: int, abs_sum: np.ndarray | None = None):
        self.dtype = check_dtype(dtype)
        self.nranks = int(nranks)
        self.n = int(expected.shape[0])
        self.expected = freeze(expected)
        self.abs_sum = None if abs_sum is None else freeze(abs_sum)
        self._needed: dict = {}  # (start, stop) -> entries a sparse result must hold there
        if abs_sum is not None and self.dtype.kind == "i":
            raise ValueError("integer results are compared exactly; abs_sum must be None")

    @classmethod
    def accumulate(cls, n: int, dtype, nranks: int, contributions: Iterable) -> "Reference":
        """Sum per-rank contributions exactly, one at a time.

        Parameters
        ----------
        n : int
            Vector length.
        dtype : str or numpy.dtype
            Element type of the data.
        nranks : int
            Number of contributions (the ``P`` of the tolerance).
        contributions : iterable of (indices or None, values)
            One pair per rank: ``(None, values)`` for a dense vector of length ``n``, or
            ``(indices, values)`` with unique indices in ``[0, n)``.

        Returns
        -------
        Reference

        Notes
        -----
        Integers accumulate in their own dtype while a running bound proves that no partial
        sum can overflow, else in ``int64``, and the result must fit the dtype (floats: ``sum |x|`` must
        fit, else partial sums could overflow); ``float32``/``float16``
        accumulate in ``float64`` (its rounding is far below their tolerance);
        ``float64`` accumulates with a compensated (TwoSum) correction term so that the
        reference error is ``O(u)`` instead of ``O(P u)``.
        """
        dt = check_dtype(dtype)
        if dt.kind == "i":
            return cls(int_sum(n, dt, contributions), dt, nranks)
        total, abs_sum = float_sum(n, dt, contributions)
        return cls(total, dt, nranks, abs_sum)

    @property
    def is_exact(self) -> bool:
        """True when results are compared for equality (integers, or no ``abs_sum``)."""
        return self.abs_sum is None

    def describe(self) -> str:
        """One-line description of the rule results are held to."""
        if self.is_exact:
            return f"exact ({self.dtype.name})"
        return f"within (P-1)*eps*sum|x| ({self.dtype.name})"

    def as_dtype(self) -> np.ndarray:
        """The reference in the data's dtype (read-only; a new array unless already so)."""
        if self.expected.dtype == self.dtype:
            return self.expected
        return freeze(self.expected.astype(self.dtype))

    def tolerance(self, lo: int, hi: int) -> np.ndarray | None:
        """Per-element tolerance over ``[lo, hi)`` (``None`` for exact data)."""
        return None if self.is_exact else self._tol(self.abs_sum[lo:hi])

    def check(self, offset: int, values: np.ndarray, where: str = "") -> None:
        """Check a dense piece of the result placed at global ``offset``.

        Parameters
        ----------
        offset : int
            Global index of ``values[0]``.
        values : numpy.ndarray
            The computed elements.
        where : str
            Context for the error message (e.g. ``"part 3"``).

        Raises
        ------
        VerificationError
            Naming the first bad index, the value found, the expected one and the tolerance.
        """
        self._check_dtype(values, where)
        for lo in range(0, values.shape[0], CHUNK):
            hi = min(lo + CHUNK, values.shape[0])
            sel = slice(offset + lo, offset + hi)
            j = self._first_bad(values[lo:hi], sel)
            if j is not None:
                self._fail(offset + lo + j, values[lo + j], where)

    def check_sparse(self, start: int, stop: int, indices: np.ndarray, values: np.ndarray,
                     where: str = "") -> None:
        """Check a sparse piece over ``[start, stop)``: entries at ``indices``, zero elsewhere.

        Parameters
        ----------
        start, stop : int
            Global range of the piece.
        indices : numpy.ndarray
            Sorted unique global indices of the entries present.
        values : numpy.ndarray
            Their values.
        where : str
            Context for the error message.

        Raises
        ------
        VerificationError
            If a present entry is wrong, or an absent one should not be (beyond tolerance).
        """
        self._check_dtype(values, where)
        pos = positions(indices)  # native-width indices: gathers several times faster than uint32
        j = self._first_bad(values, pos)
        if j is not None:
            self._fail(int(indices[j]), values[j], where)
        # Every entry present holds its expected value, so the result holds all the entries
        # it must (those the rule does not allow to be zero) if it holds as many of them as
        # the reference has in [start, stop): a count instead of a mask over the range.
        have = np.count_nonzero(values) if self.is_exact else np.count_nonzero(self._must_hold(pos))
        if have == self._needed_in(start, stop):
            return
        present = np.zeros(stop - start, dtype=bool)
        present[positions(indices, start)] = True
        bad = self._must_hold(slice(start, stop))
        bad &= ~present
        missing = np.flatnonzero(bad)
        if missing.size:
            self._fail(int(missing[0]) + start, self.dtype.type(0), where, "the entry is missing from the sparse result")

    def _must_hold(self, sel) -> np.ndarray:
        """Where a sparse result must have an entry: the expected value is not zero (exact
        data) or exceeds the tolerance (floats)."""
        ref = self.expected[sel]
        if self.is_exact:
            return ref != 0
        return np.abs(ref) > self._tol(self.abs_sum[sel])

    def _needed_in(self, start: int, stop: int) -> int:
        """Number of entries a sparse result must hold in ``[start, stop)`` (counted once
        per range: every rank's result is checked against the same reference)."""
        key = (start, stop)
        got = self._needed.get(key)
        if got is None:
            got = self._needed[key] = int(np.count_nonzero(self._must_hold(slice(start, stop))))
        return got

    # -- internals -----------------------------------------------------------------------

    def _tol(self, abs_sum: np.ndarray) -> np.ndarray:
        fi = np.finfo(self.dtype)
        return abs_sum * (max(self.nranks - 1, 0) * float(fi.eps)) + self.nranks * float(
            fi.smallest_subnormal
        )

    def _check_dtype(self, values: np.ndarray, where: str) -> None:
        if values.dtype != self.dtype:
            raise VerificationError(
                f"{where + ': ' if where else ''}result has dtype {values.dtype.name}, "
                f"expected {self.dtype.name}"
            )

    def _first_bad(self, values: np.ndarray, sel) -> int | None:
        """Position in ``values`` of the first element off the reference at ``sel``."""
        ref = self.expected[sel]
        if self.is_exact:
            bad = values != ref
        else:  # written so that NaN counts as bad
            bad = ~(np.abs(values.astype(np.float64) - ref) <= self._tol(self.abs_sum[sel]))
        if not bad.any():
            return None
        return int(np.argmax(bad))

    def _fail(self, i: int, got, where: str, note: str = "") -> None:
        prefix = f"{where}: " if where else ""
        if self.is_exact:
            rule = f"exact {self.dtype.name}"
        else:
            tol = float(self.tolerance(i, i + 1)[0])
            rule = f"tolerance {tol:.3g} = (P-1)*eps*sum|x| + tiny with P = {self.nranks}"
        extra = f"; {note}" if note else ""
        raise VerificationError(
            f"{prefix}element {i}: got {got.item()!r}, expected {self.expected[i].item()!r} "
            f"({rule}){extra}"
        )


class DenseReference(Reference):
    """Exact reference of the allreduce of :func:`dense_input` over ``nranks`` ranks.

    Parameters
    ----------
    n : int
        Vector length.
    dtype : str or numpy.dtype
        One of :data:`DTYPES`.
    seed : int
        Run seed given to :func:`dense_input`.
    nranks : int
        Number of ranks ``P``.

    Notes
    -----
    The inputs are regenerated window by window (every rank's generator continuing its own
    stream), so only one window of one input is alive at a time and no input-sized array is
    allocated. The sum is the one :meth:`Reference.accumulate` gives of the whole inputs, to
    the bit. The object holds the exact sum (``int32`` or ``float64``) and, for floats,
    ``sum_i |x_i|``.
    """

    __slots__ = ("seed",)

    def __init__(self, n: int, dtype, seed: int, nranks: int):
        if nranks < 1:
            raise UserInputError(f"number of ranks {nranks} must be >= 1")
        dt = check_dtype(dtype)
        windows = _input_windows(int(n), dt, seed, nranks)
        if dt.kind == "i":
            expected = windowed_sum(int(n), dt, windows, abs_max=INT_ABS_MAX)
            abs_sum = None
        else:
            expected, abs_sum = windowed_float_sum(int(n), dt, windows)
        super().__init__(expected, dt, nranks, abs_sum)
        self.seed = int(seed)


def as_reference(ref) -> Reference:
    """``ref`` if it is a :class:`Reference`; a plain array becomes an exact reference."""
    if isinstance(ref, Reference):
        return ref
    arr = np.asarray(ref)
    return Reference(arr.view(), arr.dtype, 1)  # the view is frozen, not the caller's array


