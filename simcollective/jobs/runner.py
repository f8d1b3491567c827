"""Running a job: every step's collective on every group of its communicator, on one
machine at once (:func:`run_job`), each verified against its own NumPy reference and
timed against the same collective alone on the same machine.

The steps: :func:`prepare` (machine, groups, one resolved :class:`~simcollective.resolve.Plan`
per step and group: every bad input fails here, before any simulation), then
:func:`~simcollective.runtime.tasks.run_tasks` on the tasks (step x repeat x group), then
the alone runs (:func:`simcollective.simulate.run` of each step's collective on the GPUs
of its group, nothing else on the machine; once per distinct collective and GPU set; dense
ones size-only: the same simulated time without the data).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

from ..errors import UserInputError
from ..network.faults import LinkFault
from ..network.routing import Router
from ..placement import resolve_placement
from ..profiles import load_profile
from ..resolve import resolve
from ..run_config import RunConfig, build_graph, routing_of
from ..runtime.communicators import rule_groups, split
from ..runtime.tasks import Disturbances, Task, run_tasks
from ..simulate import make_inputs, run, sources, verify
from .costs import each_cost, undisturbed
from .disturbances import check_disturbances, straggler_delays
from .spec import JobSpec
from .traffic import traffic_task

__all__ = ["PreparedJob", "prepare", "run_job", "step_config", "background_tasks", "machine_links", "build_tasks"]


@dataclass
class PreparedJob:
    """A job checked and resolved: the machine, each communicator's groups (tuples of world
    ranks), each step's plan per group."""

    spec: JobSpec
    base: RunConfig
    graph: object
    placement: list
    profile: object
    groups: dict                 # communicator name -> [tuple of world ranks]
    plans: dict                  # (step name, group index) -> Plan
    alone: dict = field(default_factory=dict)
    disturb: Disturbances = field(default_factory=Disturbances)
    undisturbed: dict | None = None   # the run without disturbances (see run_job)
    background: list = field(default_factory=list)   # per [[background]]: its summary


def _groups(spec, nranks: int) -> dict:
    out = {}
    for name, c in spec.communicators.items():
        where = f"communicator {name!r}"
        if c.rule == "split":
            if len(c.colour) != nranks:
                raise UserInputError(f"{where}: {len(c.colour)} colours for {nranks} ranks; give one per rank")
            groups = split(c.colour, c.key)
            if not groups:
                raise UserInputError(f"{where}: every colour is -1 (no rank takes part)")
        else:
            groups = rule_groups(c.rule, c.size, nranks, c.stride, where)
        out[name] = groups
    return out


def step_config(base: RunConfig, step, gpus: list) -> RunConfig:
    """The :class:`RunConfig` of one step's collective alone on the GPUs ``gpus``."""
    return RunConfig(
        topology=base.topology, nodes=base.nodes, topology_opts=base.topology_opts, topology_file=base.topology_file,
        profile=base.profile, routing=base.routing, seed=base.seed, verify=base.verify, placement=list(gpus),
        algorithm=step.algorithm, collective=step.collective, dtype=step.dtype, root=step.root,
        options=dict(step.options), bytes=step.bytes, elements=step.elements if step.elements is not None else 2**20,
        sizes=step.sizes, moe=step.moe)


def prepare(spec: JobSpec) -> PreparedJob:
    """Check and resolve everything a job will simulate (one-line errors, before any simulation)."""
    base = RunConfig(**spec.machine)
    graph = build_graph(base)
    base.routing = routing_of(base.routing, graph)
    placement = resolve_placement(graph, base.placement, base.gpus)
    profile = load_profile(base.profile)
    groups = _groups(spec, len(placement))
    plans = {}
    for step in spec.steps:
        for g, members in enumerate(groups[step.communicator]):
            try:
                plans[(step.name, g)] = resolve(step_config(base, step, [placement[r] for r in members]), graph)
            except UserInputError as exc:
                raise UserInputError(f"step {step.name!r} on {step.communicator} group {g}: {exc}") from None
    from ..guard import check_plans_cost

    repeats = {s.name: s.repeat for s in spec.steps}
    check_plans_cost(list(plans.values()), f"the job's {len(plans)} collectives", "fewer repeats or smaller sizes",
                     [repeats[name] for name, _g in plans])
    dist = check_disturbances(spec.disturb, graph, placement, base.routing)
    faults = tuple(LinkFault(f.at, edges, f.capacity, f.label) for f, edges in zip(spec.disturb["faults"], dist["edges"]))
    stragglers = spec.disturb["stragglers"]
    disturb = Disturbances(late=straggler_delays(stragglers, base.seed),
                           slow={s.rank: s.slow for s in stragglers if s.slow != 1.0}, faults=faults)
    return PreparedJob(spec, base, graph, placement, profile, groups, plans, disturb=disturb)


def machine_links(spec: JobSpec) -> str:
    """The links of a job's machine, one a line: ``u->v  type  capacity`` (bytes/s)."""
    graph = build_graph(RunConfig(**spec.machine))
    lines = [f"{u}->{v}  {a.get('link_type', 'link')}  {float(a['bandwidth']):.6g} B/s"
             for u, v, a in graph.edges(data=True)]
    return "\n".join(lines)


