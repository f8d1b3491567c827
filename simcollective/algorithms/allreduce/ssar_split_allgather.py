"""SSAR_Split_allgather: sparse split-and-reduce, then a recursive-doubling allgather of
the reduced parts (SparCML, Renggli et al., SC 2019)."""

from __future__ import annotations

import functools

from ...data.parts import Parts
from ...data.sparse import HEADER_BYTES
from ...patterns.sparse import (allgather, assembly_time, fold, merge_op, pof2_floor, real_rank, selection_time,
                             split_stream, split_time, unfold)
from ..registry import register


class StudyPairs(Parts):
    """An allgather message sized as the study's SSAR code sizes it: 4 + 8 nnz bytes of
    (index, value) pairs, or the full ``full``-element vector (4 + 4 full bytes) once
    8 nnz >= 4 full (the study's message sizing)."""

    def __new__(cls, items=(), full=0):
        obj = super().__new__(cls, items)
        obj.full = full
        return obj

    @property
    def nbytes(self) -> int:
        if not self:
            return 0
        first = self[0]
        pair = first.index_bytes + first.dtype.itemsize
        nnz = sum(p.nnz for p in self)
        if pair * nnz >= first.dtype.itemsize * self.full:
            return HEADER_BYTES + self.full * first.dtype.itemsize
        return HEADER_BYTES + nnz * pair


def _messages(P, **_):
    """p' (p' - 1) split messages, p' log2 p' allgather messages, fold and unfold: 2 rem."""
    if P < 2:
        return 0
    p2 = pof2_floor(P)
    return p2 * (p2 - 1) + p2 * (p2.bit_length() - 1) + 2 * (P - p2)


@register("ssar-split-allgather", kind="sparse", options=("densify",), messages=_messages)
def ssar_split_allgather(comm, x, *, densify="exact"):
    """SSAR split-allgather: direct exchange of p' part-streams, merge, recursive-doubling allgather.

    "fold" onto p' (the largest power of two <= P). "split": cut the stream into p'
    parts (``block_bounds(N, p')``), post p' - 1 non-blocking sends (part j to virtual
    rank j) and merge the p' - 1 parts received for your own part in arrival order
    (``densify`` policy). If your reduced part became dense it is turned back into
    (index, value) pairs without its exact zeros. "allgather": recursive doubling over
    the p' virtual ranks, concatenating the disjoint parts; every message is sized as
    one stream, dense when the total is not smaller dense (a lazy ``Parts``). "unfold"
    hands the result to the ranks that sat out. Output: the p' parts in index order.

    ``densify="study"`` (``--densify study``, part of ``--study``): the message sizing
    of the study's code. Every allgather message is the current stream of
    (global index, value) pairs, 4 + 8 nnz bytes, and turns dense only when
    8 nnz >= 4 N with N the *full* vector length, its dense form then being the full
    N-vector (4 + 4 N bytes), never "dense over the range gathered so far". Merges
    follow the exact rule.
    """
    P = comm.size
    if P == 1:
        return Parts([x])
    p2 = pof2_floor(P)
    rem = P - p2
    v, x = yield from fold(comm, x, densify)
    if v is not None:
        vcomm = comm.sub([real_rank(u, rem) for u in range(p2)], "ssar virtual")
        with comm.phase("split"):
            parts = split_stream(x, p2)
            yield comm.compute(split_time(comm, x))
            sends = [vcomm.isend((v + i) % p2, parts[(v + i) % p2], tag="split") for i in range(1, p2)]
            recvs = [vcomm.irecv((v - i) % p2, tag="split") for i in range(1, p2)]
            mine = parts[v]
            op = merge_op(densify)
            while recvs:
                i, got = yield vcomm.waitany(recvs)
                del recvs[i]
                mine = yield vcomm.add(mine, got, op=op)
            yield vcomm.waitall(sends)
            if mine.is_dense:
                yield comm.compute(selection_time(comm, mine.nnz))
                mine = mine.drop_zeros()
        with comm.phase("allgather"):
            pack = Parts if densify != "study" else functools.partial(StudyPairs, full=x.stop - x.start)
            x = Parts((yield from allgather(vcomm, mine, "recursive-doubling", pack=pack)))
        yield comm.compute(assembly_time(comm, x))
    return (yield from unfold(comm, x))
