"""The array store's slots given to new flows, compiled (:mod:`.bulk`).

A slot is free while ``si[ALIVE]`` is 0 (:mod:`.bulk_rows`): a step's completions clear it,
its additions set it, and new flows are given their slots just before the step that adds
them. Free slots are taken lowest first (the slot order fixes the order of every float sum
over the flows); the store keeps ``lo``, a slot below which none is free, so that the walk
for the next ones starts there.
"""

from __future__ import annotations

from numba import njit

from .bulk_rows import ALIVE, EFF, NEW, SPID

__all__ = ["take"]


@njit(cache=True)
def take(si, sf, pids, effs, lo):
    """Give the ``len(pids)`` new flows the lowest free slots from ``lo`` on (there are
    enough): their slots in ``si[NEW]`` in order, their paths ``pids`` in ``si[SPID]`` and
    their bytes ``effs`` in ``sf[EFF]``. Returns the slot after the last one taken (none
    below it is free until a flow completes)."""
    alive, new, spid, eff = si[ALIVE], si[NEW], si[SPID], sf[EFF]
    s = lo
    for i in range(pids.shape[0]):
        while alive[s]:
            s += 1
        new[i], spid[s], eff[s] = s, pids[i], effs[i]
        s += 1
    return s
