"""Binomial-tree allreduce: reduce to rank 0, then broadcast down the same tree."""

from __future__ import annotations

from ...patterns.dense import nchunks, split
from ...patterns.trees import binomial_links
from ..registry import register


def _messages(P, *, n, dtype, chunk_size=None, **_):
    """2 (P - 1) k: every tree edge carries the k chunks up and down."""
    return 2 * (P - 1) * nchunks(n * dtype.itemsize, chunk_size)


@register("binomial-tree", kind="dense", options=("chunk_size",), messages=_messages)
def binomial_tree(comm, x, *, chunk_size=None):
    """Binomial tree: reduce to rank 0, then broadcast down the same tree.

    Reduce: for mask = 1, 2, 4, ... a rank receives from r | mask and adds, one child
    after the other, until its lowest set bit, where it sends to its parent. Broadcast:
    a rank receives from its parent and sends to its children one after the other,
    largest subtree first (as MPICH does).

    ``chunk_size`` (bytes, default ``None`` = the whole vector in one message): the
    vector is cut into ``ceil(bytes / chunk_size)`` chunks that are pipelined through
    the tree: a rank sends chunk j up without waiting and goes on with chunk j + 1 while
    its parent works on chunk j; likewise down. The broadcast starts on the root once
    every chunk is reduced.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [x]
    parent, children = binomial_links(P, r)
    chunks = split(x, nchunks(x.nbytes, chunk_size))
    with comm.phase("reduce"):
        sends = []
        for j, acc in enumerate(chunks):
            for c in children:
                got = yield comm.recv(c, tag=j)
                acc = yield comm.add(acc, got)
            if parent is None:
                chunks[j] = acc
            else:
                sends.append(comm.isend(parent, acc, tag=j))
        yield comm.waitall(sends)
    with comm.phase("broadcast"):
        for j in range(len(chunks)):
            if parent is not None:
                chunks[j] = yield comm.recv(parent, tag=j)
            for c in reversed(children):
                yield comm.send(c, chunks[j], tag=j)
    return chunks
