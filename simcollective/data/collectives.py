"""What each collective computes: input sizes, the expected result of every rank, sizes and
bus-bandwidth factors as nccl-tests counts them, and the one walk over result parts that
all verifiers (dense, size-only, sparse) share.

A result is described as a list of :class:`Piece` laid end to end: piece ``(lo, hi,
source)`` says that the next ``hi - lo`` elements of the rank's result must equal
elements ``[lo, hi)`` of the sum of the inputs of the ranks in the bitset ``source``
(for one rank: a copy of its input). With ``count`` the count given to the collective
(as NCCL takes it) and ``all`` the set of every rank:

=============== ================= ====================================== =========
collective      input per rank    result on rank r                        busbw
=============== ================= ====================================== =========
allreduce       count             (0, count, all)                         2(P-1)/P
allgather       count             (0, count, {j}) for j = 0..P-1          (P-1)/P
reduce-scatter  P count           (r count, (r+1) count, all)             (P-1)/P
alltoall        P count           (r count, (r+1) count, {j}) for j       (P-1)/P
broadcast       count             (0, count, {root})                      1
reduce          count             (0, count, all) on the root only        1
=============== ================= ====================================== =========

The size nccl-tests prints (and algbw divides by) is ``count x itemsize`` for allreduce,
broadcast and reduce and ``P x count x itemsize`` for the others
(nccl-tests ``doc/PERFORMANCE.md`` and the ``GetBw`` functions of its ``src/*.cu``).

>>> COLLECTIVES["allgather"].pieces(1, 3, 4, None)
[Piece(lo=0, hi=4, source=1), Piece(lo=0, hi=4, source=2), Piece(lo=0, hi=4, source=4)]
>>> COLLECTIVES["reduce-scatter"].count_from_bytes(1000, 3, 4)   # floor(1000 / 12) = 83 -> 80
80
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..errors import UserInputError, VerificationError
from .blocks import iter_parts
from .sparse import SparseStream
from .symbolic import SymbolicArray, format_ranks

#: what :func:`verify_pieces` says when every part was already verified (or there are none)
EMPTY_RESULT = "nothing to compare (empty result)"

__all__ = ["EMPTY_RESULT", "Piece", "Collective", "COLLECTIVES", "get_collective", "walk", "Sources", "verify_pieces"]


class Piece(NamedTuple):
    """``hi - lo`` result elements equal to elements [lo, hi) of the sum of the inputs of
    the ranks in the bitset ``source``."""

    lo: int
    hi: int
    source: int


@dataclass(frozen=True)
class Collective:
    """One collective's definition (see the module docstring)."""

    name: str
    perf: str                   # the nccl-tests binary
    per_rank: bool              # nccl-tests sizes: S = P x count x itemsize (else count x itemsize)
    rooted: bool
    reduces: bool               # has a reduction operator (redop column)
    inputs_per_count: Callable  # (P) -> input elements per count
    layout: Callable            # (rank, P, count, root) -> list of Piece or None

    def input_elements(self, count: int, nranks: int) -> int:
        """Elements of each rank's input."""
        return count * self.inputs_per_count(nranks)

    def pieces(self, rank: int, nranks: int, count: int, root) -> list | None:
        """The expected result of ``rank`` (``None``: the rank has no result to check)."""
        return self.layout(rank, nranks, count, root)

    def size_bytes(self, count: int, nranks: int, itemsize: int) -> int:
        """The size nccl-tests prints and divides by for algbw."""
        return count * itemsize * (nranks if self.per_rank else 1)

    def busbw_factor(self, nranks: int) -> float:
        """nccl-tests' bus-bandwidth factor (its ``doc/PERFORMANCE.md``); 0 for a single rank where the
        factor has P - 1 in it (as nccl-tests prints)."""
        P = nranks
        if self.name == "allreduce":
            return 2 * (P - 1) / P
        if self.name in ("broadcast", "reduce"):
            return 1.0
        return (P - 1) / P

    def count_from_bytes(self, nbytes: int, nranks: int, itemsize: int) -> int:
        """The count nccl-tests derives from a size ``-b/-e`` given in bytes.

        allreduce, broadcast, reduce: ``nbytes // itemsize``. allgather, reduce-scatter,
        alltoall: the per-rank share ``nbytes // (P itemsize)`` rounded down so that it is a
        multiple of 16 bytes (nccl-tests since 2024-12). The rest is dropped, as nccl-tests
        does; the printed size is then recomputed from the count.
        """
        if not self.per_rank:
            return nbytes // itemsize
        count = nbytes // (nranks * itemsize)
        per16 = max(16 // itemsize, 1)
        return count - count % per16


def _full(P: int) -> int:
    return (1 << P) - 1


COLLECTIVES: dict[str, Collective] = {c.name: c for c in (
    Collective("allreduce", "all_reduce_perf", False, False, True, lambda P: 1,
               lambda r, P, c, root: [Piece(0, c, _full(P))]),
    Collective("allgather", "all_gather_perf", True, False, False, lambda P: 1,
               lambda r, P, c, root: [Piece(0, c, 1 << j) for j in range(P)]),
    Collective("reduce-scatter", "reduce_scatter_perf", True, False, True, lambda P: P,
               lambda r, P, c, root: [Piece(r * c, (r + 1) * c, _full(P))]),
    Collective("broadcast", "broadcast_perf", False, True, False, lambda P: 1,
               lambda r, P, c, root: [Piece(0, c, 1 << root)]),
    Collective("reduce", "reduce_perf", False, True, True, lambda P: 1,
               lambda r, P, c, root: [Piece(0, c, _full(P))] if r == root else None),
    Collective("alltoall", "alltoall_perf", True, False, False, lambda P: P,
               lambda r, P, c, root: [Piece(r * c, (r + 1) * c, 1 << j) for j in range(P)]),
)}


def get_collective(name: str) -> Collective:
    try:
        return COLLECTIVES[name]
    except KeyError:
        raise UserInputError(f"unknown collective {name!r}; choose from: {', '.join(COLLECTIVES)}") from None


# -- the walk -------------------------------------------------------------------------------------
def walk(output, pieces, extent, seen: set | None = None, positions=None):
    """Walk a result's parts against the expected pieces; the verifiers' common loop.

    Parameters
    ----------
    output : payload or nested sequence of payloads
        A rank's result (its parts, in order).
    pieces : list of Piece
        The expected result, end to end.
    extent : callable
        ``extent(i, part) -> length`` of a part (raises VerificationError for a part of
        the wrong type).
    seen : set, optional
        ``(id(part), source, lo)`` of parts already checked against the same expectation
        (payloads are shared between ranks: each is checked once per run).
    positions : callable, optional
        ``positions(part) -> start`` for payloads that carry their global position (size-
        only arrays, sparse streams): the position must be the expected one.

    Yields
    ------
    (i, part, a, b, piece, lo)
        Part ``i``'s elements ``[a, b)`` must equal elements ``[lo, lo + b - a)`` of the
        sum of ``piece.source``.

    Raises
    ------
    VerificationError
        If the parts are longer or shorter than the pieces, or a part sits at the wrong
        position.
    """
    if len(pieces) == 1:    # allreduce, reduce-scatter, broadcast, reduce: no piece boundaries
        yield from _walk_one(output, pieces[0], extent, seen, positions)
        return
    total = sum(p.hi - p.lo for p in pieces)
    starts = []
    acc = 0
    for p in pieces:
        starts.append(acc)
        acc += p.hi - p.lo
    pos = 0   # position in the result
    k = 0     # piece holding ``pos``
    for i, part in enumerate(iter_parts(output)):
        size = extent(i, part)
        end = pos + size
        if end > total:
            raise VerificationError(f"result is longer than {total} elements (part {i} ends at {end})")
        k = yield from _cut_part(i, part, size, pos, pieces, starts, k, seen, positions)
        pos = end
    if pos != total:
        raise VerificationError(f"result covers elements [0, {pos}) of [0, {total})")


def _cut_part(i, part, size, pos, pieces, starts, k, seen, positions):
    """:func:`walk`'s stretches of part `i` (at result position `pos`, `size` long) over
    pieces ``k, k+1, ...`` (piece ``j`` starting at ``starts[j]`` in the result); return the
    piece its last stretch falls in."""
    a = 0
    while a < size:
        while starts[k] + pieces[k].hi - pieces[k].lo <= pos + a:
            k += 1
        piece = pieces[k]
        lo = piece.lo + (pos + a - starts[k])
        b = min(size, starts[k] + piece.hi - piece.lo - pos)
        if positions is not None:
            start = positions(part)
            if start is not None and start + a != lo:
                raise VerificationError(
                    f"part {i} covers elements [{start + a}, {start + b}) but element {lo} comes next")
        key = (id(part), piece.source, lo)
        if seen is None or key not in seen:
            yield i, part, a, b, piece, lo
            if seen is not None:
                seen.add(key)
        a = b
    return k


def _walk_one(output, piece, extent, seen, positions):
    """:func:`walk` for a single piece (the common case, once per part of every rank)."""
    total = piece.hi - piece.lo
    source, base = piece.source, piece.lo
    pos = 0
    for i, part in enumerate(iter_parts(output)):
        size = extent(i, part)
        end = pos + size
        if end > total:
            raise VerificationError(f"result is longer than {total} elements (part {i} ends at {end})")
        lo = base + pos
        if positions is not None:
            start = positions(part)
            if start is not None and start != lo:
                raise VerificationError(f"part {i} covers elements [{start}, {start + size}) but element {lo} comes next")
        if seen is None:
            yield i, part, 0, size, piece, lo
        else:
            key = (id(part), source, lo)
            if key not in seen:
                seen.add(key)
                yield i, part, 0, size, piece, lo
        pos = end
    if pos != total:
        raise VerificationError(f"result covers elements [0, {pos}) of [0, {total})")


def dense_extent(i, part) -> int:
    if not isinstance(part, np.ndarray) or part.ndim != 1:
        raise VerificationError(f"part {i} is a {type(part).__name__}, not a 1-D NumPy array")
    return part.shape[0]


def symbolic_extent(i, part) -> int:
    if not isinstance(part, SymbolicArray):
        raise VerificationError(f"part {i} is a {type(part).__name__}, not a SymbolicArray")
    if part.error:
        raise VerificationError(f"part {i}: {part.error}")
    return part.stop - part.start


def sparse_extent(i, part) -> int:
    if isinstance(part, np.ndarray):
        return part.shape[0]
    if isinstance(part, SparseStream):
        return part.stop - part.start
    raise VerificationError(f"part {i} is a {type(part).__name__}, not a SparseStream")


def _stream_start(part):
    return None if isinstance(part, np.ndarray) else part.start


def _symbolic_start(part):
    return part.start


def verify_pieces(output, pieces, sources, mode: str, seen: set | None = None) -> str:
    """Verify one rank's result against its expected pieces.

    ``mode``: ``"dense"`` (NumPy parts, checked against ``sources(source)``, a
    :class:`~simcollective.data.dense.Reference`), ``"symbolic"`` (size-only parts: every
    element must hold exactly the contributions of ``source``) or ``"sparse"`` (streams or
    NumPy parts against ``sources(source)``). Returns the description of the rule met
    (that of the last reference used). Raises VerificationError naming the first bad part.
    """
    how = None
    if mode == "dense":
        for i, part, a, b, piece, lo in walk(output, pieces, dense_extent, seen):
            ref = sources(piece.source)
            ref.check(lo, part[a:b] if (a, b) != (0, part.shape[0]) else part, where=f"part {i}")
            how = ref.describe()
    elif mode == "symbolic":
        for i, part, a, b, piece, lo in walk(output, pieces, symbolic_extent, seen, _symbolic_start):
            ga, gb = part.start + a, part.start + b
            want = piece.source
            for s, e, m in part.segments:
                if e <= ga or s >= gb or m == want:
                    continue
                problems = []
                if want & ~m:
                    problems.append(f"missing rank(s) {format_ranks(want & ~m)}")
                if m & ~want:
                    problems.append(f"unexpected rank(s) {format_ranks(m & ~want)}")
                raise VerificationError(f"part {i}: elements [{max(s, ga)}, {min(e, gb)}): {'; '.join(problems)}")
        how = "symbolic: every element holds exactly the expected contributions, once each"
    elif mode == "sparse":
        for i, part, a, b, piece, lo in walk(output, pieces, sparse_extent, seen, _stream_start):
            ref = sources(piece.source)
            where = f"part {i}"
            if isinstance(part, np.ndarray) or part.is_dense:
                vals = part if isinstance(part, np.ndarray) else part.values
                ref.check(lo, vals[a:b], where)
            else:
                idx = part.indices
                if (a, b) == (0, part.stop - part.start):
                    sel_i, sel_v = idx, part.values
                else:
                    j0, j1 = np.searchsorted(idx, [part.start + a, part.start + b])
                    sel_i, sel_v = idx[j0:j1], part.values[j0:j1]
                ref.check_sparse(lo, lo + b - a, sel_i, sel_v, where)
            how = ref.describe()
    else:
        raise ValueError(f"mode {mode!r} must be dense, symbolic or sparse")
    return how or EMPTY_RESULT


class Sources:
    """The references of a dense run, one per source set, built on first use: the sum of
    every rank's input (:class:`~simcollective.data.dense.DenseReference`) or one rank's
    input (compared exactly: it must arrive bit for bit)."""

    def __init__(self, n: int, dtype, seed: int, nranks: int, input_of=None):
        self.n, self.dtype, self.seed, self.nranks = int(n), dtype, int(seed), int(nranks)
        self.input_of = input_of
        self._refs: dict = {}

    def __call__(self, source: int):
        ref = self._refs.get(source)
        if ref is None:
            from .dense import DenseReference, Reference, dense_input

            if source == (1 << self.nranks) - 1 and self.nranks > 1 and self.input_of is None:
                ref = DenseReference(self.n, self.dtype, self.seed, self.nranks)
            elif source.bit_count() == 1:
                j = source.bit_length() - 1
                x = dense_input(j, self.n, self.dtype, self.seed) if self.input_of is None else self.input_of(j)
                ref = Reference(np.asarray(x).view(), x.dtype, 1)
            else:
                raise ValueError(f"no reference for the sum of ranks {format_ranks(source)}")
            self._refs[source] = ref
        return ref
