"""Engine benchmark: 1024 concurrent flows of a random permutation on a 1024-host
fat-tree, full bisection versus 3:1 oversubscribed.

Run: ``python -m benchmarks.flows``. Prints wall time, simulated time, events/s and peak
memory per scenario, plus the bare SimPy event rate of the same run.
"""

from __future__ import annotations

import argparse

import numpy as np

from ._harness import measure, simpy_event_rate

SIZE = 64 * 2**20  # bytes per flow


def permutation_scenario(hosts: int, oversubscription: float, routing: str, seed: int = 1) -> dict:
    import time

    import topologies
    from simcollective.network.engine import Network, SimEnvironment
    from simcollective.profiles import load_profile

    t0 = time.perf_counter()
    g = topologies.fat_tree(hosts, oversubscription=oversubscription)
    build_s = time.perf_counter() - t0
    gpus = topologies.gpus(g)
    perm = np.random.default_rng(seed).permutation(len(gpus))
    env = SimEnvironment()
    net = Network(env, g, load_profile("ideal").network, routing)
    t1 = time.perf_counter()
    for i, j in enumerate(perm):
        if i != j:
            net.transfer(gpus[i], gpus[int(j)], SIZE, lambda f: None)
    env.run()
    wall = time.perf_counter() - t1
    events = next(env._eid)
    return {
        "scenario": f"{hosts} hosts, {oversubscription:g}:1, routing {routing}",
        "flows": net.flows_started, "sim_time_s": env.now, "build_s": build_s, "wall_s": wall,
        "events": events, "events_per_s": 2 * net.flows_started / wall, "recomputations": net.recomputations,
    }


def main(argv=None) -> None:
    argparse.ArgumentParser(prog="python -m benchmarks.flows", description=__doc__.split("\n\n")[0]).parse_args(argv)
    rate = simpy_event_rate()
    print(f"bare SimPy: {rate:,.0f} events/s")
    print(f"{'scenario':<40} {'flows':>6} {'sim time':>12} {'wall':>8} {'flow ev/s':>10} {'recomp':>7} {'peak RSS':>9}")
    for hosts, over, routing in ((1024, 1.0, "hash"), (1024, 3.0, "hash"), (1024, 1.0, "first")):
        r = measure(permutation_scenario, hosts, over, routing)
        if "error" in r:
            print(f"{hosts} {over} {routing}: {r['error']}")
            continue
        print(f"{r['scenario']:<40} {r['flows']:>6} {r['sim_time_s']:>10.6f} s {r['wall_s']:>6.2f} s "
              f"{r['events_per_s']:>10,.0f} {r['recomputations']:>7} {r['peak_rss'] / 2**20:>6.0f} MiB")


if __name__ == "__main__":
    main()
