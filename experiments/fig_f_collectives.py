"""(f) Which allgather / all-to-all on which machine: time vs size for every algorithm.

    python experiments/fig_f_collectives.py [--workers N] [--reduced] [--figures-only]

For allgather and alltoall (and, with --all, reduce-scatter, broadcast and reduce), every
dense algorithm of the collective on dgx-h100 with 1, 2, 4 and 8 nodes (8 -> 64 GPUs) and
on abci with 4 nodes (16 GPUs), sizes (nccl-tests bytes) 4K, 32K, ..., 128M (x 8), profile
ideal.
Writes experiments/results/fig_f_collectives.csv (a sweep table, resumable) and one figure
per collective, fig_f_collectives_<collective>.png/.pdf: one panel per machine, time vs
size log-log, one line per algorithm. Prints how long it took.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAME = "fig_f_collectives"
MACHINES = [("dgx-h100", 1), ("dgx-h100", 2), ("dgx-h100", 4), ("dgx-h100", 8), ("abci", 4)]
MAIN = ("allgather", "alltoall")
OTHERS = ("reduce-scatter", "broadcast", "reduce")


def config(collectives, reduced: bool) -> dict:
    from simcollective.algorithms.registry import algorithms_for

    machines = [("dgx-h100", 1), ("dgx-h100", 2), ("abci", 2)] if reduced else MACHINES
    sizes = {"from": "4K", "to": "1M", "factor": 16} if reduced else {"from": "4K", "to": "256M", "factor": 8}
    grids = []
    for coll in collectives:
        # NCCL's own algorithms (nccl-*) run with the nccl profile on hardware presets:
        # README "NCCL's other collectives"; this figure compares the textbook algorithms
        dense = [n for n, a in algorithms_for(coll).items() if a.kind == "dense" and not n.startswith("nccl")]
        for topo, nodes in machines:
            grids.append({"collective": [coll], "algorithm": dense, "topology": [topo], "nodes": [nodes],
                          "bytes": sizes})
    return {"name": NAME, "fixed": {"profile": "ideal", "dtype": "float32", "memory_budget": "256M"},
            "grid": grids}


def figures(df, outdir: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    written = []
    ok = df[df["ok"].astype(bool)]
    for coll, part in ok.groupby("collective", sort=False):
        machines = list(dict.fromkeys(zip(part["topology"], part["nodes"])))
        fig, axes = plt.subplots(1, len(machines), figsize=(3.6 * len(machines), 3.4), sharey=True, squeeze=False)
        for ax, (topo, nodes) in zip(axes[0], machines):
            m = part[(part["topology"] == topo) & (part["nodes"] == nodes)]
            for algo, rows in m.groupby("algorithm"):
                rows = rows.sort_values("bytes")
                ax.plot(rows["bytes"], rows["time_s"] * 1e6, marker="o", ms=3, label=algo)
            ranks = int(m["ranks"].iloc[0]) if len(m) else 0
            ax.set_title(f"{topo}, {nodes} node{'s' if nodes > 1 else ''} ({ranks} GPUs)", fontsize=9)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("size (bytes, as nccl-tests)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0][0].set_ylabel("time (us)")
        axes[0][-1].legend(fontsize=7)
        fig.suptitle(f"{coll}: time vs size per algorithm (profile ideal)", fontsize=10)
        fig.tight_layout()
        for ext in ("png", "pdf"):
            path = outdir / f"{NAME}_{coll}.{ext}"
            fig.savefig(path)
            written.append(path)
        plt.close(fig)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, help="local processes (default: all cores)")
    ap.add_argument("--scheduler", help="an existing Dask cluster")
    ap.add_argument("--reduced", action="store_true", help="a small grid, to check that it works")
    ap.add_argument("--all", action="store_true", help="also reduce-scatter, broadcast and reduce")
    ap.add_argument("--figures-only", action="store_true")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    from simcollective.sweeps import read_results, run_sweep

    t0 = time.perf_counter()
    outdir = HERE / "results" / ("reduced" if args.reduced else "")
    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / f"{NAME}.csv"
    if args.figures_only:
        df = read_results(out)
    else:
        colls = MAIN + (OTHERS if args.all else ())
        df = run_sweep(config(colls, args.reduced), out, workers=args.workers, scheduler=args.scheduler)
        print(df.attrs.get("summary", ""))
    for path in figures(df, outdir):
        print("wrote", path)
    print(f"{NAME}: {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
