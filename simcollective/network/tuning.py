"""The engine's tuning: every threshold that changes how rates are found (never what
they are), in one place, each with the reason it exists.

A :class:`Tuning` is passed to :class:`~simcollective.network.engine.Network`; tests
lower the thresholds to drive a handful of flows through the paths meant for thousands.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Tuning", "DEFAULT_TUNING"]


@dataclass(frozen=True)
class Tuning:
    """Thresholds of the engine (none changes a rate beyond float rounding)."""

    #: relative slack before a resource counts as saturable (its flows' bounds exceed it):
    #: float sums of bounds that equal the capacity must not link flows
    eps: float = 1e-9
    #: relative tolerance when picking bottlenecks of equal level in the filling: equal
    #: levels computed through different sums must fix in the same pass
    level_tol: float = 1e-12
    #: a resource loaded above (1 - near_tol) x capacity may be saturated: only those
    #: carry bottlenecks, so a change elsewhere needs no re-solve
    near_tol: float = 1e-6
    #: bulk solves re-solve flows this close below the cutoff level too (rounding of levels)
    cutoff_tol: float = 1e-9
    #: with more active flows than this, a component walk past ``walk_limit`` coupled
    #: flows moves all flows into the compiled array store: the Python walk costs more
    #: than the compiled solve of everything (measured on benchmark S4)
    bulk_min: int = 64
    #: ... "past": more coupled flows than this
    walk_limit: int = 128
    #: the array store hands flows back to per-flow objects below this many active flows:
    #: small problems are solved faster without the array bookkeeping
    bulk_off: int = 48
    #: the array store recomputes its per-resource sums every this many solves, so the
    #: incremental sums cannot drift by rounding
    refresh: int = 1024
    #: filling work (entries + flows + resources of a problem, per pass) a process runs
    #: interpreted before it loads the compiled filling: importing numba and loading the
    #: first cached kernel cost about 0.35 s CPU, this much interpreted work about 0.2 s
    #: (0.4 us a unit), and small runs (every S1 point: at most 4,705 units) stay below
    jit_after: int = 500_000


DEFAULT_TUNING = Tuning()
