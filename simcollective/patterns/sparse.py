"""Mechanics shared by the sparse (SparCML-stream) allreduce algorithms.

Per-rank generator code like the algorithms themselves (call with ``yield from``).
Streams are immutable and shared by reference; reductions go through ``comm.add`` so
that the profile's sparse merge time is paid, with the ``densify`` policy of
:func:`simcollective.data.sparse.merge` passed as the reduction ``op``.

The ring pass, fold/unfold, the recursive-doubling loop and the allgather are those of
:mod:`.rings` and :mod:`.doubling`, given the sparse merge (with its ``densify`` policy) as ``op``.

Memory: when several ranks compute *the same* reduction of *the same* operand objects
(both partners of a recursive-doubling exchange, or all ranks summing the gathered
inputs), :func:`shared_merge_op` / :func:`shared_sum` compute it once per simulation
and hand every rank the same immutable result (each rank still pays its compute time).
This keeps one copy of the result for the whole simulation instead of one per rank.
"""

from __future__ import annotations

import numpy as np

from ..data.blocks import iter_parts, sub_bounds
from ..data.dense import positions, scatter_add, sparse_windows
from ..data.sparse import SparseStream, merge, split_at, turns_dense
from ..errors import UserInputError
from .dense import pof2_floor, real_rank
from .doubling import ALLGATHERS, allgather, unfold
from .doubling import fold as _dense_fold
from .rings import ring_pass as _ring_pass

__all__ = [
    "pof2_floor", "real_rank", "unfold", "fold", "is_pof2",
    "merge_op", "shared_merge_op", "split_stream", "ring_pass", "ring_reduce_scatter", "ring_allgather", "allgather",
    "selection_time", "split_time", "assembly_time", "sum_streams", "shared_sum", "ALLGATHERS",
    "STUDY_SIZING", "no_study_sizing",
]


