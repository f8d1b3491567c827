"""The algorithm registry: one decorator, one table keyed by (collective, algorithm).

Adding an algorithm is one new module in ``simcollective/algorithms/`` with a function
decorated by :func:`register`. The CLI's ``--algorithm`` choices, ``simcollective
algorithms`` and the docs are generated from this table.

An algorithm is a generator function run once per rank::

    @register("ring", kind="dense", collective="allgather", options=("chunk_size",))
    def ring(comm, x, *, chunk_size=None):
        ...
        return output

``collective`` defaults to ``"allreduce"`` (so ``@register(name, kind=...)`` still
registers an allreduce). ``x`` is the rank's input: a NumPy array (or a size-only
``SymbolicArray``) for dense algorithms, a ``SparseStream`` for sparse ones. The output
is one array/stream or a list of parts whose concatenation, in order, is the result
(what the result is, per collective, is defined in :mod:`simcollective.collectives`).
Keyword parameters named in ``CONTEXT`` (``n``, ``k``, ``dtype``, ``root``; for alltoallv
``sizes``, the P x P counts in elements, and ``combine``, whether the transpose follows) are filled in
by the simulator when the function accepts them; the user-settable ``options`` are passed
only when the user sets them, and setting an option the algorithm does not declare is an
error. Options are validated by name (:data:`OPTION_CHECKS`), once, for every algorithm.

``messages`` (optional) is the exact number of point-to-point messages a run will send,
``messages(P, **ctx) -> int``, called with ``n``, ``dtype``, ``k``, ``root`` (as above),
``servers`` (each rank's server id, in rank order), ``graph``, ``placement`` and ``profile``
(for plans such as NCCL's) and the options in effect (including
defaults the simulator fills in, such as ``group_size``); a hook takes what it needs and
``**_`` for the rest. ``run`` counts its progress bar against it (no hook: a count without
a total). Tests assert every hook against the ``messages`` of real runs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from ..errors import UserInputError

__all__ = ["Algorithm", "register", "ALGORITHMS", "REGISTRY", "COLLECTIVES", "get_algorithm",
           "algorithms_for", "OPTION_FLAGS", "OPTION_CHECKS", "CONTEXT", "check_options"]

#: the collectives, in the order they are listed
COLLECTIVES = ("allreduce", "allgather", "reduce-scatter", "broadcast", "reduce", "alltoall", "alltoallv")

#: option name -> CLI flag
OPTION_FLAGS = {
    "group_size": "--group-size",
    "chunk_size": "--chunk-size",
    "allgather": "--allgather",
    "densify": "--densify",
    "resparsify": "--resparsify",
    "protocol": "--protocol",
    "channels": "--channels",
}
#: keyword parameters the simulator fills in from the run itself
CONTEXT = ("n", "k", "dtype", "root", "sizes", "combine")


# -- option checks, by option name (one place for every algorithm) ---------------------------
def _positive_int(flag: str, value, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserInputError(f"{flag} {value!r} must be a positive integer{what}")


def _check_group_size(value, nranks: int) -> None:
    _positive_int("--group-size", value, "")
    if nranks % value:
        raise UserInputError(f"--group-size {value} does not divide the {nranks} ranks "
                             f"(choose a divisor of {nranks})")


def _check_chunk_size(value, nranks: int) -> None:
    _positive_int("--chunk-size", value, " number of bytes")


def _check_allgather(value, nranks: int) -> None:
    from ..patterns.doubling import ALLGATHERS

    if value not in ALLGATHERS:
        raise UserInputError(f"--allgather {value!r} must be one of: {', '.join(ALLGATHERS)}")


def _check_densify(value, nranks: int) -> None:
    from ..data.sparse import DENSIFY_POLICIES

    # "study": the study's message sizing; algorithms without such a rule
    # refuse it in their own requirement check (patterns.sparse.no_study_sizing)
    allowed = (*DENSIFY_POLICIES, "study")
    if value not in allowed:
        raise UserInputError(f"--densify {value!r} must be one of: {', '.join(allowed)}")


def _check_bool(flag: str):
    def check(value, nranks: int) -> None:
        if not isinstance(value, bool):
            raise UserInputError(f"{flag} {value!r} must be true or false")
    return check


#: option name -> check(value, nranks) raising UserInputError (options without an entry
#: are passed through unchecked; add one with the option)
OPTION_CHECKS: dict[str, Callable] = {
    "group_size": _check_group_size,
    "chunk_size": _check_chunk_size,
    "allgather": _check_allgather,
    "densify": _check_densify,
    "resparsify": _check_bool("--resparsify"),
}


@dataclass(frozen=True)
class Algorithm:
    """A registered algorithm of one collective."""

    name: str
    kind: str                    # "dense" or "sparse"
    func: Callable
    summary: str
    options: tuple = ()
    exact: bool = True           # False: verified against ``reference``, not the plain sum
    reference: Callable | None = None
    requires: Callable | None = None  # requires(nranks, **options) raises UserInputError
    params: tuple = field(default=())
    collective: str = "allreduce"
    messages: Callable | None = None  # messages(P, **ctx_and_options) -> exact message count

    def check(self, nranks: int, **options) -> None:
        """Validate the options set (by name, see :data:`OPTION_CHECKS`) and the
        algorithm's own requirements on the rank count; raise UserInputError."""
        for key, value in options.items():
            if value is not None and key in OPTION_CHECKS:
                OPTION_CHECKS[key](value, nranks)
        if self.requires is not None:
            self.requires(nranks, **options)

    @property
    def label(self) -> str:
        """``name`` for allreduce, ``collective/name`` otherwise."""
        return self.name if self.collective == "allreduce" else f"{self.collective}/{self.name}"


