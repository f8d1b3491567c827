"""Python's cyclic garbage collector, paused around work that makes many objects and no
reference cycles (a simulation, a recording, a verification walk): its passes would walk
every live object again and again as they pile up, quadratic in the size of the run.

A large simulation leaves millions of objects alive once it is over (its world and every
rank's state, until the run's results are read): the collector's first passes after it
would walk them all once per generation (and once more at exit) to find them alive. Its
run (``collector_paused(freeze=True)``) leaves them frozen instead (``gc.freeze``: the
collector never walks them) when they are many; the next such run hands them back to the
collector and collects them before it starts, so that a process running simulation after
simulation frees each one's reference cycles. A pass also reads every entry of every list
it walks: a block that leaves few objects but long lists (a recording's rows of integers,
every rank's list of result blocks) says how many entries it leaves (``pause.held``), which
count as objects do."""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["collector_paused", "Pause", "FREEZE_ABOVE"]

#: objects left by a run past which ``collector_paused(freeze=True)`` freezes them (NVLSTree
#: on 4,096 GPUs leaves 0.7 M, on 1,024 GPUs 0.28 M)
FREEZE_ABOVE = 500_000

_frozen: list = []   # [True] while objects a run left are frozen


class Pause:
    """What a paused block reports: ``held``, the entries of the lists it leaves alive."""

    __slots__ = ("held",)

    def __init__(self):
        self.held = 0


@contextmanager
def collector_paused(freeze: bool = False):
    """Run the block with the cyclic collector paused; it is enabled again afterwards if
    it was before. ``freeze``: the block is a simulation's run (see the module docstring).
    Yields a :class:`Pause` (its ``held`` set by the block, if it knows it)."""
    enabled = gc.isenabled()
    if freeze and _frozen:
        _frozen.clear()
        gc.unfreeze()
        gc.collect()
    gc.disable()
    pause = Pause()
    try:
        yield pause
    finally:
        if enabled:
            if freeze and gc.get_count()[0] + pause.held > FREEZE_ABOVE:
                gc.freeze()
                _frozen.append(True)
            gc.enable()
