"""Sparse ring-ring: the study's topology-aware hierarchical sparse allreduce (ring-ring's
two levels, inside groups and across them, on SparCML streams)."""

from __future__ import annotations

import numpy as np

from ...data.blocks import block_bounds
from ...data.dense import Reference
from ...data.parts import Parts
from ...patterns.sparse import (assembly_time, ring_allgather, ring_reduce_scatter, selection_time, split_stream,
                             split_time)
from ...patterns.dense import two_level_messages
from ..registry import register


def resparsify_k(k: int, L: int) -> int:
    """Entries each rank keeps of its part when ``resparsify`` is on: ceil(k / L)."""
    return -(-int(k) // int(L))


def _top(idx: np.ndarray, vals: np.ndarray, kk: int):
    """The ``kk`` entries of largest |value| (ties: lower index first), indices ascending.
    Independent of ``SparseStream.topk`` on purpose (this is the reference)."""
    if idx.shape[0] <= kk:
        return idx, vals
    mag = np.abs(vals.astype(np.float64))
    sel = np.lexsort((idx, -mag))[:kk]
    sel.sort()          # idx is ascending, so positions ascending = indices ascending
    return idx[sel], vals[sel]


def resparsify_reference(workload, nranks: int, *, group_size=None, resparsify=False, k=None, **_ignored):
    """The exact expected result of ``sparse-ring-ring`` (``None`` = the plain sum).

    With ``resparsify`` on: for every group g and local index l, the sum over the group's
    L ranks of their inputs restricted to block l (``block_bounds(N, L)``) keeps its
    ceil(k / L) entries of largest |value| (ties: lower index first); the result is the
    sum of these kept entries over all groups and blocks.
    """
    if not resparsify:
        return None
    n, P = workload.n, int(nranks)
    L = P if group_size is None else int(group_size)
    kk = resparsify_k(workload.k if k is None else k, L)
    cuts = np.array([lo for lo, _ in block_bounds(n, L)] + [n], dtype=np.int64)
    acc_dt = np.int64 if workload.dtype.kind == "i" else np.float64

    def contributions():
        for g in range(P // L):
            streams = [workload.input(r) for r in range(g * L, g * L + L)]
            idx = np.concatenate([s.indices.astype(np.int64) if not s.is_dense else np.arange(n, dtype=np.int64)
                                  for s in streams])
            vals = np.concatenate([s.values.astype(acc_dt) for s in streams])
            uidx, inv = np.unique(idx, return_inverse=True)
            sums = np.zeros(uidx.shape[0], dtype=acc_dt)
            np.add.at(sums, inv, vals)
            pos = np.searchsorted(uidx, cuts)
            for b in range(L):
                bi, bv = _top(uidx[pos[b]:pos[b + 1]], sums[pos[b]:pos[b + 1]], kk)
                yield bi, bv.astype(workload.dtype)

    return Reference.accumulate(n, workload.dtype, P, contributions())


def _messages(P, *, group_size=None, **_):
    """2 P ((L - 1) + (M - 1))."""
    return two_level_messages(P, group_size or P, passes=2)


@register("sparse-ring-ring", kind="sparse", options=("group_size", "densify", "resparsify"),
          reference=resparsify_reference, messages=_messages)
def sparse_ring_ring(comm, x, *, k=None, group_size=None, densify="exact", resparsify=False):
    """Sparse ring-ring: intra-group ring reduce-scatter, multi-leader inter-group rings, intra-group allgather.

    Groups are L = ``group_size`` consecutive ranks (default: the topology's group size);
    M = P / L; l = r mod L, g = r div L. The input stream is cut into L part-streams
    (``block_bounds(N, L)``). (a) "intra-reduce-scatter": ring over the group, step i
    sends part (l - 1 - i) and merges part (l - 2 - i); rank owns part l. (b) Part l is
    cut into M sub-streams; "inter-reduce-scatter": ring among the ranks with the same l
    (send sub-stream g - 1 - i to l + (g + 1) L, receive g - 2 - i from l + (g - 1) L);
    (c) "inter-allgather" of the sub-streams; all L ranks of a group do (b) and (c) at
    once on different parts (multi-leader). The sub-streams are joined back into part l
    (a lazy ``Parts``, sized on the wire as one stream, dense if not smaller dense).
    (d) "intra-allgather" of the parts. Expected entries per message: (a) step i
    (N/L)(1-(1-d)^(i+1)); (b) step i (N/P)(1-(1-d)^(L(i+1))); (c) (N/P)(1-(1-d)^P);
    (d) (N/L)(1-(1-d)^P); each capped at dense size, plus the 4-byte header.

    ``densify``: "exact" (default) or "upper-bound" (n1 + n2, the study's code) for the
    merges; "study" (part of ``--study``) sizes every message as the study's ring code
    does, 4 + 8 nnz or dense, whichever is smaller (the exact rule). ``resparsify`` (default False): after (a) each rank keeps only the
    ceil(k / L) entries of largest |value| of its part (ties: lower index first), so the
    group's reduced vector is brought back to ~k entries (the input density) before the
    slow inter-group phases; the result is then approximate and verified against
    :func:`resparsify_reference`.
    """
    P = comm.size
    L = P if group_size is None else group_size
    if P == 1:
        return Parts([x])
    intra, inter = comm.groups(L)
    l, g = intra.rank, inter.rank
    M = inter.size
    parts = split_stream(x, L)
    yield comm.compute(split_time(comm, x))
    with comm.phase("intra-reduce-scatter"):
        yield from ring_reduce_scatter(intra, parts, owns=l, densify=densify)
    mine = parts[l]
    if resparsify:
        kk = resparsify_k(k, L)
        yield comm.compute(selection_time(comm, mine.nnz))
        mine = mine.topk(kk)
    subs = split_stream(mine, M)
    yield comm.compute(split_time(comm, mine))
    with comm.phase("inter-reduce-scatter"):
        yield from ring_reduce_scatter(inter, subs, owns=g, densify=densify)
    with comm.phase("inter-allgather"):
        yield from ring_allgather(inter, subs, owns=g)
    parts[l] = Parts(subs)
    with comm.phase("intra-allgather"):
        yield from ring_allgather(intra, parts, owns=l)
    yield comm.compute(assembly_time(comm, parts))
    return Parts(parts)
