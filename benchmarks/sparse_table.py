"""The sparse comparison table: every sparse algorithm plus dense ring and ring-ring on
abci at 16 and 64 GPUs, N = 32M, d = 1/128, int32, under the ``ideal`` and ``smpi``
profiles, with the simulated time, wall time and peak memory of each run (each in a fresh
process).

Run: ``python -m benchmarks.sparse_table [--gpus 16,64] [--profiles ideal,smpi]``
"""

from __future__ import annotations

import argparse

from ._harness import measure
from .allreduce import S1_S2_DENSE, sparse_algorithms


def one(nodes: int, algorithm: str, profile: str, dense: bool) -> dict:
    from simcollective.simulate import RunConfig, run_allreduce

    rep = run_allreduce(RunConfig(topology="abci", nodes=nodes, algorithm=algorithm, elements=32 * 2**20,
                                  density=None if dense else 1 / 128, dtype="int32", profile=profile))
    return {"time_s": rep["time_s"], "wall_s": rep["wall_s"], "mode": rep["mode"], "ranks": rep["ranks"]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.sparse_table")
    ap.add_argument("--gpus", default="16,64")
    ap.add_argument("--profiles", default="ideal,smpi")
    args = ap.parse_args(argv)
    gpus = [int(g) for g in args.gpus.split(",")]
    profiles = args.profiles.split(",")
    algos = sparse_algorithms() + list(S1_S2_DENSE)
    print("| algorithm | GPUs | " + " | ".join(f"{p} time (ms) | {p} wall (s) | {p} peak (GiB)" for p in profiles) + " |")
    print("|---|---|" + "---|---|---|" * len(profiles))
    for g in gpus:
        for a in algos:
            cells = []
            for p in profiles:
                r = measure(one, g // 4, a, p, a in S1_S2_DENSE)
                if "error" in r:
                    cells.append(f"error: {r['error']} | | ")
                    continue
                mark = "*" if r["mode"] == "symbolic" else ""
                cells.append(f"{1e3 * r['time_s']:.3f}{mark} | {r['wall_s']:.1f} | {r['peak_rss'] / 2**30:.2f}")
            print(f"| {a} | {g} | " + " | ".join(cells) + " |", flush=True)
    print("\n* dense runs above the 1 GiB memory budget are verified in size-only (symbolic) mode")


if __name__ == "__main__":
    main()
