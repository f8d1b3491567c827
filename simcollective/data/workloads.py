"""Seeded sparse workloads: per-rank input streams, their exact reference, verification.

Every workload produces rank ``r``'s input over ``[0, n)`` lazily and deterministically
from ``(seed, r)``, so inputs can be regenerated instead of stored. Values are integers
(cast to float dtypes), so sums are exact in ``int32``, ``float32`` and ``float64``; with
``float16`` (or float ``.npy`` data) results are held to the dense float tolerance.

Workloads (``make_workload(name, ...)``):

``uniform``
    The study's workload: each rank draws ``k`` distinct indices uniformly at random
    (sorted) with integer values in ``[-100, 100)``.
``topk``
    The top-k by magnitude of a synthetic per-rank gradient ``g_r``. ``g_r`` has ``k``
    heavy entries with integer magnitudes in ``[100, 1000)`` and random signs, and light
    entries with integer magnitudes below 100 everywhere else. ``round(overlap * k)`` of
    the heavy indices form a common set ``C`` shared by all ranks (drawn from the seed
    alone); the other ``k - |C|`` are drawn per rank uniformly from the indices outside
    ``C``. Since every heavy magnitude exceeds every light one, ``top_k(g_r)`` is exactly
    the heavy part, which is generated directly (``g_r`` is never materialized).
``npy``
    ``DIR/rank{r}.npy`` (1-D arrays of length ``n``), sparsified by top-k.

Inputs follow the dense rule (an input with ``k`` too large for a sparse stream is dense).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import UserInputError
from .dense import Reference, as_reference, check_dtype
from .sparse import SparseStream

__all__ = [
    "WORKLOADS",
    "sparse_k",
    "expected_union",
    "Workload",
    "UniformWorkload",
    "TopkWorkload",
    "NpyWorkload",
    "make_workload",
    "verify_sparse_result",
]

#: Names accepted by :func:`make_workload`.
WORKLOADS = ("uniform", "topk", "npy")

_COMMON = 2**31  # rng stream tag of the topk workload's shared heavy set


def sparse_k(n: int, density=None, k=None) -> int:
    """Number of nonzeros per rank: ``floor(n * density)``, or ``k`` given directly.

    Parameters
    ----------
    n : int
        Vector length (>= 1).
    density : float, optional
        Fraction of nonzeros in (0, 1].
    k : int, optional
        Nonzeros per rank, ``1 <= k <= n``.

    Returns
    -------
    int

    Raises
    ------
    UserInputError
        If both or neither of ``density`` and ``k`` are given, or the count is out of range.
    """
    if (density is None) == (k is None):
        raise UserInputError("sparse algorithms need exactly one of --density D (e.g. 1/128) or --k K (nonzeros per rank)")
    if k is None:
        d = float(density)
        if not 0.0 < d <= 1.0:
            raise UserInputError(f"density {density!r} must be in (0, 1]")
        k = math.floor(n * d)
        if k < 1:
            raise UserInputError(f"density {density!r} gives k = floor({n} * {d}) = {k} < 1 nonzeros")
        return k
    if isinstance(k, bool) or int(k) != k:
        raise UserInputError(f"k {k!r} is not an integer")
    k = int(k)
    if k < 1:
        raise UserInputError(f"k = {k} must be >= 1")
    if k > n:
        raise UserInputError(f"k = {k} exceeds the vector length n = {n}")
    return k


def expected_union(n: int, d: float, j: int) -> float:
    """Expected size ``n (1 - (1 - d)**j)`` of the union of ``j`` random ``k``-subsets.

    Exact for independent uniformly random ``k``-subsets of ``[0, n)`` with ``d = k/n``:
    each element is missed by one subset with probability ``1 - d``.
    """
    return n * (1.0 - (1.0 - d) ** j)


def _rng(seed: int, *tags: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), *tags])


def _sorted_sample(rng: np.random.Generator, n: int, k: int, dtype=np.int64) -> np.ndarray:
    """``k`` distinct integers drawn uniformly from ``[0, n)``, ascending, as ``dtype``
    (``uint32``, the streams' index type, sorts about 1.5x faster than int64; ``n`` <
    2**32 always)."""
    out = rng.choice(n, size=k, replace=False, shuffle=False)
    if out.dtype != dtype:
        out = out.astype(dtype)
    out.sort()
    return out


class Workload:
    """Base of the sparse workloads: ``k`` nonzeros per rank over ``[0, n)``.

    Parameters
    ----------
    n, k, nranks : int
        Vector length, nonzeros per rank (see :func:`sparse_k`), number of ranks.
    dtype : str or numpy.dtype
        Value type.
    seed : int
        Run seed.

    Attributes
    ----------
    name : str
        The workload name given to :func:`make_workload`.
    """

    name = ""

    def __init__(self, n: int, k: int, nranks: int, dtype, seed: int):
        if not 1 <= n < 2**32:
            raise UserInputError(f"vector length n = {n} must be in [1, 2**32)")
        if nranks < 1:
            raise UserInputError(f"number of ranks {nranks} must be >= 1")
        self.n = int(n)
        self.k = sparse_k(self.n, k=k)
        self.nranks = int(nranks)
        self.dtype = check_dtype(dtype)
        self.seed = int(seed)
        self._ref: Reference | None = None
        self._inputs: dict = {}

    def input(self, rank: int) -> SparseStream:
        """Rank ``rank``'s input stream over ``[0, n)``.

        Streams are immutable; the one generated for a rank is kept (by rank) until
        :meth:`exact_reference` has used it, so a run generates each input once."""
        if not 0 <= rank < self.nranks:
            raise ValueError(f"rank {rank} is not in [0, {self.nranks})")
        s = self._inputs.get(rank)
        if s is None:
            idx, vals = self._pairs(rank)
            s = SparseStream.from_pairs(0, self.n, idx, vals)
            if self._ref is None:
                self._inputs[rank] = s
        return s

    def _pairs(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def exact_reference(self) -> Reference:
        """The exact sum of all inputs with its tolerance rule (computed once, rank by rank)."""
        if self._ref is None:
            def stream(r):
                s = self._inputs.pop(r, None)
                if s is None:
                    idx, vals = self._pairs(r)
                    s = SparseStream.from_pairs(0, self.n, idx, vals)
                return s

            streams = (stream(r) for r in range(self.nranks))
            ref = Reference.accumulate(
                self.n, self.dtype, self.nranks, ((s.indices, s.values) for s in streams)
            )
            self._ref = ref
            self._inputs.clear()
        return self._ref

    def reference(self) -> np.ndarray:
        """The exact dense sum of all inputs, in the workload's dtype (read-only)."""
        return self.exact_reference().as_dtype()

    def verify(self, output) -> str:
        """:func:`verify_sparse_result` against :meth:`exact_reference`."""
        return verify_sparse_result(output, self.exact_reference())

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n={self.n}, k={self.k}, nranks={self.nranks}, "
                f"dtype={self.dtype.name}, seed={self.seed})")


