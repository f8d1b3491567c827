"""Verification: the one walk over a rank's result parts that every verifier (dense,
size-only, sparse) shares, checking them against the pieces a collective expects
(:class:`~simcollective.data.collectives.Piece`)."""

from __future__ import annotations

from itertools import accumulate
from operator import attrgetter, sub

import numpy as np

from ..errors import VerificationError
from .blocks import iter_parts
from .collectives import Piece
from .dense import as_reference
from .sparse import SparseStream
from .symbolic import SymbolicArray, format_ranks

__all__ = ["EMPTY_RESULT", "walk", "verify_pieces", "verify_dense", "verify_symbolic"]

#: what :func:`verify_pieces` says when every part was already verified (or there are none)
EMPTY_RESULT = "nothing to compare (empty result)"

_LO, _HI = attrgetter("lo"), attrgetter("hi")


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

    Returns
    -------
    iterator of (i, part, a, b, piece, lo)
        Part ``i``'s elements ``[a, b)`` must equal elements ``[lo, lo + b - a)`` of the
        sum of ``piece.source``.

    Raises
    ------
    VerificationError
        While iterated: if the parts are longer or shorter than the pieces, or a part sits
        at the wrong position.
    """
    if len(pieces) == 1:    # allreduce, reduce-scatter, broadcast, reduce: no piece boundaries
        return _walk_one(output, pieces[0], extent, seen, positions)
    return _walk_pieces(output, pieces, extent, seen, positions)


def _walk_pieces(output, pieces, extent, seen, positions):
    """:func:`walk` over several pieces (allgather, alltoall), cutting parts at their boundaries."""
    lens = list(map(sub, map(_HI, pieces), map(_LO, pieces)))
    ends = list(accumulate(lens))                                # piece k ends at ends[k] in the result
    offs = [p.lo - s for p, s in zip(pieces, accumulate(lens, initial=0))]  # its element at x is offs[k] + x
    total = ends[-1] if ends else 0
    pos = 0   # position in the result
    k = 0     # piece holding ``pos``
    for i, part in enumerate(_leaves(output)):
        size = extent(i, part)
        end = pos + size
        if end > total:
            raise VerificationError(f"result is longer than {total} elements (part {i} ends at {end})")
        if size:
            while ends[k] <= pos:
                k += 1
            if end > ends[k]:   # the part spans pieces: one stretch per piece
                k = yield from _cut_part(i, part, size, pos, pieces, ends, offs, k, seen, positions)
            else:               # within piece k (every part of an alltoall, an allgather): _cut_part inline
                piece = pieces[k]
                lo = offs[k] + pos
                if positions is not None:
                    start = positions(part)
                    if start is not None and start != lo:
                        raise VerificationError(
                            f"part {i} covers elements [{start}, {start + size}) but element {lo} comes next")
                if seen is None:
                    yield i, part, 0, size, piece, lo
                else:
                    key = (id(part), piece.source, lo)
                    if key not in seen:
                        yield i, part, 0, size, piece, lo
                        seen.add(key)
        pos = end
    if pos != total:
        raise VerificationError(f"result covers elements [0, {pos}) of [0, {total})")


def _cut_part(i, part, size, pos, pieces, ends, offs, k, seen, positions):
    """:func:`walk`'s stretches of part `i` (at result position `pos`, `size` long) over
    pieces ``k, k+1, ...`` (piece ``j`` ending at ``ends[j]`` in the result, its element
    at result position ``x`` being ``offs[j] + x``); return the piece its last stretch
    falls in."""
    a = 0
    while a < size:
        while ends[k] <= pos + a:
            k += 1
        piece = pieces[k]
        lo = offs[k] + pos + a
        b = min(size, ends[k] - pos)
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


def _leaves(output):
    """:func:`iter_parts` of `output`: a flat list or tuple as it is (no generator per part)."""
    if not isinstance(output, (list, tuple)):
        return (output,)
    if any(issubclass(t, (list, tuple)) for t in set(map(type, output))):
        return iter_parts(output)
    return output


def _walk_one(output, piece, extent, seen, positions):
    """:func:`walk` for a single piece (the common case, once per part of every rank)."""
    total = piece.hi - piece.lo
    source, base = piece.source, piece.lo
    pos = 0
    for i, part in enumerate(_leaves(output)):
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


#: a size-only part's global position (one C call per part)
_symbolic_start = attrgetter("start")


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
            want = piece.source
            if part.mask == want:
                continue    # one bitset for all its elements (no segment tuples), the expected one
            ga, gb = part.start + a, part.start + b
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


def verify_dense(output, ref, seen: set | None = None) -> str:
    """Verify a rank's dense allreduce result against the reference.

    Parameters
    ----------
    output : numpy.ndarray or sequence of numpy.ndarray
        The result, or parts whose concatenation in order is the result (lists, tuples and
        :class:`~simcollective.data.parts.Parts`, nested freely). Parts are walked by
        offset; nothing is concatenated.
    ref : Reference or numpy.ndarray
        For example a :class:`DenseReference`; a plain array is compared exactly.
    seen : set, optional
        Parts already verified at the same place in another rank's output (``(id(part),
        offset)`` pairs, filled in here): payloads are shared between ranks, so a run
        verifies each distinct part once. Use one set per run, while all outputs are alive.

    Returns
    -------
    str
        ``"exact (int32)"`` or ``"within (P-1)*eps*sum|x| (float32)"`` and so on.

    Raises
    ------
    VerificationError
        Naming the first bad index, got vs expected and the tolerance, or a length error.
    """
    ref = as_reference(ref)
    verify_pieces(output, [Piece(0, ref.n, 1)], lambda _source: ref, "dense", seen)
    return ref.describe()


def verify_symbolic(output, n: int, nranks: int, seen: set | None = None) -> str:
    """Check that a symbolic result holds every rank's contribution exactly once.

    Parameters
    ----------
    output : SymbolicArray or sequence of SymbolicArray
        The result, or parts whose concatenation in order is the result.
    n : int
        Vector length; the parts must cover ``[0, n)`` in order.
    nranks : int
        Number of ranks ``P``.
    seen : set, optional
        Parts already verified at the same place in another rank's output (``(id(part),
        offset)`` pairs, filled in here): payloads are shared between ranks, so a run
        verifies each distinct part once. Use one set per run, while all outputs are alive.

    Returns
    -------
    str
        ``"symbolic: every element holds each of the P contributions exactly once"``.

    Raises
    ------
    VerificationError
        Naming the first bad range and the missing, unexpected or duplicated ranks.
    """
    verify_pieces(output, [Piece(0, n, (1 << nranks) - 1)], None, "symbolic", seen)
    return "symbolic: every element holds each of the P contributions exactly once"