def is_pof2(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


# -- reductions ----------------------------------------------------------------------------------
def merge_op(densify: str = "exact"):
    """The ``op`` for ``comm.add`` that merges two streams with the ``densify`` policy."""
    if densify in ("exact", "study"):  # the study's merges follow the exact dense rule
        return merge
    return lambda a, b: merge(a, b, densify)


def _shared(comm) -> dict:
    """A dict private to this simulation (``Comm.shared``)."""
    return comm.shared


def shared_merge_op(comm, densify: str = "exact", users: int = 2):
    """An ``op`` merging ``a`` and ``b`` once for the ``users`` ranks that all compute
    ``merge(a, b)`` or ``merge(b, a)`` with the very same operand objects (e.g. the
    2^(j+1) ranks of a recursive-doubling window at step j, who all hold one of the two
    shared partial sums). The result is identical either way (the union is symmetric and
    a + b == b + a in IEEE arithmetic), so the first caller computes it and the others get
    the same object. The entry holds the operands (so their ids cannot be reused while it
    exists, and a lookup also checks identity) and is dropped after the last user."""
    memo = _shared(comm)
    op = merge_op(densify)

    def shared(a, b):
        key = ("merge", densify, *sorted((id(a), id(b))))
        entry = memo.get(key)
        if entry is None or not ((entry[0] is a and entry[1] is b) or (entry[0] is b and entry[1] is a)):
            entry = memo[key] = [a, b, op(a, b), users]
        entry[3] -= 1
        if entry[3] <= 0:
            del memo[key]
        return entry[2]

    return shared


#: ``--densify study`` (the study's message sizing) exists for these
STUDY_SIZING = ("dsar-split-allgather", "ssar-split-allgather", "sparse-ring", "sparse-ring-ring")


def no_study_sizing(name: str):
    """A registry ``check=`` (requirement) for an algorithm that takes ``densify`` but has
    no study sizing rule: ``--densify study`` is a one-line error naming those that do."""
    def check(nranks: int, densify=None, **_ignored) -> None:
        if densify == "study":
            raise UserInputError(
                f"--densify study: algorithm '{name}' has no study sizing rule "
                f"(it exists for: {', '.join(STUDY_SIZING)})")
    return check


def split_time(comm, x) -> float:
    """Cost of cutting the stream ``x`` into parts: the profile's split rate per entry
    (0 unless the profile sets it, e.g. the study compute table under --study)."""
    return comm.compute_model.split_time(x.nnz)


def assembly_time(comm, parts) -> float:
    """Cost of assembling the output from ``parts`` (streams): the profile's assembly
    rate per entry (0 unless the profile sets it)."""
    prof = comm.compute_model
    if prof.assembly_elements_per_second <= 0:
        return 0.0
    return prof.assembly_time(sum(p.nnz for p in iter_parts(parts)))


def selection_time(comm, entries: int) -> float:
    """Cost of one pass over ``entries`` (top-k selection, zero dropping, scatter-add of
    a batch): the profile's sparse merge rate."""
    return comm.compute_model.sparse_merge_time(entries)


def sum_streams(streams) -> SparseStream:
    """The sum of streams over one range, added in list order at common indices.

    Dense operands count all their positions as entries; the result follows the exact
    dense rule (dense when the union is not smaller dense).
    """
    first = streams[0]
    start, stop, ib = first.start, first.stop, first.index_bytes
    if any(s.is_dense for s in streams):
        acc = np.zeros(stop - start, dtype=first.dtype)
        for s in streams:  # in list order, also in floating point
            if s.is_dense:
                acc += s.values
            else:
                scatter_add(acc, positions(s.indices, start), s.values)
        acc.flags.writeable = False
        return SparseStream(start, stop, None, acc, ib)
    entries = sum(s.nnz for s in streams)
    if entries == 0:
        return first
    n = stop - start
    if 8 * entries >= n:
        return _sum_by_windows(streams)
    idx = np.concatenate([s.indices for s in streams])
    vals = np.concatenate([s.values for s in streams])
    order = np.argsort(idx, kind="stable")
    idx = idx[order]
    vals = vals[order]
    head = np.empty(idx.shape[0], dtype=bool)
    head[0] = True
    np.not_equal(idx[1:], idx[:-1], out=head[1:])
    heads = np.flatnonzero(head)
    if heads.shape[0] != idx.shape[0]:
        idx = idx[heads]
        vals = np.add.reduceat(vals, heads, dtype=vals.dtype)
    return _summed(start, stop, idx, vals, ib)


def _sum_by_windows(streams) -> SparseStream:
    """:func:`sum_streams` of many entries for the range: add them window by window into a
    dense buffer the size of a window, in list order, marking the positions present (exact
    zeros from cancellation stay entries); no buffer the size of the range unless the sum
    is dense."""
    first = streams[0]
    start, stop, ib = first.start, first.stop, first.index_bytes
    n = stop - start
    dt = first.dtype
    acc = present = None
    idx_parts, val_parts = [], []
    for lo, hi, items in sparse_windows(n, [(s.indices, s.values) for s in streams], start):
        if acc is None or acc.shape[0] < hi - lo:
            acc, present = np.zeros(hi - lo, dtype=dt), np.zeros(hi - lo, dtype=bool)
        for pos, vals in items:
            scatter_add(acc, pos, vals)  # unique positions per stream
            present[pos] = True
        w = hi - lo
        at = np.flatnonzero(present[:w])
        idx_parts.append(at + (start + lo))
        val_parts.append(acc[at])
        acc[:w] = 0     # (a fill of the window: cheaper than resetting the entries)
        present[:w] = False
    idx = np.concatenate(idx_parts).astype(first.indices.dtype)
    return _summed(start, stop, idx, np.concatenate(val_parts), ib)


def _summed(start, stop, idx, vals, ib) -> SparseStream:
    """The sum's entries as a read-only stream, dense when the union is not smaller dense."""
    if turns_dense(idx.shape[0], stop - start, vals.itemsize, ib):
        out = np.zeros(stop - start, dtype=vals.dtype)
        out[positions(idx, start)] = vals
        out.flags.writeable = False
        return SparseStream(start, stop, None, out, ib)
    idx.flags.writeable = False
    vals.flags.writeable = False
    return SparseStream(start, stop, idx, vals, ib)


def shared_sum(comm, streams, users: int) -> SparseStream:
    """:func:`sum_streams` computed once for ``users`` ranks holding the same stream
    objects in the same order (the gathered inputs of an allgather). The entry holds the
    streams (ids stay unique while it exists; lookups check identity) and is dropped
    after the last user."""
    memo = _shared(comm)
    streams = tuple(streams)
    key = ("sum", *(id(s) for s in streams))
    entry = memo.get(key)
    if entry is None or any(a is not b for a, b in zip(entry[0], streams)):
        entry = memo[key] = [streams, sum_streams(streams), users]
    entry[2] -= 1
    if entry[2] <= 0:
        del memo[key]
    return entry[1]


# -- cutting -----------------------------------------------------------------------------------
def split_stream(x: SparseStream, q: int) -> list:
    """``x`` cut into ``q`` part-streams (``sub_bounds`` of its range: parts of n // q,
    the last absorbs the remainder; exact dense rule per part). A list (mutable)."""
    return split_at(x, sub_bounds(x.start, x.stop, q))


# -- fold to a power of two ------------------------------------------------------------------------
def fold(comm, x, densify: str = "exact"):
    """Fold ``comm.size`` ranks onto the largest power of two p' (as recursive doubling does for dense data), the
    dense :func:`.doubling.fold` merging streams with the ``densify`` policy. Returns
    ``(vrank, x)``; undo with :func:`unfold` (shared with the dense algorithms)."""
    return (yield from _dense_fold(comm, x, op=merge_op(densify)))


# -- ring --------------------------------------------------------------------------------------------
def ring_pass(comm, parts: list, first: int, reduce: bool, densify: str = "exact"):
    """One ring pass (P - 1 steps) over ``comm`` on part-streams: the dense
    :func:`.rings.ring_pass` (one block per part, one message per step) merging with
    the ``densify`` policy. At step s send ``parts[(first - s) % P]`` to r + 1, receive
    part ``(first - s - 1) % P`` from r - 1 and merge it into yours (``reduce``) or store
    it. After a reduce pass with ``first`` the rank owns part ``first + 1``. ``parts`` (a
    list) is updated in place; a reduce pass sets the parts it handed on to ``None``."""
    if comm.size == 1:
        return parts
    blocks = [[p] for p in parts]
    yield from _ring_pass(comm, blocks, first, reduce, op=merge_op(densify) if reduce else None)
    parts[:] = [b[0] for b in blocks]
    return parts


def ring_reduce_scatter(comm, parts: list, owns: int, densify: str = "exact"):
    """Ring reduce-scatter of part-streams after which this rank owns part ``owns``
    (its rank plus a constant, mod P, on every rank) merged over ``comm``."""
    return (yield from ring_pass(comm, parts, (owns - 1) % comm.size, True, densify))


def ring_allgather(comm, parts: list, owns: int):
    """Ring allgather of part-streams: this rank starts with part ``owns`` and ends with all."""
    return (yield from ring_pass(comm, parts, owns % comm.size, False))
