"""Python's cyclic garbage collector, paused around work that makes many objects and no
reference cycles (a simulation, a recording, a verification walk): its passes would walk
every live object again and again as they pile up, quadratic in the size of the run."""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused():
    """Run the block with the cyclic collector paused; it is enabled again afterwards if
    it was before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
