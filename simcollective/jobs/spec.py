"""A job description: the machine, its communicators and the steps (collectives) to run.

The same table from a TOML file (:func:`load_job`) or from Python (:func:`job_from_dict`);
every bad value is a one-line :class:`~simcollective.errors.UserInputError` before any
simulation. The schema (``docs`` and ``simcollective job --help`` say the same)::

    topology = "dgx-h100"        # machine: topology (+ nodes, topology_opts) or topology_file
    nodes = 2
    profile = "ideal"            # profile, placement, routing, seed: as for `simcollective run`
    placement = "auto"

    [communicators.tp]           # a name -> a rule and a group size
    rule = "tp"                  # tp | dp | pp | ep (see runtime.communicators) | split
    size = 8                     # ranks per group (must divide the ranks)
    # stride = 1                 # optional: distance between the ranks of a group
    # rule = "split" takes colour = [...] (one per rank; -1: none) and key = [...] instead

    [[steps]]
    name = "grad"                # unique
    collective = "allreduce"     # default allreduce
    communicator = "tp"          # runs on every group of the communicator at once
    bytes = 16777216             # or elements = "4M" (the count as nccl-tests/NCCL take it)
    algorithm = "ring"
    dtype = "float32"            # default float32
    options = {}                 # algorithm options (chunk_size, group_size, ...)
    after = ["other_step"]       # dependencies (default none: overlaps the others)
    compute = 0.002              # seconds of compute before it (after its dependencies)
    repeat = 4                   # layers / micro-batches: run one after the other

Repeat ``i`` of a step waits for repeat ``i`` of each step it names in ``after`` when both
repeat the same number of times, else for that step's last repeat; repeat ``i`` also waits
for repeat ``i - 1`` of its own step. Dependencies are per rank (see
:mod:`simcollective.runtime.tasks`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import UserInputError
from ..parsing import load_toml

__all__ = ["JobSpec", "CommSpec", "StepSpec", "load_job", "job_from_dict", "MACHINE_KEYS", "STEP_KEYS",
           "COMM_KEYS", "find_cycle"]

#: top-level keys besides ``communicators`` and ``steps`` (their defaults: ``RunConfig``'s)
MACHINE_KEYS = ("topology", "nodes", "topology_opts", "topology_file", "profile", "placement", "routing", "seed",
                "gpus", "verify")
STEP_KEYS = ("name", "collective", "communicator", "bytes", "elements", "algorithm", "dtype", "options", "after",
             "compute", "repeat", "root")
COMM_KEYS = ("rule", "size", "stride", "colour", "color", "key")


@dataclass(frozen=True)
class CommSpec:
    """A communicator: ``rule`` and ``size`` (or, for ``split``, ``colour``/``key`` lists)."""

    name: str
    rule: str
    size: int | None = None
    stride: int | None = None
    colour: tuple | None = None
    key: tuple | None = None


@dataclass(frozen=True)
class StepSpec:
    """One step: a collective on every group of a communicator (see the module docstring)."""

    name: str
    communicator: str
    algorithm: str
    collective: str = "allreduce"
    bytes: int | None = None
    elements: int | str | None = None
    dtype: str = "float32"
    options: dict = field(default_factory=dict)
    after: tuple = ()
    compute: float = 0.0
    repeat: int = 1
    root: int | None = None


@dataclass(frozen=True)
class JobSpec:
    """A whole job: ``machine`` (RunConfig fields), communicators by name, steps in
    dependency order (every step after the steps it names)."""

    machine: dict
    communicators: dict
    steps: tuple

    def step(self, name: str) -> StepSpec:
        return next(s for s in self.steps if s.name == name)


def _unknown(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise UserInputError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")


def _comm(name: str, table) -> CommSpec:
    where = f"communicator {name!r}"
    if not isinstance(table, dict):
        raise UserInputError(f"{where} must be a table with rule and size")
    _unknown(table, COMM_KEYS, where)
    rule = table.get("rule")
    if rule == "split":
        colour = table.get("colour", table.get("color"))
        if not isinstance(colour, list):
            raise UserInputError(f"{where}: rule 'split' needs colour = [one integer per rank, -1 for none]")
        key = table.get("key")
        if key is not None and not isinstance(key, list):
            raise UserInputError(f"{where}: key {key!r} must be a list of one integer per rank")
        colour = tuple(None if c == -1 else c for c in colour)
        return CommSpec(name, rule, colour=colour, key=None if key is None else tuple(key))
    if "size" not in table:
        raise UserInputError(f"{where}: give size (ranks per group) with rule {rule!r}")
    return CommSpec(name, rule, size=table["size"], stride=table.get("stride"))


def _number(value, what: str, minimum: float, integer: bool = False):
    ok = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    if not ok or (not integer and not math.isfinite(value)) or value < minimum:
        kind = "an integer" if integer else "a finite number"
        raise UserInputError(f"{what} {value!r} must be {kind} >= {minimum}")
    return value


def _step(table, index: int) -> StepSpec:
    if not isinstance(table, dict):
        raise UserInputError(f"steps[{index}] must be a table")
    name = table.get("name")
    if not isinstance(name, str) or not name:
        raise UserInputError(f"steps[{index}]: give name = \"...\" (a unique step name)")
    where = f"step {name!r}"
    _unknown(table, STEP_KEYS, where)
    for key in ("communicator", "algorithm"):
        if not isinstance(table.get(key), str):
            raise UserInputError(f"{where}: give {key} = \"...\"")
    if ("bytes" in table) == ("elements" in table):
        raise UserInputError(f"{where}: give the size as bytes = B or elements = N (one of them)")
    after = table.get("after", [])
    if isinstance(after, str):
        after = [after]
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        raise UserInputError(f"{where}: after {after!r} must be a list of step names")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise UserInputError(f"{where}: options {options!r} must be a table")
    return StepSpec(
        name=name, communicator=table["communicator"], algorithm=table["algorithm"],
        collective=table.get("collective", "allreduce"), bytes=table.get("bytes"), elements=table.get("elements"),
        dtype=table.get("dtype", "float32"), options=dict(options), after=tuple(after),
        compute=float(_number(table.get("compute", 0.0), f"{where}: compute", 0.0)),
        repeat=_number(table.get("repeat", 1), f"{where}: repeat", 1, integer=True), root=table.get("root"))


def find_cycle(after: dict) -> list | None:
    """A dependency cycle ``[a, b, ..., a]`` of ``after`` (name -> names it waits for), or None."""
    state: dict = {}
    for start in after:
        if start in state:
            continue
        stack = [(start, iter(after[start]))]
        path = [start]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(after[nxt])))
                path.append(nxt)
    return None


def _order(steps: list) -> tuple:
    """The steps in dependency order (each after those it names), checked: unknown names and cycles."""
    names = [s.name for s in steps]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UserInputError(f"step name {dup!r} appears twice; step names must be unique")
    for s in steps:
        for a in s.after:
            if a not in names:
                raise UserInputError(f"step {s.name!r}: after names unknown step {a!r}; steps: {', '.join(names)}")
    cycle = find_cycle({s.name: s.after for s in steps})
    if cycle is not None:
        raise UserInputError(f"dependency cycle: {' -> '.join(cycle)}; steps may only wait for steps that do not "
                             "wait for them")
    done: list = []
    while len(done) < len(steps):
        for s in steps:
            if s.name not in done and all(a in done for a in s.after):
                done.append(s.name)
    return tuple(next(s for s in steps if s.name == n) for n in done)


def job_from_dict(table: dict, where: str = "job") -> JobSpec:
    """The :class:`JobSpec` of a job table (as TOML gives it); checked, before any simulation."""
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: a job is a table of machine keys, [communicators.NAME] and [[steps]]")
    _unknown(table, (*MACHINE_KEYS, "communicators", "steps"), where)
    comms = table.get("communicators")
    if not isinstance(comms, dict) or not comms:
        raise UserInputError(f"{where}: give at least one communicator ([communicators.NAME] with rule and size)")
    communicators = {name: _comm(name, t) for name, t in comms.items()}
    raw = table.get("steps")
    if not isinstance(raw, list) or not raw:
        raise UserInputError(f"{where}: give at least one step ([[steps]] with name, communicator, algorithm, size)")
    steps = [_step(t, i) for i, t in enumerate(raw)]
    for s in steps:
        if s.communicator not in communicators:
            raise UserInputError(f"step {s.name!r}: unknown communicator {s.communicator!r}; "
                                 f"communicators: {', '.join(communicators)}")
    machine = {k: table[k] for k in MACHINE_KEYS if k in table}
    return JobSpec(machine, communicators, _order(steps))


def load_job(path) -> JobSpec:
    """The :class:`JobSpec` of a TOML file."""
    table = load_toml(path, "job file")      # size and nesting checked before parsing
    return job_from_dict(table, f"job file {str(path)!r}")
