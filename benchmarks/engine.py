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
"""

from __future__ import annotations

import time

__all__ = ["ring_messages"]


def ring_messages(P: int, elements: int = 256 * 2**20, dtype: str = "float32") -> dict:
    """The ring's messages on a ``P``-host fat-tree, without data operations."""
    t0 = time.perf_counter()
    from simcollective.data.symbolic import symbolic_input
    from simcollective.placement import resolve_placement
    from simcollective.profile import load_profile
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

    res = run_ranks(graph, placement, forward, lambda r: (symbolic_input(r, block, dtype),),
                    load_profile(cfg.profile), cfg.routing)
    return {
        "time_s": res.makespan, "wall_s": time.perf_counter() - t0, "sim_wall_s": res.wall_s,
        "events": res.events, "flows": res.flows, "ranks": len(placement), "mode": "no data",
        "messages": res.messages,
    }
