"""Collective algorithms (allreduce, allgather, reduce-scatter, broadcast, reduce, alltoall),
one module each, registered in :mod:`.registry` under (collective, name)."""

import importlib
import pkgutil

from ..patterns.sparse import STUDY_SIZING
from .registry import ALGORITHMS, Algorithm, get_algorithm, register

__all__ = ["ALGORITHMS", "Algorithm", "get_algorithm", "register", "load_all", "STUDY_SIZING"]

_loaded = False


def load_all() -> dict:
    """Import every algorithm module of this package (each registers itself), then the
    modules of the installed ``simcollective.algorithms`` entry points (:mod:`.plugins`)."""
    global _loaded
    if not _loaded:
        for folder in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
            pkg = importlib.import_module(f"{__name__}.{folder}")
            for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
                importlib.import_module(f"{pkg.__name__}.{mod}")
        _loaded = True
        from .plugins import load_entry_points

        load_entry_points()
    return ALGORITHMS
