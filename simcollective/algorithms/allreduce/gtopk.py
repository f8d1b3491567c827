"""gTop-k: tree reduction keeping the k largest entries at every merge, then a binomial
broadcast (Shi et al., ICDCS 2019; approximate by design)."""

from __future__ import annotations

import numpy as np

from ...errors import UserInputError
from ...patterns.sparse import is_pof2, selection_time
from ..registry import register


def requires_pof2(nranks: int, **_ignored) -> None:
    if not is_pof2(nranks):
        raise UserInputError(
            f"gtopk needs a power-of-two number of ranks; P = {nranks} is not one "
            f"(use {1 << (nranks.bit_length() - 1)} or {1 << nranks.bit_length()} GPUs)")


def _top(idx: np.ndarray, vals: np.ndarray, k: int):
    """The k entries of largest |value| (ties: lower index first), indices ascending."""
    m = idx.shape[0]
    if m <= k:
        return idx, vals
    if k == 0:
        return idx[:0], vals[:0]
    # the k-th largest magnitude splits the entries: all above it, then the ties at it
    # by ascending index (idx is ascending, so by position); O(m), not a full sort
    mag = np.abs(vals.astype(np.float64))
    kth = np.partition(mag, m - k)[m - k]
    above = np.flatnonzero(mag > kth)
    ties = np.flatnonzero(mag == kth)[: k - above.shape[0]]
    sel = np.sort(np.concatenate((above, ties)))  # disjoint
    return idx[sel], vals[sel]


def _merge_pairs(a, b):
    """Union of two (indices, values) sets, values summed (in the data's dtype) at common
    indices; indices ascending. Written independently of ``data.sparse.merge``."""
    idx = np.concatenate((a[0], b[0]))
    vals = np.concatenate((a[1], b[1]))
    order = np.argsort(idx, kind="stable")  # two sorted runs: a linear merge
    idx = idx[order]
    new = np.empty(idx.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(idx[1:], idx[:-1], out=new[1:])
    vals = vals[order]
    out = vals[new]
    dup = ~new  # an index present in both sets: its second value, added to the first
    out[(np.cumsum(new) - 1)[dup]] += vals[dup]
    return idx[new], out


def gtopk_reference(workload, nranks: int, *, k=None, **_ignored) -> np.ndarray:
    """gTop-k's definition in NumPy: in round i = 0..m-1 the set of rank r (a multiple of
    2^(i+1)) becomes the top-k (largest |value|, ties: lower index first) of its set plus
    that of r + 2^i (values summed at common indices); the result is rank 0's set, as a
    dense vector."""
    P = int(nranks)
    k = workload.k if k is None else int(k)

    def pairs(r):
        s = workload.input(r)
        if s.is_dense:
            return _top(np.arange(s.n, dtype=np.int64), s.values, k)
        return s.indices.astype(np.int64), s.values

    def subtree(r, size):   # depth first: at most log2(P) sets alive
        if size == 1:
            return _top(*pairs(r), k)
        half = size // 2
        return _top(*_merge_pairs(subtree(r, half), subtree(r + half, half)), k)

    idx, vals = subtree(0, P)
    out = np.zeros(workload.n, dtype=workload.dtype)
    out[idx] = vals
    out.flags.writeable = False
    return out


def _messages(P, **_):
    """2 (P - 1): the reduction tree up, the binomial broadcast down."""
    return 2 * (P - 1)


@register("gtopk", kind="sparse", exact=False, reference=gtopk_reference, check=requires_pof2, messages=_messages)
def gtopk(comm, x, *, k):
    """gTop-k (approximate): tree reduction keeping the top-k at every merge, binomial broadcast.

    P = 2^m. "reduce": in round i = 0..m-1 the ranks that are multiples of 2^i pair up;
    the odd one of a pair sends its current k pairs to r - 2^i and goes idle, the
    receiver merges them into its own (sparse merge rate) and keeps the k entries of
    largest |value| (ties: lower index first; a selection pass at the same rate).
    "broadcast": rank 0 sends the final k pairs down the binomial tree. Every rank
    outputs those k pairs: the global top-k of the tree-order partial sums, verified
    against :func:`gtopk_reference`.
    """
    P, r = comm.size, comm.rank
    requires_pof2(P)
    cur = x.topk(k) if x.is_dense or x.nnz > k else x
    if P == 1:
        return cur
    with comm.phase("reduce"):
        dist = 1
        while dist < P:
            if r & dist:
                yield comm.send(r - dist, cur)
                break
            got = yield comm.recv(r + dist)
            merged = yield comm.add(cur, got)
            yield comm.compute(selection_time(comm, merged.nnz))
            cur = merged.topk(k)
            dist <<= 1
    with comm.phase("broadcast"):
        mask = 1
        while mask < P:
            if r & mask:
                cur = yield comm.recv(r - mask)
                break
            mask <<= 1
        mask >>= 1
        sends = []
        while mask > 0:
            if r + mask < P:
                sends.append(comm.isend(r + mask, cur))
            mask >>= 1
        if sends:
            yield comm.waitall(sends)
    return cur
