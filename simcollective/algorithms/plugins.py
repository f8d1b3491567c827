"""Algorithms from outside the package: plugin modules or files, and an entry-point group.

A plugin is a Python module (``mypkg.collectives``) or file (``./my_ring.py``) whose import
registers algorithms with :func:`~simcollective.algorithms.registry.register`, exactly as
the package's own algorithm modules do::

    from simcollective.algorithms import register

    @register("my-ring", kind="dense", collective="allgather")
    def my_ring(comm, x):
        "One line for 'simcollective algorithms'."
        ...

Every command that takes an algorithm (``run``, ``bench``, ``sweep``, ``compare``, ``job``;
and ``algorithms``, which lists them) loads the plugins named by ``--plugin
MODULE_OR_FILE`` (repeatable) before it reads its inputs; a sweep's worker processes load
them too. An installed package can instead declare
its module in the entry-point group :data:`ENTRY_POINT_GROUP`, loaded with all of the
package's own algorithms (by the listings, and by a command or API call that names an
algorithm the package has no module for)::

    [project.entry-points."simcollective.algorithms"]
    my-collectives = "mypkg.collectives"

A plugin that fails to import, or that registers no algorithm, is an error naming it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys

from ..errors import UserInputError
from .registry import REGISTRY

__all__ = ["ENTRY_POINT_GROUP", "load_plugin", "load_plugins", "load_entry_points", "plugin_path"]

#: the entry-point group of installed packages that register algorithms
ENTRY_POINT_GROUP = "simcollective.algorithms"

#: plugins already imported in this process (spec as resolved -> algorithms it registered)
_LOADED: dict = {}


def plugin_path(spec: str) -> str:
    """``spec`` as a worker process should be given it: a file's absolute path (a sweep's
    workers may run in another directory), a module name as it is."""
    return os.path.abspath(spec) if _is_file(spec) else spec


def _is_file(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or (os.altsep is not None and os.altsep in spec)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _import(spec: str):
    if not _is_file(spec):
        return importlib.import_module(spec)
    if not os.path.isfile(spec):
        raise FileNotFoundError(f"no such file {spec!r}")
    digest = hashlib.sha1(spec.encode()).hexdigest()[:10]
    name = f"simcollective_plugin_{os.path.splitext(os.path.basename(spec))[0]}_{digest}"
    module_spec = importlib.util.spec_from_file_location(name, spec)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_plugin(spec: str, flag: str = "--plugin") -> list:
    """Import one plugin (module name or ``.py`` file) and return the ``(collective, name)``
    keys it registered; a second load of the same plugin is a no-op (the keys of the first).

    Raises
    ------
    UserInputError
        One line naming the plugin and its import error, or saying it registered nothing.
    """
    key = plugin_path(spec)
    if key in _LOADED:
        return _LOADED[key]
    before = set(REGISTRY)
    try:
        _import(key)
    except (Exception, SystemExit) as exc:    # whatever the plugin's own code raises
        raise UserInputError(f"{flag} {spec!r} cannot be loaded: {_one_line(exc)}") from None
    added = sorted(set(REGISTRY) - before)
    if not added:
        raise UserInputError(f"{flag} {spec!r} registers no algorithm: a plugin registers its algorithms "
                             "with @simcollective.algorithms.register")
    _LOADED[key] = added
    return added


def load_plugins(specs, flag: str = "--plugin") -> list:
    """:func:`load_plugin` of each of ``specs`` in order; every key registered."""
    from . import load_all

    load_all()       # the package's algorithms first: a plugin name that clashes is refused
    keys = []
    for spec in specs or ():
        keys += load_plugin(spec, flag)
    return keys


def load_entry_points() -> list:
    """Load every module of the :data:`ENTRY_POINT_GROUP` entry points installed."""
    from importlib.metadata import entry_points

    keys = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name!r} ({ep.value}) of group {ENTRY_POINT_GROUP!r}"
        if where in _LOADED:
            continue
        before = set(REGISTRY)
        try:
            ep.load()
        except (Exception, SystemExit) as exc:
            raise UserInputError(f"{where} cannot be loaded: {_one_line(exc)}") from None
        _LOADED[where] = sorted(set(REGISTRY) - before)
        keys += _LOADED[where]
    return keys
