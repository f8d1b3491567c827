"""Mechanics shared by the sparse (SparCML-stream) allreduce algorithms.

Per-rank generator code like the algorithms themselves (call with ``yield from``).
Streams are immutable and shared by reference; reductions go through ``comm.add`` so
that the profile's sparse merge time is paid, with the ``densify`` policy of
:func:`simcollective.data.sparse.merge` passed as the reduction ``op``.

Why not all of :mod:`._common`: its ``ring_pass`` reduces with ``comm.add(a, b)``
(no ``op``), which on streams always merges with the default ``densify="exact"``
policy, so ``densify="upper-bound"`` could not be honoured. ``fold`` takes the op and is
reused, as are the policy-free ``pof2_floor``, ``real_rank`` and ``unfold``.

Memory: when several ranks compute *the same* reduction of *the same* operand objects
(both partners of a recursive-doubling exchange, or all ranks summing the gathered
inputs), :func:`shared_merge_op` / :func:`shared_sum` compute it once per simulation
and hand every rank the same immutable result (each rank still pays its compute time).
This keeps one copy of the result for the whole simulation instead of one per rank.
"""

from __future__ import annotations

import numpy as np

from ..data.blocks import iter_parts, sub_bounds
from ..data.parts import Parts
from ..data.dense import positions, scatter_add
from ..data.sparse import DENSIFY_POLICIES, SparseStream, merge, split_at, turns_dense
from ..errors import UserInputError
from ._common import fold as _dense_fold
from ._common import pof2_floor, real_rank, unfold

__all__ = [
    "pof2_floor", "real_rank", "unfold", "fold", "is_pof2",
    "check_densify", "check_allgather", "check_group_size", "check_bool",
    "merge_op", "shared_merge_op", "split_stream", "ring_pass", "allgather",
    "selection_time", "split_time", "assembly_time", "sum_streams", "shared_sum", "ALLGATHERS", "STUDY_SIZING",
]

#: allgather variants accepted by the ``allgather`` option
ALLGATHERS = ("direct", "ring", "recursive-doubling")


# -- option checks (registry ``check=`` hooks are built from these) ---------------------------
#: ``--densify study`` (the study's message sizing, study-quirks.md section 3) exists for these
STUDY_SIZING = ("dsar-split-allgather", "ssar-split-allgather", "sparse-ring", "sparse-ring-ring")


def check_densify(densify, algorithm: str | None = None) -> None:
    """``densify`` must be a merge policy, or ``"study"`` for an algorithm of
    :data:`STUDY_SIZING` (``algorithm=None``: no study rule)."""
    if densify == "study":
        if algorithm not in STUDY_SIZING:
            raise UserInputError(
                f"--densify study: algorithm '{algorithm}' has no study sizing rule "
                f"(it exists for: {', '.join(STUDY_SIZING)})")
        return
    if densify is not None and densify not in DENSIFY_POLICIES:
        allowed = (*DENSIFY_POLICIES, "study") if algorithm in STUDY_SIZING else DENSIFY_POLICIES
        raise UserInputError(f"--densify {densify!r} must be one of: {', '.join(allowed)}")


def check_allgather(allgather) -> None:
    if allgather is not None and allgather not in ALLGATHERS:
        raise UserInputError(f"--allgather {allgather!r} must be one of: {', '.join(ALLGATHERS)}")


def check_group_size(nranks: int, group_size) -> None:
    if group_size is None:
        return
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise UserInputError(f"--group-size {group_size!r} must be a positive integer")
    if nranks % group_size:
        raise UserInputError(f"--group-size {group_size} does not divide the {nranks} ranks")


def check_bool(name: str, value) -> None:
    if value is not None and not isinstance(value, bool):
        raise UserInputError(f"--{name} {value!r} must be true or false")


