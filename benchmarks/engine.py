"""Engine overhead without data: the ring allreduce's message pattern and nothing else.

Every rank runs ``2 (P - 1)`` steps of ``sendrecv`` to its right neighbour (receiving from
its left), forwarding a size-only payload of one ring block (``N / P`` elements), on the
same fat-tree, profile and routing as the ``ring`` points of S3/S5. There are no
reductions, no splitting into blocks and no verification, so the wall time is the
runtime (matching, requests, SimPy processes) and the network engine (flows, rates,
completions) alone. The messages, their sizes and their order are the ring's, and the
ring's reductions take no simulated time under the ``ideal`` profile, so the simulated
time equals that of ``ring`` at the same P (checked against the baseline like every
point).

The ``ring`` points of S3/S5 measure the same pattern with the size-only data layer
(split, symbolic sums, verification of every rank); the difference between the two is
the cost of that layer.

Fixed costs. The measured simulation (``sim_wall_s``, ``sim_cpu_s``: all of
:func:`~simcollective.runtime.run_ranks`) includes the per-run setup: the network
(routes are computed when a pair first sends), the world and the rank processes; at 16
ranks this is about a tenth of the 480 messages' time. The first simulation in a fresh
process also pays a per-process warm-up (the interpreter specializing the hot code
on its first executions, first use of lazily imported modules): at 16 ranks about a
fifth of the first run's time (measured: 9.5 us of CPU per message in the first run,
7.6 in the next ones). Both are counted in the reported figures; for P <= 64
the simulation is run a second time in the same process and that warm run is reported
apart (``warm_sim_cpu_s``), so that the two can be told apart.
"""

from __future__ import annotations

import time

__all__ = ["ring_messages", "estimate_point"]


def ring_messages(P: int, elements: int = 256 * 2**20, dtype: str = "float32", warm: bool = True,
                  lap=None) -> dict:
    """The ring's messages on a ``P``-host fat-tree, without data operations (``warm``:
    for P <= 64, run it a second time and report that run's CPU time apart; ``lap(name)``,
    if given, is called at the end of the phases ``"setup"`` and ``"simulation"`` of the
    first run: :mod:`benchmarks.profiling`)."""
    t0 = time.perf_counter()
    from simcollective.data.symbolic import symbolic_input
    from simcollective.placement import resolve_placement
    from simcollective.profiles import load_profile
    from simcollective.run_config import routing_of
    from simcollective.runtime import run_ranks
    from simcollective.simulate import RunConfig, build_graph

    cfg = RunConfig(topology="fat-tree", nodes=P, algorithm="ring", elements=elements, dtype=dtype)
    graph = build_graph(cfg)
    placement = resolve_placement(graph, cfg.placement, cfg.gpus)
    block = elements // P

    def forward(comm, x):
        right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
        for _ in range(2 * (comm.size - 1)):
            x = yield comm.sendrecv(right, x, left)
        return x

    def simulate():
        return run_ranks(graph, placement, forward, lambda r: (symbolic_input(r, block, dtype),),
                         load_profile(cfg.profile), routing_of(cfg.routing, graph))

    if lap is not None:
        lap("setup")
    res = simulate()
    if lap is not None:
        lap("simulation")
    out = {
        "time_s": res.makespan, "wall_s": time.perf_counter() - t0, "sim_wall_s": res.wall_s,
        "sim_cpu_s": res.cpu_s, "events": res.events, "flows": res.flows, "ranks": len(placement),
        "mode": "no data", "messages": res.messages,
    }
    if warm and P <= 64:  # the same simulation again, warm (see the module docstring)
        again = simulate()
        if again.makespan != res.makespan:
            raise AssertionError(f"a second run gave {again.makespan!r}, the first {res.makespan!r}")
        out["warm_sim_cpu_s"] = again.cpu_s
    return out


def estimate_point(small: dict, large: dict) -> dict:
    """Run ``small`` (:func:`benchmarks.allreduce.run_point`'s keywords) and count the
    messages of ``large`` without running it: the smaller run's figures, with
    ``large_messages``, ``large_ranks`` and ``small_peak_rss`` (its peak RSS, bytes)."""
    from simcollective.guard import expected_messages
    from simcollective.resolve import resolve
    from simcollective.simulate import RunConfig

    from ._harness import peak_rss_bytes
    from .allreduce import run_point

    out = run_point(**small)
    # the smaller run's own peak (resolving the large plan below builds its machine graph,
    # which can weigh more than the smaller run itself)
    out["small_peak_rss"] = peak_rss_bytes()
    cfg = dict(large)
    cfg.pop("engine", None)
    plan = resolve(RunConfig(**cfg), check_memory=False)   # counted, not run: its data need not fit here
    out["large_messages"], out["large_ranks"] = int(expected_messages(plan)), plan.P
    return out