class UniformWorkload(Workload):
    """``k`` distinct uniform indices per rank, integer values in ``[-100, 100)``."""

    name = "uniform"

    def _pairs(self, rank):
        rng = _rng(self.seed, rank)
        idx = _sorted_sample(rng, self.n, self.k, np.uint32)
        vals = rng.integers(-100, 100, size=self.k, dtype=np.int32)
        return idx, vals.astype(self.dtype, copy=False)


class TopkWorkload(Workload):
    """Top-k of synthetic gradients sharing a fraction ``overlap`` of their heavy indices.

    See the module docstring for the construction.
    """

    name = "topk"

    def __init__(self, n, k, nranks, dtype, seed, overlap: float = 0.0):
        super().__init__(n, k, nranks, dtype, seed)
        overlap = float(overlap)
        if not 0.0 <= overlap <= 1.0:
            raise UserInputError(f"overlap {overlap!r} must be in [0, 1]")
        self.overlap = overlap
        kc = round(overlap * self.k)
        self.common = _sorted_sample(_rng(self.seed, _COMMON), self.n, kc)
        self.common.flags.writeable = False

    def _pairs(self, rank):
        rng = _rng(self.seed, rank)
        c = self.common
        own = _sorted_sample(rng, self.n - c.size, self.k - c.size)
        # map positions in the complement of C to indices: skip the members of C before them
        own += np.searchsorted(c - np.arange(c.size), own, side="right")
        idx = np.concatenate((c, own))
        order = np.argsort(idx, kind="stable")
        mag = rng.integers(100, 1000, size=self.k, dtype=np.int32)
        sign = rng.integers(0, 2, size=self.k, dtype=np.int32) * 2 - 1
        vals = (mag * sign)[order]
        return idx[order], vals.astype(self.dtype, copy=False)


