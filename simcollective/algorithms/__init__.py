"""Collective algorithms (allreduce, allgather, reduce-scatter, broadcast, reduce, alltoall),
one module each, registered in :mod:`.registry` under (collective, name)."""

import importlib
import importlib.util
import pkgutil

from .registry import ALGORITHMS, Algorithm, get_algorithm, register

__all__ = ["ALGORITHMS", "Algorithm", "get_algorithm", "register", "load_all", "load_module_of",
           "STUDY_SIZING"]

_loaded = False


def __getattr__(name):
    if name == "STUDY_SIZING":      # the sparse patterns' table, loaded when asked (a dense run never asks)
        from ..patterns.sparse import STUDY_SIZING

        return STUDY_SIZING
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def load_module_of(collective: str, name: str) -> bool:
    """Import the package's module that, by the package's layout, defines algorithm ``name``
    of ``collective`` (``collective/name.py``, ``-`` read as ``_``), alone; whether there is
    one. Whatever it registers is registered as by :func:`load_all`."""
    folder, mod = collective.replace("-", "_"), name.replace("-", "_")
    if not (folder.isidentifier() and mod.isidentifier()):
        return False
    try:
        found = importlib.util.find_spec(f"{__name__}.{folder}.{mod}") is not None
    except ModuleNotFoundError:     # no such collective folder
        return False
    if found:
        importlib.import_module(f"{__name__}.{folder}.{mod}")
    return found