#: (collective, name) -> Algorithm
REGISTRY: dict[tuple[str, str], Algorithm] = {}


class _AllreduceTable(dict):
    """name -> allreduce Algorithm: ``REGISTRY``'s allreduce entries under their old keys
    (removing one here removes it from ``REGISTRY`` too)."""

    def __delitem__(self, name):
        super().__delitem__(name)
        REGISTRY.pop(("allreduce", name), None)

    def pop(self, name, *default):
        REGISTRY.pop(("allreduce", name), None)
        return super().pop(name, *default)


#: name -> Algorithm for the allreduce algorithms (the table before collectives existed)
ALGORITHMS: dict[str, Algorithm] = _AllreduceTable()


def register(name: str, kind: str, options=(), summary: str | None = None, exact: bool = True,
             reference=None, check=None, collective: str = "allreduce", messages=None):
    """Class the decorated generator function as algorithm ``name`` of ``collective``.

    ``check`` (optional) is a requirement the algorithm puts on the rank count (e.g. a
    power of two), called as ``check(nranks, **options)``; options themselves are
    validated by name for every algorithm, so an algorithm does not check them again.
    ``messages`` (optional): ``messages(P, **ctx_and_options)``, the exact number of
    messages the algorithm sends (see the module docstring).
    """
    if kind not in ("dense", "sparse"):
        raise ValueError(f"kind must be 'dense' or 'sparse', not {kind!r}")
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")
    for opt in options:
        if opt not in OPTION_FLAGS:
            raise ValueError(f"unknown option {opt!r}; known: {', '.join(OPTION_FLAGS)}")

    def deco(func):
        if (collective, name) in REGISTRY:
            raise ValueError(f"{collective} algorithm {name!r} registered twice")
        doc = summary or ((inspect.getdoc(func) or "").strip().splitlines() or [""])[0]
        if not doc:
            raise ValueError(f"algorithm {name!r} needs a docstring or summary= (one line for the CLI)")
        params = tuple(inspect.signature(func).parameters)
        algo = Algorithm(name, kind, func, doc, tuple(options), exact, reference, check, params, collective, messages)
        REGISTRY[(collective, name)] = algo
        if collective == "allreduce":
            ALGORITHMS[name] = algo
        return func

    return deco


def algorithms_for(collective: str) -> dict[str, Algorithm]:
    """name -> Algorithm of one collective (every module loaded)."""
    from . import load_all

    load_all()
    check_collective(collective)
    return {name: a for (c, name), a in sorted(REGISTRY.items()) if c == collective}


def check_collective(collective: str) -> str:
    if collective not in COLLECTIVES:
        raise UserInputError(f"unknown collective {collective!r}; choose from: {', '.join(COLLECTIVES)}")
    return collective


def get_algorithm(name: str, collective: str = "allreduce") -> Algorithm:
    """The algorithm ``name`` of ``collective``; the error lists those that exist for it
    (and, if ``name`` exists for other collectives only, says which).

    The package's module of that name (``collective/name.py``, ``-`` as ``_``) is imported
    first, alone; every module (and the entry points' plugins) only if it does not
    register ``name``: a run imports its own algorithm, not the others."""
    from . import load_all, load_module_of

    check_collective(collective)
    algo = REGISTRY.get((collective, name))
    if algo is None:
        load_module_of(collective, name)
        algo = REGISTRY.get((collective, name))
    if algo is None:
        load_all()
        algo = REGISTRY.get((collective, name))
    if algo is not None:
        return algo
    mine = sorted(n for c, n in REGISTRY if c == collective)
    others = sorted(c for c, n in REGISTRY if n == name)
    hint = f" ('{name}' implements: {', '.join(others)})" if others else ""
    raise UserInputError(
        f"unknown algorithm {name!r} for {collective}{hint}; {collective} algorithms: {', '.join(mine) or 'none'}")


def check_options(algo: Algorithm, options: dict, nranks: int) -> dict:
    """The options set by the user (``None`` = not set), checked: known names, declared by
    ``algo``, valid values. Returns them without the unset ones."""
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        if key not in OPTION_FLAGS:
            raise UserInputError(f"unknown algorithm option {key!r}; known: {', '.join(OPTION_FLAGS)}")
        if key not in algo.options:
            allowed = ", ".join(OPTION_FLAGS[o] for o in algo.options) or "none"
            raise UserInputError(
                f"{OPTION_FLAGS[key]} is not used by algorithm '{algo.name}'"
                + ("" if algo.collective == "allreduce" else f" of {algo.collective}")
                + f" (its options: {allowed})")
        out[key] = value
    algo.check(nranks, **out)
    return out