def is_pof2(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


# -- reductions ----------------------------------------------------------------------------------
def merge_op(densify: str = "exact"):
    """The ``op`` for ``comm.add`` that merges two streams with the ``densify`` policy."""
    if densify in ("exact", "study"):  # the study's merges follow the exact dense rule
        return merge
    return lambda a, b: merge(a, b, densify)


def _shared(comm) -> dict:
    """A dict private to this simulation (lives on the run's World object)."""
    world = comm.world
    memo = world.__dict__.get("_sparse_memo")
    if memo is None:
        memo = world.__dict__["_sparse_memo"] = {}
    return memo


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


def split_time(comm, x) -> float:
    """Cost of cutting the stream ``x`` into parts: the profile's split rate per entry
    (0 unless the profile sets it, e.g. the study compute table under --study)."""
    return comm.profile.split_time(x.nnz)


def assembly_time(comm, parts) -> float:
    """Cost of assembling the output from ``parts`` (streams): the profile's assembly
    rate per entry (0 unless the profile sets it)."""
    prof = comm.profile
    if prof.assembly_elements_per_second <= 0:
        return 0.0
    return prof.assembly_time(sum(p.nnz for p in iter_parts(parts)))


def selection_time(comm, entries: int) -> float:
    """Cost of one pass over ``entries`` (top-k selection, zero dropping, scatter-add of
    a batch): the profile's sparse merge rate."""
    return comm.profile.sparse_merge_time(entries)


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
        # many entries for the range: add them into a dense buffer in list order and mark
        # the positions present (exact zeros from cancellation stay entries)
        acc = np.zeros(n, dtype=first.dtype)
        present = np.zeros(n, dtype=bool)
        for s in streams:
            pos = positions(s.indices, start)
            scatter_add(acc, pos, s.values)  # unique positions per stream
            present[pos] = True
        union = int(np.count_nonzero(present))
        if turns_dense(union, n, acc.itemsize, ib):
            acc.flags.writeable = False
            return SparseStream(start, stop, None, acc, ib)
        at = np.flatnonzero(present)
        idx = (at + start).astype(first.indices.dtype)
        vals = acc[at]
        idx.flags.writeable = False
        vals.flags.writeable = False
        return SparseStream(start, stop, idx, vals, ib)
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
    """Fold ``comm.size`` ranks onto the largest power of two p' (see algorithms.md), the
    dense :func:`._common.fold` merging streams with the ``densify`` policy. Returns
    ``(vrank, x)``; undo with :func:`unfold` (shared with the dense algorithms)."""
    return (yield from _dense_fold(comm, x, op=merge_op(densify)))


# -- ring --------------------------------------------------------------------------------------------
def ring_pass(comm, parts: list, first: int, reduce: bool, densify: str = "exact"):
    """One ring pass (P - 1 steps) over ``comm``: at step s send ``parts[(first - s) % P]``
    to r + 1, receive part ``(first - s - 1) % P`` from r - 1 and merge it into yours
    (``reduce``) or store it. After a reduce pass with ``first`` the rank owns part
    ``first + 1``; an allgather pass of owners ``o(r)`` uses ``first = o``. ``parts`` (a
    list) is updated in place with new streams; no stream is modified. A reduce pass
    sets the parts it handed on to ``None`` (only the owned part is complete; keeping
    every partial sum would hold ~P/2 copies of the vector in a simulation)."""
    P, r = comm.size, comm.rank
    if P == 1:
        return parts
    right, left = (r + 1) % P, (r - 1) % P
    op = merge_op(densify)
    for s in range(P - 1):
        sb, rb = (first - s) % P, (first - s - 1) % P
        got = yield comm.sendrecv(right, parts[sb], left)
        if reduce:
            parts[sb] = None   # a partial sum handed on: drop it (the allgather brings the result)
            parts[rb] = yield comm.add(parts[rb], got, op=op)
        else:
            parts[rb] = got
    return parts


# -- allgather of one item per rank ---------------------------------------------------------------
def allgather(comm, item, variant: str = "recursive-doubling", pack=Parts, tag="ag"):
    """Gather every rank's ``item`` (a payload); returns the list of the P items in rank
    order (references, nothing copied).

    ``variant``: ``"direct"`` (every rank posts its item to every other rank at once and
    receives P - 1 items), ``"ring"`` (P - 1 steps, one item per message) or
    ``"recursive-doubling"`` (log2 p' exchanges of the items gathered so far, packed into
    one message by ``pack(list_of_items)``; unpacked with ``list(...)``; for P not a power
    of two, even r < 2 rem first hands its item to r + 1 and gets the full list back
    from it at the end). ``pack=Parts`` sizes a message as one stream (the concatenation,
    dense if not smaller dense); ``pack=tuple`` as the sum of the items' sizes.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [item]
    if variant == "direct":
        sends = [comm.isend((r + i) % P, item, tag=tag) for i in range(1, P)]
        srcs = [(r - i) % P for i in range(1, P)]
        got = yield comm.waitall([comm.irecv(s, tag=tag) for s in srcs])
        yield comm.waitall(sends)
        items = [None] * P
        items[r] = item
        for s, v in zip(srcs, got):
            items[s] = v
        return items
    if variant == "ring":
        items = [None] * P
        items[r] = item
        right, left = (r + 1) % P, (r - 1) % P
        for s in range(P - 1):
            items[(r - s - 1) % P] = yield comm.sendrecv(right, items[(r - s) % P], left, tag=tag)
        return items
    if variant != "recursive-doubling":
        raise UserInputError(f"--allgather {variant!r} must be one of: {', '.join(ALLGATHERS)}")
    p2 = pof2_floor(P)
    rem = P - p2
    if r < 2 * rem:
        if r % 2 == 0:
            yield comm.send(r + 1, item, tag=(tag, "fold"))
            return list((yield comm.recv(r + 1, tag=(tag, "unfold"))))
        coll = [(yield comm.recv(r - 1, tag=(tag, "fold"))), item]
        v = r // 2
    else:
        coll = [item]
        v = r - rem
    dist = 1
    while dist < p2:
        pv = v ^ dist
        partner = real_rank(pv, rem)
        got = list((yield comm.sendrecv(partner, pack(coll), partner, tag=tag)))
        coll = coll + got if pv > v else got + coll
        dist <<= 1
    if r < 2 * rem:
        yield comm.send(r - 1, pack(coll), tag=(tag, "unfold"))
    return coll
