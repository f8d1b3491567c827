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
    # alltoallv only, instead of bytes/elements: sizes = [[...], ...] (a P x P matrix of
    # bytes for the communicator's group, or the path of a .npy/.csv/.json file) or
    # moe = "tokens=...,hidden=...,topk=..." (a seeded gate: dispatch, then combine)
    background = false           # true: another job's step (left out of the undisturbed run)

    [[stragglers]], [[faults]], [[background]]: see :mod:`.disturbances`.

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
from .disturbances import DISTURBANCE_KEYS, parse_disturbances

__all__ = ["JobSpec", "CommSpec", "StepSpec", "load_job", "job_from_dict", "MACHINE_KEYS", "STEP_KEYS",
           "COMM_KEYS", "find_cycle"]

#: top-level keys besides ``communicators`` and ``steps`` (their defaults: ``RunConfig``'s)
MACHINE_KEYS = ("topology", "nodes", "topology_opts", "topology_file", "profile", "placement", "routing", "seed",
                "gpus", "verify")
STEP_KEYS = ("name", "collective", "communicator", "bytes", "elements", "algorithm", "dtype", "options", "after",
             "compute", "repeat", "root", "background", "sizes", "moe")
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
    background: bool = False     # another job's step: left out of the undisturbed run
    sizes: object = None        # alltoallv: a matrix (rows as a tuple of tuples) or a path
    moe: str | None = None      # alltoallv: a MoE gate


@dataclass(frozen=True)
class JobSpec:
    """A whole job: ``machine`` (RunConfig fields), communicators by name, steps in
    dependency order (every step after the steps it names)."""

    machine: dict
    communicators: dict
    steps: tuple
    disturb: dict = field(default_factory=lambda: parse_disturbances({}))   # see .disturbances

    @property
    def disturbed(self) -> bool:
        """Whether the job has stragglers, faults, background traffic or another job's steps."""
        return any(self.disturb.values()) or any(s.background for s in self.steps)

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
    sized = [k for k in ("bytes", "elements", "sizes", "moe") if k in table]
    if len(sized) != 1:
        raise UserInputError(f"{where}: give the size as bytes = B or elements = N (one of them)"
                             + ("; for alltoallv, or sizes = [[...]] or moe = \"...\"" if sized[2:] or
                                table.get("collective") == "alltoallv" else "")
                             + (f" (given: {', '.join(sized)})" if sized else ""))
    sizes = table.get("sizes")
    if isinstance(sizes, list):
        sizes = tuple(tuple(row) if isinstance(row, list) else row for row in sizes)
    after = table.get("after", [])
    if isinstance(after, str):
        after = [after]
    if not isinstance(after, list) or not all(isinstance(a, str) for a in after):
        raise UserInputError(f"{where}: after {after!r} must be a list of step names")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise UserInputError(f"{where}: options {options!r} must be a table")
    if not isinstance(table.get("background", False), bool):
        raise UserInputError(f"{where}: background {table['background']!r} must be true or false")
    return StepSpec(
        name=name, communicator=table["communicator"], algorithm=table["algorithm"],
        collective=table.get("collective", "allreduce"), bytes=table.get("bytes"), elements=table.get("elements"),
        dtype=table.get("dtype", "float32"), options=dict(options), after=tuple(after),
        compute=float(_number(table.get("compute", 0.0), f"{where}: compute", 0.0)),
        repeat=_number(table.get("repeat", 1), f"{where}: repeat", 1, integer=True), root=table.get("root"),
        background=table.get("background", False), sizes=sizes, moe=table.get("moe"))


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
    _unknown(table, (*MACHINE_KEYS, "communicators", "steps", *DISTURBANCE_KEYS), where)
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
    ordered = _order(steps)
    other = {s.name for s in ordered if s.background}
    for s in ordered:
        bg = [a for a in s.after if not s.background and a in other]
        if bg:
            raise UserInputError(f"step {s.name!r}: waits for {bg[0]!r}, another job's step (background = true); "
                                 "a job's steps may wait only for its own")
    return JobSpec(machine, communicators, ordered, parse_disturbances(table))


def load_job(path) -> JobSpec:
    """The :class:`JobSpec` of a TOML file."""
    table = load_toml(path, "job file")      # size and nesting checked before parsing
    return job_from_dict(table, f"job file {str(path)!r}")
