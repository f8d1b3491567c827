"""Collective algorithms (allreduce, allgather, reduce-scatter, broadcast, reduce, alltoall),
one module each, registered in :mod:`.registry` under (collective, name)."""

import importlib
import pkgutil

from ._sparse_common import STUDY_SIZING
from .registry import ALGORITHMS, Algorithm, get_algorithm, register

__all__ = ["ALGORITHMS", "Algorithm", "get_algorithm", "register", "load_all", "STUDY_SIZING"]

_loaded = False


def load_all() -> dict:
    """Import every algorithm module of this package (each registers itself)."""
    global _loaded
    if not _loaded:
        for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
            if mod not in ("registry",) and not mod.startswith("_"):
                importlib.import_module(f"{__name__}.{mod}")
        _loaded = True
    return ALGORITHMS
