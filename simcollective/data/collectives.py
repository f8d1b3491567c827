"""What each collective computes: input sizes, the expected result of every rank, sizes and
bus-bandwidth factors as nccl-tests counts them, and the references a dense run's results
are checked against (:class:`Sources`; the checks themselves are in :mod:`.verify`).

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
alltoallv       row sum of sizes  (sdispl[j][r], +counts[j][r], {j})      (P-1)/P
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

from ..errors import UserInputError
from .dense import DenseReference, Reference, dense_input
from .symbolic import format_ranks

__all__ = ["Piece", "Collective", "COLLECTIVES", "get_collective", "Sources"]


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
    # its layout is that of its sizes matrix: a run uses data.alltoallv.alltoallv_collective
    Collective("alltoallv", "alltoall_perf", True, False, False, lambda P: P,
               lambda r, P, c, root: [Piece(r * c, (r + 1) * c, 1 << j) for j in range(P)]),
)}


def get_collective(name: str) -> Collective:
    try:
        return COLLECTIVES[name]
    except KeyError:
        raise UserInputError(f"unknown collective {name!r}; choose from: {', '.join(COLLECTIVES)}") from None


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


