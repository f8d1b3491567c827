"""DSAR_Split_allgather: sparse split-and-reduce into dense parts, then an allgather of
the dense parts (SparCML, Renggli et al., SC 2019)."""

from __future__ import annotations

from ...data.dense import positions, scatter_add
from ...data.parts import Parts
from ...data.sparse import HEADER_BYTES, SparseStream
from ...errors import UserInputError
from ...patterns.sparse import assembly_time, split_stream, split_time
from ...patterns.sparse import allgather as gather_items
from ...patterns.dense import allgather_messages
from ..registry import register


def _scatter_add_into(acc: SparseStream, got: SparseStream) -> SparseStream:
    """Add ``got`` into the private dense accumulator ``acc`` (in place; see below)."""
    buf = acc.values          # writable until the accumulation is over
    if got.is_dense:
        buf += got.values
    else:
        scatter_add(buf, positions(got.indices, acc.start), got.values)
    return acc


def _study_only(nranks: int, densify=None, **_ignored) -> None:
    if densify is not None and densify != "study":
        raise UserInputError(f"--densify {densify!r}: dsar-split-allgather accepts only 'study' "
                             "(its parts are dense by construction)")


class _Raw:
    """A dense part on the wire without its 4-byte stream header (the study's allgatherv
    of raw values); ``stream`` is the part itself."""

    __slots__ = ("stream", "nbytes")

    def __init__(self, stream: SparseStream):
        self.stream = stream
        self.nbytes = stream.nbytes - HEADER_BYTES


def _messages(P, *, allgather="direct", **_):
    """P (P - 1) split messages, then the allgather variant's count."""
    return P * (P - 1) + allgather_messages(P, allgather)


@register("dsar-split-allgather", kind="sparse", options=("allgather", "densify"), check=_study_only, messages=_messages)
def dsar_split_allgather(comm, x, *, allgather="direct", densify=None):
    """DSAR split-allgather: direct exchange of P part-streams into a dense own part, then an allgather of the dense parts.

    Any P. "split": cut the stream into P parts (``block_bounds(N, P)``); post P - 1
    non-blocking sends (part j to rank j, starting with r + 1) and P - 1 receives; your
    own part becomes dense and every received part is scatter-added into it as it
    arrives. "allgather" of the dense parts (4 + (N/P) sv bytes each, N sv in total),
    ``allgather``: "direct" (default, the study's runs: every rank posts its part to every
    other rank at once), "ring" (P - 1 steps) or "recursive-doubling" (log2 p' steps,
    folding for P not a power of two). Output: the P dense parts in index order.

    ``densify="study"`` (``--densify study``, part of ``--study``): the study's code
    gathers the dense parts as raw values, (N/P) sv bytes
    each, without the 4-byte header.

    The dense accumulator is private to the rank until the last part is added (only
    then is it frozen and sent), so the scatter-adds update it in place instead of
    copying N/P values per received part.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return Parts([x])
    parts = split_stream(x, P)
    yield comm.compute(split_time(comm, x))
    with comm.phase("split"):
        sends = [comm.isend((r + i) % P, parts[(r + i) % P], tag="split") for i in range(1, P)]
        recvs = [comm.irecv((r - i) % P, tag="split") for i in range(1, P)]
        own = parts[r]
        acc = SparseStream(own.start, own.stop, None, own.to_dense().copy(), own.index_bytes)
        while recvs:
            i, got = yield comm.waitany(recvs)
            del recvs[i]
            acc = yield comm.add(acc, got, op=_scatter_add_into)
        acc.values.flags.writeable = False
        yield comm.waitall(sends)
    with comm.phase("allgather"):
        if densify == "study":
            items = yield from gather_items(comm, _Raw(acc), allgather, pack=tuple)
            items = [i.stream for i in items]
        else:
            items = yield from gather_items(comm, acc, allgather, pack=Parts)
    yield comm.compute(assembly_time(comm, items))
    return Parts(items)

