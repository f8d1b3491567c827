"""Allreduce benchmarks S1-S5 (issue "Scale and speed").

Each point runs in a fresh process (its own peak RSS) through the same code path as
``simcollective run`` (scenario E: the ring's messages without data operations, see
:mod:`benchmarks.engine`). Printed per point: wall time, simulated SimPy events per second,
flows (messages), engine overhead (wall time per message event / bare SimPy event
cost; a message is two engine events, its start and its end; the simulation's own wall
time, without inputs and verification; and the same ratio on CPU time, steadier on a
shared machine), peak resident memory, and
the simulated time, which is compared with ``baseline.json`` so that a speed change that
alters results is caught: any relative difference above 1e-9 (1e-4 for S4, see
``__main__.TOLERANCE``) is reported and makes the
run exit non-zero.
"""

from __future__ import annotations

import math

from ._harness import measure
from .engine import estimate_point, ring_messages
from .startup import README_COMMAND, STARTUP_COMMANDS, cli_point
from .targets import overheads

S1_S2_DENSE = ("ring", "ring-ring")


def run_point(topology: str, nodes: int, algorithm: str, elements: int, density=None, dtype="int32", gpus=None,
              topology_opts=None, options=None, engine="auto", collective="allreduce", profile="ideal",
              routing="auto", yes=False) -> dict:
    """Run one point in this process; ``yes``: beyond the run guard's wall limit (``--yes``)."""
    from simcollective.guard import confirm
    from simcollective.simulate import RunConfig, run_allreduce

    confirm(yes)

    cfg = RunConfig(topology=topology, nodes=nodes, algorithm=algorithm, elements=elements, dtype=dtype,
                    density=density, gpus=gpus, topology_opts=dict(topology_opts or {}), options=dict(options or {}),
                    engine=engine, collective=collective, profile=profile, routing=routing)
    rep = run_allreduce(cfg)
    f = rep.fields
    return {
        "time_s": f["time_s"], "wall_s": f["wall_s"], "sim_wall_s": f["sim_wall_s"], "sim_cpu_s": rep.result.cpu_s,
        "events": f["events"], "flows": f["flows"],
        "ranks": f["ranks"], "mode": f["mode"], "messages": f["messages"], "engine": f["engine"],
    }


def sparse_algorithms() -> list:
    from simcollective.algorithms import load_all

    algos = load_all()
    return sorted(a for a in algos if algos[a].kind == "sparse")


def scenarios(only=None) -> dict:
    """name -> list of (label, kwargs for run_point)."""
    M = 2**20
    sc = {}
    for name, nodes in (("S1", 4), ("S2", 16)):
        pts = []
        for algo in sparse_algorithms() + list(S1_S2_DENSE):
            dense = algo in S1_S2_DENSE
            pts.append((f"{algo}", dict(topology="abci", nodes=nodes, algorithm=algo, elements=32 * M,
                                        density=None if dense else 1 / 128, dtype="int32")))
        sc[name] = pts
    sc["S3"] = [("ring fat-tree 1024 256M f32", dict(topology="fat-tree", nodes=1024, algorithm="ring",
                                                     elements=256 * M, dtype="float32"))]
    sc["S4"] = [("sparse-ring-ring abci 1024 32M d=1/1024", dict(topology="abci", nodes=256, algorithm="sparse-ring-ring",
                                                                 elements=32 * M, density=1 / 1024, dtype="int32"))]
    pts = []
    for P in (16, 64, 256):
        pts.append((f"ring P={P}", dict(topology="fat-tree", nodes=P, algorithm="ring", elements=256 * M, dtype="float32")))
        pts.append((f"sparse-ring-ring P={P}", dict(topology="abci", nodes=P // 4, algorithm="sparse-ring-ring",
                                                    elements=32 * M, density=1 / 1024, dtype="int32")))
    sc["S5"] = pts
    # 4096 GPUs: a two-level leaf-spine of 64 leaves x 64 hosts, ring-ring with the groups
    # on the leaves, N = 1G float32, size-only (symbolic) data
    sc["S6"] = [("ring-ring fat-tree 4096 1G f32", dict(topology="fat-tree", nodes=4096, algorithm="ring-ring",
                                                       elements=1024 * M, dtype="float32",
                                                       topology_opts={"hosts_per_leaf": 64}, options={"group_size": 64}))]
    # engine overhead without the data layer: the ring's messages only (benchmarks.engine)
    sc["E"] = [(f"ring messages, no data P={P}", dict(target=ring_messages, P=P)) for P in (16, 64, 256, 1024)]
    # start-up: 16-rank commands' CPU time to their first event, and the README's first
    # command, each a command line in a fresh interpreter (benchmarks.startup)
    sc["ST"] = [(label, dict(target=cli_point, command=cmd, repeats=5)) for label, cmd in STARTUP_COMMANDS.items()]
    sc["ST"].append(("README first command", dict(target=cli_point, command=README_COMMAND, repeats=2)))
    from .moe import moe_points

    sc["MOE"] = moe_points()    # 256-rank MoE dispatch + combine (benchmarks.moe)
    sc.update(compiled_scenarios())
    if only:
        sc = {k: v for k, v in sc.items() if k in only}
    else:  # X: hours on the SimPy path where the compiled one does not apply (--only X)
        sc.pop("X")
    return sc


