"""Several collectives on one world, at once: :func:`run_tasks`.

A :class:`Task` is one collective on one group of world ranks (a sub-communicator): every
member runs ``main(comm, inputs(i))`` as rank ``i`` of a communicator over the group, in a
message space of its own (the task's ``key``), so the messages of different tasks never
match each other even over the same ranks. All tasks share the one network: their flows
share links by the engine's max-min fairness.

Dependencies are per rank, as on a GPU's stream: ``after`` is a list of barriers, each a
tuple of task keys (e.g. every group of one step). A member takes the barrier once its own
parts in those tasks are done; a member that takes part in none of them waits for all of
them. It then waits ``delay`` seconds (the compute before the collective) and starts.
Tasks without a dependency between them overlap.

Disturbances (:class:`Disturbances`): a rank may start late (its first part waits that
long after 0) or compute slower (each ``delay`` it waits is multiplied by its factor), and
links may degrade or fail at given times (:class:`~simcollective.network.faults.LinkFault`;
the engine then keeps to its per-flow mode).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import simpy

from ..errors import DeadlockError, SimCollectiveError
from ..network.calendar import event_count
from ..network.engine import Network, SimEnvironment
from ..network.faults import FAULT_TUNING
from .collector import collector_paused
from .comm import Comm
from .world import World

__all__ = ["Task", "TasksResult", "Disturbances", "run_tasks"]


@dataclass(frozen=True)
class Disturbances:
    """What keeps a run from being ideal: ``late`` (world rank -> seconds its first part
    starts late), ``slow`` (world rank -> factor >= 1 on its compute delays), ``faults``
    (:class:`~simcollective.network.faults.LinkFault` list)."""

    late: dict = field(default_factory=dict)
    slow: dict = field(default_factory=dict)
    faults: tuple = ()


@dataclass(eq=False)
class Task:
    """One collective on one group of world ranks (see the module docstring). After the
    run, ``starts``/``finish``/``outputs`` hold each member's (in group order); ``on_done``
    (optional) is called with the task when its last member finishes (e.g. to verify and
    drop the outputs)."""

    key: object
    name: str
    members: tuple
    main: Callable
    inputs: Callable
    after: tuple = ()
    delay: float = 0.0
    on_done: Callable | None = None
    starts: list = field(default_factory=list)
    finish: list = field(default_factory=list)
    outputs: list = field(default_factory=list)

    @property
    def start(self) -> float:
        return min(self.starts)

    @property
    def end(self) -> float:
        return max(self.finish)


@dataclass
class TasksResult:
    """What :func:`run_tasks` measured: the tasks (with their times), the links, counts."""

    tasks: list
    makespan: float
    links: list
    messages: int
    message_bytes: int
    events: int
    flows: int
    wall_s: float


def _part(env, world, task: Task, i: int, waits: list, left: list, slow: float = 1.0):
    if waits:
        yield simpy.AllOf(env, waits)
    if task.delay > 0:
        yield env.timeout(task.delay * slow)
    task.starts[i] = env.now
    comm = Comm(world, task.members, i, task.name, context=task.key)
    task.outputs[i] = yield from task.main(comm, task.inputs(i))
    task.finish[i] = env.now
    left[0] -= 1
    if not left[0] and task.on_done is not None:
        task.on_done(task)


def _waits(task: Task, rank: int, parts: dict, by_key: dict) -> list:
    """The events world rank ``rank`` waits for before its part of ``task``."""
    waits = []
    for barrier in task.after:
        mine = [parts[(k, rank)] for k in barrier if (k, rank) in parts]
        waits += mine or [parts[(k, r)] for k in barrier for r in by_key[k].members]
    return waits


def run_tasks(graph, placement, tasks, profile, routing: str = "first",
              disturb: Disturbances | None = None) -> TasksResult:
    """Run every task on one simulated machine (``graph``, world ranks on ``placement``);
    ``tasks`` in an order where every task comes after those it waits for; ``disturb``:
    stragglers and link faults. Raises :class:`~simcollective.errors.DeadlockError`
    naming the tasks that never finished."""
    t0 = time.perf_counter()
    env = SimEnvironment()
    model = profile.network
    disturb = disturb if disturb is not None else Disturbances()
    net = Network(env, model.effective_graph(graph), model, routing,
                  tuning=FAULT_TUNING if disturb.faults else None)
    if disturb.faults:
        net.schedule_faults(disturb.faults)
    world = World(env, net, placement, profile.compute, False, profile)
    late = {r: env.timeout(d) for r, d in sorted(disturb.late.items()) if d > 0}
    parts: dict = {}
    by_key: dict = {}
    for task in tasks:
        if task.key in by_key:
            raise SimCollectiveError(f"task key {task.key!r} appears twice")
        missing = [k for b in task.after for k in b if k not in by_key]
        if missing:
            raise SimCollectiveError(f"task {task.name}: waits for {missing[0]!r}, which does not come before it")
        by_key[task.key] = task
        k = len(task.members)
        task.starts, task.finish, task.outputs = [None] * k, [None] * k, [None] * k
        left = [k]
        for i, rank in enumerate(task.members):
            waits = _waits(task, rank, parts, by_key)
            if rank in late:
                waits.append(late[rank])
            parts[(task.key, rank)] = env.process(_part(env, world, task, i, waits, left, disturb.slow.get(rank, 1.0)))
    gc_run(env)
    stuck = [t for t in tasks if any(f is None for f in t.finish)]
    if stuck:
        names = ", ".join(f"{t.name} (ranks {[t.members[i] for i, f in enumerate(t.finish) if f is None]})"
                          for t in stuck[:5])
        raise DeadlockError(f"deadlock at t={env.now:.9g} s: {len(stuck)} collective(s) never finished: {names}")
    unreceived = world.unreceived_report()
    if unreceived:
        raise SimCollectiveError(unreceived)
    makespan = max((t.end for t in tasks), default=0.0)
    return TasksResult(tasks=list(tasks), makespan=makespan, links=net.link_stats(), messages=world.messages,
                       message_bytes=world.message_bytes, events=event_count(env), flows=net.flows_started,
                       wall_s=time.perf_counter() - t0)


def gc_run(env) -> None:
    """Run the simulation with the cyclic garbage collector paused (as :func:`run_ranks`)."""
    with collector_paused():
        env.run()
