"""Compiled union of two sorted index runs, for :func:`~simcollective.data.sparse.merge`.

A plain Python function under ``@njit(cache=True)`` (``NUMBA_DISABLE_JIT=1`` runs it as
Python). It moves value *bits* (the values viewed as unsigned integers of their size), so
every dtype takes the same code, float16 included (which numba cannot do arithmetic on);
the sums at common indices are left to NumPy, in the dtype itself. Imported on the first
sparse + sparse merge only, so runs without one never load numba.
"""

from __future__ import annotations

from numba import njit

__all__ = ["union"]


#: Length ratio from which a merge takes the branching loop: when one run is this many
#: times longer than the other, most steps copy from the long run and the branch is well
#: predicted (131,072 + 16,384 entries: 3.0 ns per entry branching, 6.1 ns selecting);
#: between comparable runs the next entry comes from either about as often, a branch on
#: it is mispredicted half the time, and selecting without branching is 1.7x faster
#: (262,144 + 262,144 random entries: 6.7 ns per entry branching, 3.9 ns selecting).
SKEW = 4


@njit(cache=True)
def union(ai, av, bi, bv, idx, vals, at, src):
    """Merge sorted unique runs ``(ai, av)`` and ``(bi, bv)`` into ``idx``/``vals`` (sized
    for the worst case); an index in both takes a's value, and its output position goes
    to ``at`` and b's entry to ``src``. Returns (union length, number of common indices)."""
    n1, n2 = ai.shape[0], bi.shape[0]
    i = j = u = h = 0
    if n1 < SKEW * n2 and n2 < SKEW * n1:
        while i < n1 and j < n2:
            x = ai[i]
            y = bi[j]
            ta = x <= y
            tb = y <= x
            idx[u] = x if ta else y
            vals[u] = av[i] if ta else bv[j]
            at[h] = u   # kept only if the index is in both (h < min(n1, n2) here)
            src[h] = j
            h += ta & tb
            i += ta
            j += tb
            u += 1
    else:
        while i < n1 and j < n2:
            x, y = ai[i], bi[j]
            if x < y:
                idx[u] = x
                vals[u] = av[i]
                i += 1
            elif y < x:
                idx[u] = y
                vals[u] = bv[j]
                j += 1
            else:
                idx[u] = x
                vals[u] = av[i]
                at[h] = u
                src[h] = j
                h += 1
                i += 1
                j += 1
            u += 1
    while i < n1:
        idx[u] = ai[i]
        vals[u] = av[i]
        i += 1
        u += 1
    while j < n2:
        idx[u] = bi[j]
        vals[u] = bv[j]
        j += 1
        u += 1
    return u, h