def compiled_scenarios() -> dict:
    """C: the compiled path against the SimPy path on the same points (its cost per
    message); X: the issue's large points (run with ``--only X``)."""
    M, G = 2**20, 2**30
    ring = dict(topology="fat-tree", algorithm="ring", elements=256 * M, dtype="float32")
    sc = {"C": []}
    for P in (256, 1024):
        for engine in ("compiled", "simpy"):
            sc["C"].append((f"ring P={P} {engine}", dict(ring, nodes=P, engine=engine)))
    sc["C"].append(("nccl-ring abci 8 nodes 1G compiled", dict(topology="abci", nodes=8, algorithm="nccl-ring",
                                                              elements=256 * M, dtype="float32", profile="nccl",
                                                              engine="compiled")))
    # the same algorithm over 520,192 messages: numba's load (about 0.4 s) no longer the cost per message
    sc["C"].append(("nccl-ring dgx-h100 16 nodes compiled", dict(topology="dgx-h100", nodes=16,
                                                                     algorithm="nccl-ring", elements=64 * M,
                                                                     dtype="float32", profile="nccl",
                                                                     engine="compiled")))
    # NCCL's trees and NVLSTree react to the first message to arrive (waitany): the SimPy path runs them
    for algo, n in (("nccl", 64 * M), ("nccl-tree", 256 * M)):
        sc["C"].append((f"{algo} dgx-h100 16 nodes", dict(topology="dgx-h100", nodes=16, algorithm=algo, elements=n,
                                                          dtype="float32", profile="nccl")))
    sc["X"] = [
        ("ring fat-tree 4096 1G f32", dict(ring, nodes=4096, elements=G // 4)),
        ("nccl-ring dgx-h100 128 nodes 1G", dict(topology="dgx-h100", nodes=128, algorithm="nccl-ring",
                                                 elements=G // 4, dtype="float32", profile="nccl")),
        ("alltoall direct dgx-h100 128 nodes 1G", dict(topology="dgx-h100", nodes=128, algorithm="direct",
                                                       collective="alltoall", elements=G // 4 // 1024,
                                                       dtype="float32")),
        ("nccl dgx-h100 2048 nodes 1G", dict(topology="dgx-h100", nodes=2048, algorithm="nccl", elements=G // 4,
                                             dtype="float32", profile="nccl")),
    ]
    # XE: each X point estimated from a measured smaller run (benchmarks.compiled_targets), but
    # the runs that take minutes, measured whole: the all-to-all's 1024-GPU run (its 16-node run
    # is mostly numba's load: an estimate from it is half again the run) and NVLSTree on 16,384
    # GPUs (about 5 min; its cost a message does not grow as the estimate's P^0.2: from 16 nodes
    # the estimate is twice the run); nccl-ring from 16 nodes, 520,192 messages (at 8 nodes
    # numba's load is most of the run)
    small = {"ring fat-tree 4096 1G f32": 1024, "nccl-ring dgx-h100 128 nodes 1G": 16}
    sc["XE"] = [(label, dict(target=estimate_point, small=dict(kw, nodes=small[label]), large=kw) if label in small
                 else dict(kw, yes=True)) for label, kw in sc["X"]]
    return sc


def fit_exponent(ps, walls) -> float:
    """Least-squares slope of log(wall) against log(P)."""
    xs = [math.log(p) for p in ps]
    ys = [math.log(w) for w in walls]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def run_scenarios(only=None, bare_rate: float = 1.0, printer=print, bare_cpu_rate: float | None = None) -> dict:
    results = {}
    for name, pts in scenarios(only).items():
        printer(f"\n{name}")
        total_wall, peak = 0.0, 0
        for label, kw in pts:
            kw = dict(kw)
            r = measure(kw.pop("target", run_point), **kw)
            key = f"{name}/{label}"
            results[key] = r
            if "error" in r:
                printer(f"  {label:<40} ERROR {r['error']}")
                continue
            total_wall += r["wall_s"]
            peak = max(peak, r["peak_rss"])
            if r.get("startup"):
                printer(f"  {label:<40} P={r['ranks']:<5} cpu to first event {r['first_event_cpu_s']:.3f} s "
                        f"(interpreter {r['interpreter_cpu_s']:.3f} s, front end imported at {r['cli_import_cpu_s']:.3f} s)  "
                        f"total cpu {r['total_cpu_s']:.2f} s  wall {r['process_wall_s']:.2f} s  "
                        f"(min of {r['repeats']})  sim {r['time_s']:.9g} s"
                        + (f"  [{r['uncached_modules']} modules without a bytecode cache: "
                           "python -m compileall simcollective topologies]" if r.get("uncached_modules") else ""))
                continue
            # engine overhead: simulation wall time (inputs and verification excluded) per
            # message event, in units of a bare SimPy event
            # (and the same on CPU time: the simulation's CPU time / the bare event's CPU time)
            cpu_rate = bare_cpu_rate or bare_rate
            overhead, cpu_over = overheads(r, bare_rate, cpu_rate)
            warm = (f" (warm {r['warm_sim_cpu_s'] / (2 * r['flows']) * cpu_rate:.1f}x)"
                    if "warm_sim_cpu_s" in r and r["flows"] else "")
            printer(f"  {label:<40} P={r['ranks']:<5} wall {r['wall_s']:8.2f} s  cpu {r['cpu_s']:8.2f} s  "
                    f"{r['events'] / r['sim_wall_s']:>10,.0f} ev/s  "
                    f"{r['flows']:>9} msgs  overhead {overhead:5.1f}x wall, {cpu_over:5.1f}x cpu{warm}  "
                    f"peak {r['peak_rss'] / 2**30:5.2f} GiB  sim {r['time_s']:.9g} s ({r['mode']}, "
                    f"{r.get('engine', 'simpy')})")
        printer(f"  {name} total wall {total_wall:.1f} s, largest peak RSS {peak / 2**30:.2f} GiB")
    return results
