"""The run guard: an estimate of a run's messages, events, memory and wall time before it
starts, and a one-line refusal of a run estimated beyond the wall limit unless confirmed.

The estimate comes from the resolved plan alone (no simulation): the exact message count
of the algorithm's ``messages`` hook, and the per-algorithm costs measured by
``python -m benchmarks.guard_costs`` (:mod:`simcollective.guard_table`): wall seconds per
message, events per message, bytes per rank and, with real data, bytes and wall seconds per
byte of data. An algorithm without a measured row uses :data:`DEFAULT_WALL_PER_MESSAGE`.

A run that will take the compiled path (``--engine auto`` or ``compiled`` where it applies,
and an algorithm the table measured recording) is estimated from the compiled path's figure:
its wall seconds per message plus :data:`COMPILED_LOAD_S` for loading the compiled loop
(the SimPy path's figure would overstate it many times: ``direct`` alltoall on 1024 GPUs
runs in about half a minute, where the SimPy path's cost per message, measured with every
flow of the all-to-all in flight at once, gives over twenty minutes).

The cost of a message grows slowly with the ranks (more flows share the network whose rates
each event recomputes): measured at 128 ranks, it is scaled by ``(P / 128) ** 0.2`` above
that (:data:`SCALE_EXPONENT`). Measured: ring allreduce on a fat-tree, size-only, 7.05 us per
message at 256 ranks, 9.19 us at 1024, 11.8 us at 4096 (exponent 0.18); ring on abci, 1M
float32 size-only, 9.8 us at 128 ranks and 14 us at 512 (7.3 s of CPU for 523,264
messages, exponent 0.26); ``sparse-ring-ring`` on 1024 ranks of abci (N = 32M, d = 1/1024),
75 s of CPU for 528,384 messages, 142 us each, where the rule gives about 860 us (its
per-message cost falls as the data per message shrinks; the estimate errs on the long
side). The estimate is an order of magnitude, enough to tell a run of minutes from one of
hours.

The wall limit is :data:`WALL_LIMIT` seconds (10 minutes), ``SIMCOLLECTIVE_WALL_LIMIT``
(seconds) overrides it; :func:`confirm` (the commands' ``--yes``) lifts it for this process
and the worker processes it starts (through ``SIMCOLLECTIVE_YES=1``). The memory guard
(:mod:`simcollective.memory`) refuses what does not fit whatever ``--yes`` says.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import repeat

from .errors import UserInputError
from .units import format_bytes, format_time

__all__ = ["Estimate", "estimate_plan", "expected_messages", "nccl_across_servers", "check_plans_cost",
           "check_run_cost", "confirm", "confirmed", "wall_limit", "WALL_LIMIT", "DEFAULT_WALL_PER_MESSAGE",
           "COMPILED_LOAD_S"]

#: the default wall limit of one run, in seconds
WALL_LIMIT = 600.0
#: wall seconds per message of an algorithm without a measured row (the slowest measured)
DEFAULT_WALL_PER_MESSAGE = 2e-4
#: the rank count the per-message costs were measured at, and the exponent of their growth above it
SCALE_RANKS, SCALE_EXPONENT = 128, 0.2
#: wall seconds a run on the compiled path spends loading numba and the cached compiled loop
COMPILED_LOAD_S = 0.8
_YES = "SIMCOLLECTIVE_YES"


@dataclass(frozen=True)
class Estimate:
    """What a run will cost: ``messages`` (exact when the algorithm declares its count),
    ``events``, peak ``bytes`` of memory and ``wall_s`` seconds."""

    messages: int
    events: int
    bytes: int
    wall_s: float

    def describe(self) -> str:
        return (f"about {self.messages:.3g} messages, {_wall_text(self.wall_s)} of wall time and "
                f"{format_bytes(self.bytes)} of memory")


def _wall_text(seconds: float) -> str:
    """``2.5 h``, ``12 min``, ``40 s``, or ``1.500 ms`` below a second."""
    for unit, scale in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s" if seconds >= 1 else format_time(seconds)


def confirm(yes: bool = True) -> None:
    """``--yes``: run beyond the wall limit (here and in the worker processes started later)."""
    if yes:
        os.environ[_YES] = "1"


def confirmed() -> bool:
    """Whether the wall limit is lifted (:func:`confirm` or ``SIMCOLLECTIVE_YES=1``)."""
    return os.environ.get(_YES, "") == "1"


def wall_limit() -> float:
    """The wall limit in seconds: ``SIMCOLLECTIVE_WALL_LIMIT`` or :data:`WALL_LIMIT`."""
    env = os.environ.get("SIMCOLLECTIVE_WALL_LIMIT")
    if not env:
        return WALL_LIMIT
    try:
        value = float(env)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise UserInputError(f"SIMCOLLECTIVE_WALL_LIMIT={env!r} must be a positive number of seconds")
    return value


def expected_messages(plan) -> int | None:
    """The exact number of messages the run will send, from the algorithm's ``messages``
    hook (see :mod:`simcollective.algorithms.registry`); ``None`` without a hook."""
    hook = plan.algo.messages
    if hook is None:
        return None
    nodes = plan.graph.nodes
    ctx = {"n": plan.n, "dtype": plan.dtype, "k": plan.k, "root": plan.root,
           "servers": [nodes[g].get("server") for g in plan.placement],
           "graph": plan.graph, "placement": plan.placement, "profile": plan.profile,
           "sizes": getattr(plan.coll, "counts", None), "combine": getattr(plan.coll, "combine", False)}
    return int(hook(plan.P, **ctx, **plan.options))


def _messages(plan) -> int:
    """The hook's exact count; without a hook, a ring's ``2 P (P - 1)`` as an order of magnitude."""
    try:
        count = expected_messages(plan)
    except Exception:       # a hook that cannot count this plan: fall back, never fail the run here
        count = None
    return int(count) if count is not None else 2 * plan.P * max(1, plan.P - 1)


def estimate_plan(plan, compiled: bool = False) -> Estimate:
    """The :class:`Estimate` of a resolved :class:`~simcollective.resolve.Plan`; ``compiled``:
    the run will try the compiled path (the algorithm's compiled figure is used if it has one)."""
    from .guard_table import COSTS
    from .memory import compiled_bytes, estimate_run_bytes, sparse_data_bytes

    key = (plan.algo.collective, plan.algo.name)
    row = COSTS.get(key)
    messages = _messages(plan)
    itemsize = plan.dtype.itemsize
    if plan.algo.kind == "sparse":
        mode, data = "sparse", sparse_data_bytes(plan.P, plan.n, itemsize, plan.k)
    else:
        mode = "symbolic" if plan.mode == "symbolic" else "full"
        data = 0 if mode == "symbolic" else plan.P * plan.n * itemsize
    per_msg, fixed = DEFAULT_WALL_PER_MESSAGE if row is None else row["wall_per_message"], 0.0
    records = compiled and row is not None and row.get("compiled_wall_per_message") is not None
    if records:
        per_msg, fixed = row["compiled_wall_per_message"], COMPILED_LOAD_S
    per_msg *= max(1.0, plan.P / SCALE_RANKS) ** SCALE_EXPONENT
    per_byte = 2e-8 if row is None else row["wall_per_data_byte"]
    events = messages * (3.0 if row is None else row["events_per_message"])
    memory = estimate_run_bytes(plan.P, plan.n, itemsize, mode, plan.k, plan.graph.number_of_nodes(), key)
    if records:    # the recording and the loop's arrays on top
        memory += compiled_bytes(messages, nccl_across_servers(plan))
    return Estimate(messages, int(events), memory, fixed + messages * per_msg + data * per_byte)


def nccl_across_servers(plan) -> bool:
    """Whether ``plan`` runs one of NCCL's algorithms over more than one server (on the
    compiled path they enter the array store: :data:`~simcollective.memory.COMPILED_BYTES_PER_MESSAGE`
    a message)."""
    servers = {plan.graph.nodes[g].get("server") for g in plan.placement}
    return plan.algo.name.startswith("nccl") and len(servers) > 1


def check_run_cost(plan, compiled: bool = False) -> Estimate:
    """Refuse in one line a run estimated beyond the wall limit (unless :func:`confirmed`);
    return the estimate (``compiled``: as :func:`estimate_plan`)."""
    est = estimate_plan(plan, compiled)
    limit = wall_limit()
    if est.wall_s > limit and not confirmed():
        raise UserInputError(f"this run ({plan.P} ranks, {plan.algo.name} {plan.algo.collective}) needs "
                             f"{est.describe()}, beyond the {_wall_text(limit)} limit; give --yes to run it "
                             f"anyway, or fewer ranks or a smaller size")
    return est


def check_plans_cost(plans, what: str, hint: str, weights=None, compiled=None) -> None:
    """Refuse in one line several runs (a bench's sizes, a job's steps) whose estimates add up
    beyond the wall limit (unless :func:`confirmed`). ``weights``: how many times each plan
    runs (a job step's repeats); ``what``: the runs, for the message; ``hint``: what to cut;
    ``compiled``: per plan, whether it will try the compiled path (:func:`estimate_plan`).
    ``plans`` (and ``compiled``) may be iterators made as they are read: they are read only
    until the estimates pass the limit (a bench's sizes, largest first, are refused after
    the few that pass it, not after resolving every size)."""
    if confirmed():
        return
    limit, total, worst = wall_limit(), 0.0, None
    runs = zip(plans, weights or repeat(1), compiled or repeat(False))
    for plan, weight, tries in runs:
        estimate = estimate_plan(plan, tries)
        total += estimate.wall_s * weight
        if worst is None or estimate.wall_s * weight > worst[0]:
            worst = (estimate.wall_s * weight, plan.P, estimate)
        if total > limit:
            more = next(runs, None) is not None   # (the rest not estimated: the total is a floor)
            raise UserInputError(f"{what} need {'more than' if more else 'about'} {_wall_text(total)} of wall "
                                 f"time together (the longest{' so far' if more else ''}, on {worst[1]} ranks: "
                                 f"{worst[2].describe()}), beyond the {_wall_text(limit)} limit; give --yes to "
                                 f"run them anyway, or {hint}")
