"""What a job's disturbances cost: the same job run without them (:func:`undisturbed`), and
with each one alone (:func:`each_cost`, when there are several).

A disturbance is one straggler, one fault, one ``[[background]]`` entry, or the steps of
other jobs (``background = true``) together. The cost of one is the makespan with it alone
minus the undisturbed makespan; the costs of several need not add up to the cost of all
(they may overlap, or compound on a shared link).
"""

from __future__ import annotations

import dataclasses

from ..runtime.tasks import Disturbances, run_tasks
from .disturbances import parse_disturbances
from .spec import JobSpec

__all__ = ["undisturbed", "each_cost"]


def _run(job, build, disturb: Disturbances, background: tuple, other: bool):
    """The tasks of ``job`` (a :class:`~simcollective.jobs.runner.PreparedJob`; ``build``:
    prepared job -> its tasks) run with only ``disturb``, ``background`` and (``other``) the
    other jobs' steps; ``{(step, repeat): (start, end)}`` of its own steps and the makespan."""
    spec = job.spec
    steps = tuple(s for s in spec.steps if other or not s.background)
    table = dict(parse_disturbances({}), background=background)
    variant = dataclasses.replace(job, spec=JobSpec(spec.machine, spec.communicators, steps, table),
                                  disturb=disturb)
    tasks = build(variant)
    result = run_tasks(job.graph, job.placement, tasks, job.profile, job.base.routing, disturb)
    mine = {s.name for s in spec.steps if not s.background}
    spans: dict = {}
    for t in result.tasks:
        if len(t.key) == 3 and t.key[0] in mine:
            key = t.key[:2]
            a, b = spans.get(key, (t.start, t.end))
            spans[key] = (min(a, t.start), max(b, t.end))
    return spans, max((b for _, b in spans.values()), default=0.0)


def undisturbed(job, build) -> dict:
    """The job without its disturbances (stragglers, faults, background traffic and the
    steps of other jobs): ``{"makespan_s", "steps": {(step, repeat): seconds}}``."""
    spans, makespan = _run(job, build, Disturbances(), (), False)
    return {"makespan_s": makespan, "steps": {k: b - a for k, (a, b) in spans.items()}}


def _each(job) -> list:
    """(label, Disturbances, background, other) of every disturbance alone."""
    d, spec = job.disturb, job.spec
    out = []
    for r in sorted(set(d.late) | set(d.slow)):
        label = " and ".join(x for x in (f"rank {r} late" if r in d.late else "",
                                        f"rank {r} slow" if r in d.slow else "") if x)
        one = Disturbances(late={r: d.late[r]} if r in d.late else {}, slow={r: d.slow[r]} if r in d.slow else {})
        out.append((label, one, (), False))
    out += [(f.label, Disturbances(faults=(f,)), (), False) for f in d.faults]
    out += [(f"background {b.name}", Disturbances(), (b,), False) for b in spec.disturb["background"]]
    if any(s.background for s in spec.steps):
        out.append(("another job's steps", Disturbances(), (), True))
    return out


def each_cost(job, build) -> list:
    """``[{"disturbance", "makespan_s", "cost_s"}]``: each disturbance alone (empty with
    only one: the job's own cost is its cost)."""
    each = _each(job)
    if len(each) < 2:
        return []
    base = job.undisturbed["makespan_s"]
    out = []
    for label, disturb, background, other in each:
        _, makespan = _run(job, build, disturb, background, other)
        out.append({"disturbance": label, "makespan_s": makespan, "cost_s": makespan - base})
    return out