def background_tasks(job: PreparedJob) -> list:
    """The tasks of the job's ``[[background]]`` traffic (their summaries in ``job.background``)."""
    router = Router(job.profile.network.effective_graph(job.graph), job.base.routing)
    tasks = []
    job.background = []
    for b in job.spec.disturb["background"]:
        members = b.ranks or tuple(range(len(job.placement)))
        task, messages = traffic_task(b, members, [job.placement[r] for r in members], router, job.base.seed)
        tasks.append(task)
        job.background.append({"name": b.name, "pattern": b.pattern, "ranks": list(members), "bytes": b.bytes,
                               "load": b.load, "start_s": b.start, "end_s": b.end, "messages": messages})
    return tasks


def _barriers(spec: JobSpec, step, rep: int, ngroups: dict) -> tuple:
    """The barriers (tuples of task keys) repeat ``rep`` of ``step`` waits for."""
    out = []
    for name in step.after:
        dep = spec.step(name)
        j = rep if dep.repeat == step.repeat else dep.repeat - 1
        out.append(tuple((name, j, g) for g in range(ngroups[dep.communicator])))
    return tuple(out)


class _Data:
    """Each plan's inputs and references, made once and shared by every collective over the
    same inputs (the repeats of a step, and its groups): payloads are immutable."""

    def __init__(self):
        self.inputs: dict = {}
        self.refs: dict = {}

    def key(self, plan):
        if plan.algo.kind == "sparse":
            return ("sparse", id(plan))
        return (plan.mode, plan.n, plan.dtype.str, plan.config.seed, plan.P)

    def inputs_of(self, plan):
        key = self.key(plan)
        if key not in self.inputs:
            make, memo = make_inputs(plan), {}

            def inputs(r):
                if r not in memo:
                    memo[r] = make(r)
                return memo[r]
            self.inputs[key] = inputs
        return self.inputs[key]

    def verifier(self, plan, record: dict):
        key = self.key(plan)

        def on_done(task):
            if key not in self.refs and plan.mode != "symbolic":
                self.refs[key] = sources(plan)
            record[task.key] = verify(plan, SimpleNamespace(outputs=task.outputs), self.refs.get(key))
            task.outputs = [None] * len(task.outputs)   # the results are checked: free them
        return on_done


def build_tasks(job: PreparedJob, verified: dict) -> list:
    """The tasks of a job, in dependency order: step x repeat x group."""
    spec = job.spec
    ngroups = {name: len(g) for name, g in job.groups.items()}
    tasks, data = [], _Data()
    for step in spec.steps:
        for rep in range(step.repeat):
            barriers = _barriers(spec, step, rep, ngroups)
            for g, members in enumerate(job.groups[step.communicator]):
                plan = job.plans[(step.name, g)]
                own = ((step.name, rep - 1, g),) if rep else ()
                tasks.append(Task(
                    key=(step.name, rep, g), name=f"{step.communicator} {g} / {step.name}[{rep}]", members=members,
                    main=functools.partial(plan.algo.func, **plan.kwargs), inputs=data.inputs_of(plan),
                    after=barriers + ((own,) if own else ()), delay=step.compute,
                    on_done=data.verifier(plan, verified)))
    return tasks


def alone_times(job: PreparedJob) -> dict:
    """``(step name, group) -> seconds`` of each step's collective alone on its group's GPUs
    (one run per distinct collective and GPU set)."""
    cache: dict = {}
    out = {}
    for step in job.spec.steps:
        for g, members in enumerate(job.groups[step.communicator]):
            gpus = tuple(job.placement[r] for r in members)
            key = (step.collective, step.algorithm, step.bytes, step.elements, step.dtype, step.root,
                   tuple(sorted(step.options.items())), gpus, step.sizes, step.moe)
            if key not in cache:
                config = step_config(job.base, step, list(gpus))
                if job.plans[(step.name, g)].algo.kind == "dense":
                    config.verify = "symbolic"   # the same simulated time, without the data
                cache[key] = run(config, job.graph).fields["time_s"]
            out[(step.name, g)] = cache[key]
    return out


def run_job(spec: JobSpec, alone: bool = True):
    """Run a job; its :class:`~simcollective.jobs.report.JobReport`. ``alone=False`` skips
    the alone runs (no slowdowns). A disturbed job (:attr:`JobSpec.disturbed`) also runs
    without its disturbances, for what they cost."""
    from .report import JobReport

    t0 = time.perf_counter()
    job = prepare(spec)
    verified: dict = {}
    tasks = build_tasks(job, verified) + background_tasks(job)
    result = run_tasks(job.graph, job.placement, tasks, job.profile, job.base.routing, job.disturb)
    sim_wall = time.perf_counter() - t0
    if spec.disturbed:
        def build(variant):
            return build_tasks(variant, {}) + background_tasks(variant)

        job.undisturbed = undisturbed(job, build)
        job.undisturbed["each"] = each_cost(job, build)
    job.alone = alone_times(job) if alone else {}
    return JobReport(job, result, verified, sim_wall_s=sim_wall, wall_s=time.perf_counter() - t0)
