"""Block boundaries: how a vector is cut into parts.

The study's convention is used everywhere: cutting ``n`` elements into ``q`` parts gives
parts of ``n // q`` elements and the last part absorbs the remainder.

>>> block_bounds(10, 3)
[(0, 3), (3, 6), (6, 10)]
>>> sub_bounds(100, 110, 3)
[(100, 103), (103, 106), (106, 110)]
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["block_bounds", "cached_bounds", "largest_block", "sub_bounds", "iter_parts"]


def block_bounds(n: int, q: int) -> list[tuple[int, int]]:
    """Cut ``[0, n)`` into ``q`` contiguous parts; the last one absorbs the remainder.

    Parameters
    ----------
    n : int
        Number of elements (>= 0).
    q : int
        Number of parts (>= 1).

    Returns
    -------
    list of (int, int)
        ``q`` half-open ranges ``(start, stop)``; every part but the last has ``n // q``
        elements (so parts may be empty when ``n < q``).

    Raises
    ------
    ValueError
        If ``q < 1`` or ``n < 0``.
    """
    return list(cached_bounds(n, q))


@lru_cache(maxsize=64)
def cached_bounds(n: int, q: int) -> tuple:
    """``block_bounds(n, q)`` as a tuple, computed once: every rank of a run cuts the
    same vector into the same blocks (P^2 bounds at P ranks otherwise)."""
    return tuple(sub_bounds(0, n, q))


def largest_block(n: int, q: int) -> int:
    """The elements of the largest of ``block_bounds(n, q)``'s parts: the last one,
    ``n // q`` plus the remainder (without cutting).

    >>> largest_block(10, 3)
    4
    >>> largest_block(2, 4)
    2
    """
    if q < 1 or n < 0:
        sub_bounds(0, n, q)   # (raises block_bounds's error)
    return n - (q - 1) * (n // q)


def sub_bounds(start: int, stop: int, q: int) -> list[tuple[int, int]]:
    """Cut ``[start, stop)`` into ``q`` parts with the convention of :func:`block_bounds`.

    Parameters
    ----------
    start, stop : int
        The range to cut, ``start <= stop``.
    q : int
        Number of parts (>= 1).

    Returns
    -------
    list of (int, int)
        ``q`` contiguous ranges covering ``[start, stop)`` in order.

    Raises
    ------
    ValueError
        If ``q < 1`` or ``stop < start``.
    """
    q = int(q)
    start = int(start)
    stop = int(stop)
    if q < 1:
        raise ValueError(f"number of parts {q} must be >= 1")
    if stop < start:
        raise ValueError(f"empty range [{start}, {stop}): stop < start")
    size = (stop - start) // q
    cuts = [start + i * size for i in range(q)] + [stop]
    return [(cuts[i], cuts[i + 1]) for i in range(q)]


def iter_parts(output):
    """Yield the leaf payloads of an output, in order, flattening lists and tuples.

    An output is one payload (a NumPy array, a ``SymbolicArray`` or a ``SparseStream``)
    or a list/tuple (including :class:`~simcollective.data.parts.Parts`, a tuple) of
    outputs whose concatenation, in order, is the result.

    Parameters
    ----------
    output : payload or sequence of payloads

    Yields
    ------
    payload
        Each leaf, by reference (nothing is copied).
    """
    if isinstance(output, (list, tuple)):
        for item in output:
            yield from iter_parts(item)
    else:
        yield output
