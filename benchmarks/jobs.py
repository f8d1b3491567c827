"""Job benchmark: one 3D-parallel transformer step on 64 GPUs (8 DGX H100 nodes: TP 8,
PP 2, DP 4), 48 layers, 8 micro-batches (about 2 x 10^5 messages), the target under 60 s
of CPU; with a straggler and a degraded NIC link beside it (the fault path: per-flow mode).

Run: ``python -m benchmarks.jobs [--verify auto|symbolic]`` (or ``python -m benchmarks
--jobs``). Prints CPU and wall time, simulated makespan, messages, events and peak memory
per scenario. The job is :func:`simcollective.jobs.examples.three_d_parallel`.
"""

from __future__ import annotations

import argparse

from ._harness import measure

#: the target of the 3D-parallel step (CPU seconds)
TARGET_CPU_S = 60.0


def job_scenario(disturbed: bool, verify: str) -> dict:
    import time

    from simcollective.jobs import job_from_dict, run_job
    from simcollective.jobs.examples import three_d_parallel

    table = three_d_parallel(nodes=8, layers=48, microbatches=8, verify=verify)
    if disturbed:
        table["stragglers"] = [{"rank": 5, "delay": 1e-3}]
        table["faults"] = [{"link": "n0/nic0<->su0/leaf0", "capacity": 0.5, "at": 0.01}]
    c0, w0 = time.process_time(), time.perf_counter()
    f = run_job(job_from_dict(table), alone=False).fields
    return {"scenario": f"3D step 64 GPUs, 48 layers, 8 micro-batches{', disturbed' if disturbed else ''}",
            "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0, "makespan_s": f["makespan_s"],
            "messages": f["messages"], "events": f["events"], "cost_s": f.get("cost_s")}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.jobs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--verify", default="symbolic", choices=("auto", "symbolic"),
                    help="verify every collective's data (auto) or size-only (symbolic, default)")
    args = ap.parse_args(argv)
    print(f"{'scenario':<58} {'cpu':>8} {'wall':>8} {'makespan':>12} {'messages':>9} {'events':>9} {'peak RSS':>9}")
    for disturbed in (False, True):
        r = measure(job_scenario, disturbed, args.verify)
        if "error" in r:
            print(f"disturbed={disturbed}: {r['error']}")
            continue
        verdict = "met" if r["cpu_s"] < TARGET_CPU_S else "NOT MET"
        print(f"{r['scenario']:<58} {r['cpu_s']:>6.2f} s {r['wall_s']:>6.2f} s {r['makespan_s'] * 1e3:>9.3f} ms "
              f"{r['messages']:>9} {r['events']:>9} {r['peak_rss'] / 2**20:>6.0f} MiB"
              + ("" if disturbed else f"  (target < {TARGET_CPU_S:g} s CPU: {verdict})"))


if __name__ == "__main__":
    main()