class NpyWorkload(Workload):
    """Top-k of per-rank vectors stored as ``DIR/rank{r}.npy``."""

    name = "npy"

    def __init__(self, n, k, nranks, dtype, seed, inputs_dir=None):
        super().__init__(n, k, nranks, dtype, seed)
        if inputs_dir is None:
            raise UserInputError("the npy workload needs an inputs directory (DIR/rank{r}.npy)")
        self.inputs_dir = Path(inputs_dir)
        for r in range(self.nranks):  # fail early, reading only the headers
            self._load(r)

    def _load(self, rank: int) -> np.ndarray:
        path = self.inputs_dir / f"rank{rank}.npy"
        if not path.is_file():
            raise UserInputError(f"input file {path} is missing (one rank{{r}}.npy per rank is needed)")
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise UserInputError(f"input file {path} is not a readable .npy array: {exc}") from None
        if arr.ndim != 1 or arr.shape[0] != self.n:
            raise UserInputError(
                f"input file {path} holds an array of shape {arr.shape}; expected ({self.n},)"
            )
        if not np.can_cast(arr.dtype, self.dtype, casting="same_kind"):
            raise UserInputError(f"input file {path} has dtype {arr.dtype}, which cannot become {self.dtype.name}")
        return arr

    def _pairs(self, rank):
        arr = np.asarray(self._load(rank)).astype(self.dtype, copy=False)
        if arr.flags.writeable:  # our own converted copy: share it instead of copying again
            arr.flags.writeable = False
        top = SparseStream.from_dense(0, arr).topk(self.k)
        return top.indices, top.values


def make_workload(name: str, n: int, k: int, nranks: int, dtype, seed: int,
                  overlap: float = 0.0, inputs_dir=None) -> Workload:
    """Create a sparse workload by name.

    Parameters
    ----------
    name : {"uniform", "topk", "npy"}
    n : int
        Vector length.
    k : int
        Nonzeros per rank (use :func:`sparse_k` to derive it from a density).
    nranks : int
        Number of ranks.
    dtype : str or numpy.dtype
        Value type.
    seed : int
        Run seed.
    overlap : float
        ``topk`` only: fraction of heavy indices shared by all ranks, in [0, 1].
    inputs_dir : path, optional
        ``npy`` only: directory holding ``rank{r}.npy``.

    Returns
    -------
    Workload
        With ``.input(rank)``, ``.reference()``, ``.exact_reference()``, ``.verify(output)``
        and ``.name``.

    Raises
    ------
    UserInputError
        For an unknown name (listing the allowed ones) or bad parameters.
    """
    if name == "uniform":
        return UniformWorkload(n, k, nranks, dtype, seed)
    if name == "topk":
        return TopkWorkload(n, k, nranks, dtype, seed, overlap=overlap)
    if name == "npy":
        return NpyWorkload(n, k, nranks, dtype, seed, inputs_dir=inputs_dir)
    raise UserInputError(f"unknown workload {name!r}; use one of {', '.join(WORKLOADS)}")


def verify_sparse_result(output, ref_dense, seen: set | None = None) -> str:
    """Verify a rank's sparse allreduce result against the exact dense sum.

    Parameters
    ----------
    output : SparseStream, numpy.ndarray or sequence of them
        One stream over ``[0, n)`` or parts covering ``[0, n)`` in order (lists, tuples,
        :class:`~simcollective.data.parts.Parts`); NumPy arrays count as dense parts.
        Parts are checked one at a time; nothing is concatenated.
    ref_dense : Reference or numpy.ndarray
        A :class:`~simcollective.data.dense.Reference` (e.g. ``workload.exact_reference()``)
        applies the dtype's rule: exact for integers, ``(P-1)*eps*sum|x|`` for floats. A
        plain array is compared exactly.
    seen : set, optional
        Parts already verified at the same place in another rank's output (``(id(part),
        offset)`` pairs, filled in here): payloads are shared between ranks, so a run
        verifies each distinct part once. Use one set per run, while all outputs are alive.

    Returns
    -------
    str
        A short description of the rule that was met.

    Raises
    ------
    VerificationError
        Naming the first bad index (got vs expected) or the coverage problem.
    """
    from .collectives import Piece
    from .verify import verify_pieces

    ref = as_reference(ref_dense)
    verify_pieces(output, [Piece(0, ref.n, 1)], lambda _source: ref, "sparse", seen)
    return ref.describe()
