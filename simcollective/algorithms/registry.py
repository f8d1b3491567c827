"""The algorithm registry: one decorator, one table.

Adding a collective is one new module in ``simcollective/algorithms/`` with a function
decorated by :func:`register`. The CLI's ``--algorithm`` choices, ``simcollective
algorithms`` and the docs are generated from this table.

An algorithm is a generator function run once per rank::

    @register("ring", kind="dense", options=("chunk_size",))
    def ring(comm, x, *, chunk_size=None):
        ...
        return output

``x`` is the rank's input: a NumPy array (or a size-only ``SymbolicArray``) for dense
algorithms, a ``SparseStream`` for sparse ones. The output is one array/stream or a list
of parts whose concatenation, in order, is the result. Keyword parameters named in
``CONTEXT`` (``n``, ``k``, ``dtype``) are filled in by the simulator when the function
accepts them; the user-settable ``options`` are passed only when the user sets them, and
setting an option the algorithm does not declare is an error.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from ..errors import UserInputError

__all__ = ["Algorithm", "register", "ALGORITHMS", "get_algorithm", "OPTION_FLAGS", "CONTEXT"]

#: option name -> CLI flag
OPTION_FLAGS = {
    "group_size": "--group-size",
    "chunk_size": "--chunk-size",
    "allgather": "--allgather",
    "densify": "--densify",
    "resparsify": "--resparsify",
}
#: keyword parameters the simulator fills in from the run itself
CONTEXT = ("n", "k", "dtype")


@dataclass(frozen=True)
class Algorithm:
    """A registered allreduce algorithm."""

    name: str
    kind: str                    # "dense" or "sparse"
    func: Callable
    summary: str
    options: tuple = ()
    exact: bool = True           # False: verified against ``reference``, not the plain sum
    reference: Callable | None = None
    check: Callable | None = None  # check(nranks, **options) raises UserInputError
    params: tuple = field(default=())


ALGORITHMS: dict[str, Algorithm] = {}


def register(name: str, kind: str, options=(), summary: str | None = None, exact: bool = True,
             reference=None, check=None):
    """Class the decorated generator function as allreduce algorithm ``name``."""
    if kind not in ("dense", "sparse"):
        raise ValueError(f"kind must be 'dense' or 'sparse', not {kind!r}")
    for opt in options:
        if opt not in OPTION_FLAGS:
            raise ValueError(f"unknown option {opt!r}; known: {', '.join(OPTION_FLAGS)}")

    def deco(func):
        if name in ALGORITHMS:
            raise ValueError(f"algorithm {name!r} registered twice")
        doc = summary or ((inspect.getdoc(func) or "").strip().splitlines() or [""])[0]
        if not doc:
            raise ValueError(f"algorithm {name!r} needs a docstring or summary= (one line for the CLI)")
        params = tuple(inspect.signature(func).parameters)
        ALGORITHMS[name] = Algorithm(name, kind, func, doc, tuple(options), exact, reference, check, params)
        return func

    return deco


def get_algorithm(name: str) -> Algorithm:
    from . import load_all

    load_all()
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise UserInputError(
            f"unknown algorithm {name!r}; choose from: {', '.join(sorted(ALGORITHMS))}") from None
