"""Hop distances toward many destinations at once (compiled): the breadth-first searches
:meth:`~.route_tails.CachedRoutes.route_parts` takes its pairs' next hops from."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["hop_rows"]


@njit(cache=True)
def hop_rows(ptr, pred, dsts, need_ptr, need, N):
    """Row ``i``: the hop distances to node ``dsts[i]`` (-1: not searched, or no route), a
    breadth-first search along reversed links (``pred[ptr[v]:ptr[v + 1]]``: the nodes with a
    link into ``v``) level by level, until every node ``need[need_ptr[i]:need_ptr[i + 1]]``
    has its distance or none is left to search. A level is searched whole, so every node
    closer to ``dsts[i]`` than the farthest needed one has its distance: all a shortest path
    from a needed node takes (as :meth:`~.routing.Router._distances_to` stops its search).

    >>> ptr, pred = np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1])   # a line 0 - 1 - 2
    >>> hop_rows(ptr, pred, np.array([0, 0]), np.array([0, 1, 2]), np.array([1, 2]), 3).tolist()
    [[0, 1, -1], [0, 1, 2]]
    """
    R = len(dsts)
    hops = np.full((R, N), -1, np.int32)
    queue = np.empty(N, np.int64)
    for i in range(R):
        row = hops[i]
        row[dsts[i]] = 0
        queue[0] = dsts[i]
        head, tail, level = 0, 1, 0
        while head < tail:
            found = True   # (every needed node has its distance: the search stops)
            for j in range(need_ptr[i], need_ptr[i + 1]):
                if row[need[j]] < 0:
                    found = False
                    break
            if found:
                break
            level += 1
            end = tail
            while head < end:   # the nodes of the last level: their predecessors are the next one
                v = queue[head]
                head += 1
                for k in range(ptr[v], ptr[v + 1]):
                    u = pred[k]
                    if row[u] < 0:
                        row[u] = level
                        queue[tail] = u
                        tail += 1
    return hops
