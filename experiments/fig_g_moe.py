"""(g) An MoE layer's dispatch + combine on dgx-h100, 8 -> 256 GPUs: NCCL's alltoallv against the DeepEP-style hierarchical one.

    python experiments/fig_g_moe.py [--reduced] [--nccl-max-ranks N]

The gate is DeepSeek-V3's shape (256 routed experts spread over the ranks, top-8, hidden
7168, bfloat16 activations; DeepSeek-V3 technical report, arXiv:2412.19437) with 128
tokens per rank (a decode batch), uniform (skew 0) and Zipf-skewed (skew 1) expert
popularity, seed 1; profile ideal, size-only data (verified symbolically). NCCL's
alltoallv runs up to ``--nccl-max-ranks`` (default 64: at 128 and 256 ranks its 16k-65k
concurrent flows per pass take the flow engine minutes). Writes
experiments/results/fig_g_moe.csv and fig_g_moe.png; prints each point and its wall time.
"""

import argparse
import sys
import time
from pathlib import Path

import simcollective as sc

OUT = Path(__file__).resolve().parent / "results"
EXPERTS, TOKENS, HIDDEN, TOPK = 256, 128, 7168, 8
COLUMNS = ("algorithm", "gpus", "skew", "time_s", "dispatch_s", "combine_s", "total_bytes", "max_rank_bytes",
           "imbalance", "messages", "wall_s")


def point(algorithm: str, nodes: int, skew: float) -> dict:
    P = 8 * nodes
    moe = f"tokens={TOKENS},hidden={HIDDEN},topk={TOPK},experts_per_rank={EXPERTS // P},skew={skew}"
    t0 = time.perf_counter()
    r = sc.run(topology="dgx-h100", nodes=nodes, collective="alltoallv", algorithm=algorithm, moe=moe,
               verify="symbolic")
    ph = r["phases"]
    return {"algorithm": algorithm, "gpus": P, "skew": skew, "time_s": r["time_s"],
            "dispatch_s": sum(v for k, v in ph.items() if k.startswith("dispatch")),
            "combine_s": sum(v for k, v in ph.items() if k.startswith("combine")),
            "total_bytes": r["total_bytes"], "max_rank_bytes": r["max_rank_bytes"], "imbalance": r["imbalance"],
            "messages": r["messages"], "wall_s": time.perf_counter() - t0}


def draw(rows: list, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, skew in zip(axes, (0.0, 1.0)):
        for algo, mark in (("nccl", "o-"), ("hierarchical", "s--")):
            pts = sorted((r["gpus"], r["time_s"] * 1e6) for r in rows if r["algorithm"] == algo and r["skew"] == skew)
            if pts:
                ax.plot(*zip(*pts), mark, label=algo)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs (dgx-h100, 8 per node)")
        ax.set_title(f"MoE dispatch + combine, skew {skew:g}")
        ax.grid(True, alpha=0.3)
    for ax in axes:
        ax.set_ylabel("time (us)")
    axes[0].legend()
    fig.suptitle(f"{TOKENS} tokens/rank, hidden {HIDDEN}, top-{TOPK} of {EXPERTS} experts, bfloat16 (profile ideal)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reduced", action="store_true", help="8 and 16 GPUs only (a check, seconds)")
    ap.add_argument("--nccl-max-ranks", type=int, default=64, help="largest run of the nccl algorithm (default 64)")
    ap.add_argument("--plot-only", action="store_true", help="redraw the figure from the CSV, no simulation")
    args = ap.parse_args(argv)
    if args.plot_only:
        import csv

        with open(OUT / "fig_g_moe.csv") as fh:
            rows = [{**r, "gpus": int(r["gpus"]), "skew": float(r["skew"]), "time_s": float(r["time_s"])}
                    for r in csv.DictReader(fh)]
        draw(rows, OUT / "fig_g_moe.png")
        return 0
    nodes = (1, 2) if args.reduced else (1, 2, 4, 8, 16, 32)
    rows = []
    t0 = time.perf_counter()
    for skew in (0.0, 1.0):
        for n in nodes:
            for algo in ("nccl", "hierarchical"):
                if algo == "nccl" and 8 * n > args.nccl_max_ranks:
                    continue
                rows.append(point(algo, n, skew))
                r = rows[-1]
                print(f"{algo:>12} {r['gpus']:>4} GPUs skew {skew:g}: {r['time_s'] * 1e6:9.1f} us "
                      f"(dispatch {r['dispatch_s'] * 1e6:.1f}, combine {r['combine_s'] * 1e6:.1f}), "
                      f"imbalance {r['imbalance']:.2f}, wall {r['wall_s']:.1f} s", flush=True)
    OUT.mkdir(exist_ok=True)
    name = "fig_g_moe_reduced" if args.reduced else "fig_g_moe"
    with open(OUT / f"{name}.csv", "w") as fh:
        fh.write(",".join(COLUMNS) + "\n")
        for r in rows:
            fh.write(",".join(f"{r[c]:.9g}" if isinstance(r[c], float) else str(r[c]) for c in COLUMNS) + "\n")
    draw(rows, OUT / f"{name}.png")
    print(f"wrote {OUT / (name + '.csv')} and .png in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
