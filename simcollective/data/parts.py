"""Payload-generic helpers: lazy concatenation (:class:`Parts`), ``concat`` and ``add``.

Allgather phases build results out of blocks that other ranks reduced. Holding those
blocks by reference instead of copying them keeps memory at one copy of the result for
the whole simulation rather than one per rank: a :class:`Parts` is a tuple of payloads
that stands for their concatenation, sized on the wire exactly as the concatenation would
be, and accepted wherever a result is verified.
"""

from __future__ import annotations

import numpy as np

from .arrays import freeze
from .blocks import iter_parts
from .sparse import HEADER_BYTES, SparseStream, concat_is_dense
from .sparse import concat as _concat_streams
from .sparse import merge
from .symbolic import SymbolicArray
from .symbolic import concat as _concat_arrays

__all__ = ["Parts", "concat", "add"]


class Parts(tuple):
    """An immutable tuple of payloads standing for their concatenation, in order.

    Parameters
    ----------
    items : iterable
        Payloads (NumPy arrays, :class:`SymbolicArray` or :class:`SparseStream`, all of
        one kind) or nested sequences/``Parts`` of them; nesting is flattened.

    Notes
    -----
    ``len(p)`` is the number of parts (it is a tuple); :attr:`size` is the number of
    elements. Nothing is checked or copied: a misordered concatenation shows up at
    verification, which walks the parts by offset.
    """

    # (no __slots__: each instance has a dict holding its size in bytes once computed; a
    # Parts sent as one message is sized on every hop of a ring, in O(parts) each time)

    def __new__(cls, items=()):
        flat = tuple(iter_parts(items))
        if flat:
            kind = _kind(flat[0])
            if any(_kind(p) is not kind for p in flat):
                raise TypeError("Parts cannot mix NumPy arrays, SymbolicArray and SparseStream")
        return super().__new__(cls, flat)

    @property
    def size(self) -> int:
        """Total number of elements of the vector represented."""
        return sum(p.size for p in self)

    @property
    def nbytes(self) -> int:
        """Bytes of the concatenation: the sum for arrays; one stream's wire size for streams.

        For streams this is the wire size of ``concat(parts)`` (one 4-byte header; dense if
        the total is not smaller dense) computed without building it. Computed once (the
        parts are immutable).
        """
        try:
            return self._nbytes
        except AttributeError:
            pass
        if not self or not isinstance(self[0], SparseStream):
            n = sum(p.nbytes for p in self)
        else:
            first = self[0]
            if concat_is_dense(self):
                n = HEADER_BYTES + self.size * first.dtype.itemsize
            else:
                n = HEADER_BYTES + sum(p.nnz for p in self) * (first.index_bytes + first.dtype.itemsize)
        self._nbytes = n
        return n

    def __repr__(self) -> str:
        return f"Parts({len(self)} parts, {self.size} elements)"


def _kind(payload) -> type:
    for kind in (np.ndarray, SymbolicArray, SparseStream):
        if isinstance(payload, kind):
            return kind
    raise TypeError(f"{type(payload).__name__} is not a payload (array, SymbolicArray, SparseStream)")


def concat(parts):
    """Concatenate payloads of one kind, in order, into a new payload.

    Parameters
    ----------
    parts : sequence of payloads (arrays, SymbolicArray or SparseStream; nesting allowed)

    Returns
    -------
    numpy.ndarray, SymbolicArray or SparseStream
        Read-only array; merged symbolic array; or a stream, dense if the total is not
        smaller dense (see :func:`simcollective.data.sparse.concat`).
    """
    flat = Parts(parts)
    if not flat:
        raise ValueError("concat needs at least one part")
    if isinstance(flat[0], SparseStream):
        return _concat_streams(flat)
    return _concat_arrays(flat)


def add(a, b):
    """Sum two payloads of one kind without touching either (``a + b``, result read-only).

    Arrays give a read-only array, symbolic arrays a symbolic array, streams
    :func:`simcollective.data.sparse.merge` with the default ``"exact"`` policy.
    """
    if isinstance(a, np.ndarray):
        return freeze(a + b)
    if isinstance(a, SparseStream):
        return merge(a, b)
    return a + b
