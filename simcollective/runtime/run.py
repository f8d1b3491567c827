"""Running an algorithm on every rank: :func:`run_ranks` and what it measures."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

import simpy

from ..errors import DeadlockError, SimCollectiveError
from ..network.calendar import event_count
from ..network.engine import Network, SimEnvironment
from .collector import collector_paused
from .world import World

__all__ = ["RunResult", "run_ranks", "barrier_offsets", "TIMINGS"]


@dataclass
class RunResult:
    """What a simulation measured. Times in seconds, sizes in bytes."""

    makespan: float
    finish: list
    outputs: list
    phases: dict            # time per phase of the last rank to finish; sums to makespan
    phases_max: dict        # per phase, the largest time any rank spent in it
    messages: int
    message_bytes: int
    links: list             # LinkStats of every resource that carried data
    bytes_by_link_type: dict
    wall_s: float
    events: int
    flows: int
    recomputations: int
    spans: list | None = None
    placement: list | None = None
    link_series: dict | None = None  # traces: {link name: [(t, bytes/s), ...]}
    starts: list | None = None       # each rank's start (0 unless timing="study")
    cpu_s: float = 0.0               # CPU time of this process over wall_s's span
    engine: str = "simpy"            # the execution path that ran it: simpy or compiled
    engine_note: str | None = None   # why the SimPy path ran when the compiled one was allowed


def _run(env, net, world, progress) -> None:
    if progress is None:
        env.run()
        return
    # step the kernel ourselves and report simulated time and messages now and then
    step, steps = env.step, 0
    while True:
        try:
            step()
        except simpy.core.EmptySchedule:
            break
        steps += 1
        if steps % 20000 == 0:
            progress(env.now, net.flows_completed, world.messages)
    progress(env.now, net.flows_completed, world.messages)


def _run_without_gc(env, net, world, progress) -> None:
    # the runtime breaks its own reference cycles: the cyclic collector is paused
    with collector_paused(freeze=True):
        _run(env, net, world, progress)


#: ``timing`` of :func:`run_ranks`: "simultaneous" (every rank starts at 0) or "study"
TIMINGS = ("simultaneous", "study")


def barrier_offsets(net: Network, placement, model) -> list:
    """The study's start offsets: after SMPI's linear barrier rank r leaves route
    latency(rank 0 -> r) x the latency factor at 0 bytes (of the network ``model``) after
    rank 0 (no bandwidth term)."""
    k = model.latency_factor(0)
    return [net.route(placement[0], g).latency * k if g != placement[0] else 0.0 for g in placement]


def run_ranks(graph, placement, main, args_for_rank, profile, routing: str = "first", trace: bool = False,
              progress=None, network: Network | None = None, timing: str = "simultaneous",
              late: dict | None = None) -> RunResult:
    """Run ``main(comm, *args_for_rank(rank))`` on every rank; return the measurements.

    ``profile``: the run's profile; the runtime reads its ``network``
    (:class:`~simcollective.network.model.NetworkModel`) and ``compute``
    (:class:`~simcollective.runtime.compute.ComputeModel`), and the communicators hand the
    profile itself to the algorithms (``comm.profile``).

    ``timing="study"``: rank r starts at its barrier-exit offset (:func:`barrier_offsets`),
    the reported time (``makespan``) is the largest (finish - own start) over ranks, and
    phases are measured from each rank's start (``finish`` stays absolute).

    ``late``: ``{rank: seconds}`` stragglers: those ranks start that much later, and the
    time is still measured from their (offset) start without it (the delay counts).

    Raises :class:`~simcollective.errors.DeadlockError` naming the blocked ranks if some
    rank never finishes, and :class:`~simcollective.errors.SimCollectiveError` if a
    message was sent but never received.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    env = SimEnvironment()
    model = profile.network
    net = network if network is not None else Network(env, model.effective_graph(graph), model, routing)
    net.env = env
    world = World(env, net, placement, profile.compute, trace, profile)
    if timing not in TIMINGS:
        raise SimCollectiveError(f"timing {timing!r} is not one of: {', '.join(TIMINGS)}")
    starts = barrier_offsets(net, world.placement, model) if timing == "study" else [0.0] * world.size
    late = late or {}
    for r, (st, t) in enumerate(zip(world.ranks, starts)):
        st.start = st.mark = t + late.get(r, 0.0)
    if trace:
        net.series = {}
    for r in range(world.size):
        world.launch(r, main, args_for_rank(r))
    _run_without_gc(env, net, world, progress)
    blocked = world.blocked_report()
    if blocked:
        raise DeadlockError(f"deadlock at t={env.now:.9g} s: " + " | ".join(blocked))
    unreceived = world.unreceived_report()
    if unreceived:
        raise SimCollectiveError(unreceived)
    with collector_paused():    # the link statistics: one object a link, thousands of links
        return _result(env, net, world, starts, trace, placement, t0, c0)


def _result(env, net, world, starts, trace, placement, t0, c0) -> RunResult:
    finish = [st.finish for st in world.ranks]
    elapsed = [f - t for f, t in zip(finish, starts)]
    makespan = max(elapsed) if elapsed else 0.0
    last = max(range(world.size), key=lambda r: (elapsed[r], -r))
    phases = dict(world.ranks[last].acc)
    phases_max: dict = {}
    for st in world.ranks:
        for k, v in st.acc.items():
            phases_max[k] = max(phases_max.get(k, 0.0), v)
    links = net.link_stats()
    by_type: dict = defaultdict(int)
    for ls in links:
        by_type[ls.link_type] += ls.bytes
    spans = [st.spans for st in world.ranks] if trace else None
    return RunResult(
        makespan=makespan, finish=finish, outputs=[st.output for st in world.ranks], phases=phases,
        phases_max=phases_max, messages=world.messages, message_bytes=world.message_bytes, links=links,
        bytes_by_link_type=dict(by_type), wall_s=time.perf_counter() - t0, events=event_count(env),
        flows=net.flows_started, recomputations=net.recomputations, spans=spans, placement=list(placement),
        link_series=net.link_series() if trace else None, starts=starts, cpu_s=time.process_time() - c0,
    )
