"""Reproducing the study: every cell of its published table under --profile smpi --study.

    python experiments/study_table.py [--workers N] [--scheduler ADDRESS] [--figures-only]
                                      [--config PATH] [--out DIR]

Runs configs/study_table.toml (resuming results/study_table.csv), then writes, next to it,
study_table.md (ours beside the published figure, the error per cell, the ranking per row),
study_table_compare.csv (one row per cell) and study_table.png/.pdf (ours against published,
one panel per row, and the error per cell). The published figures are the study's
own (its logs: SimGrid 3.19, SMPI model, ms), as docs/study.md lists them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: algorithms of the published table, in its column order
ALGORITHMS = ("ring", "ring-ring", "dsar-split-allgather", "ssar-split-allgather", "sparse-ring",
              "sparse-ring-ring")
#: (topology, GPUs, elements) -> published time in ms per algorithm (the study's table)
PUBLISHED = {
    ("abci", 8, 32 * 2**20): (23.12, 15.05, 24.10, 4.05, 4.51, 2.36),
    ("abci", 16, 32 * 2**20): (27.46, 21.61, 41.79, 9.96, 9.45, 5.30),
    ("abci", 32, 16 * 2**20): (22.54, 14.52, 25.51, 10.54, 15.03, 7.01),
    ("abci", 64, 32 * 2**20): (51.84, 37.42, 54.92, 38.32, 37.75, 25.01),
    ("dgx1", 16, 32 * 2**20): (27.35, 14.98, 24.11, 7.74, 9.37, 3.98),
    ("dgx2", 16, 32 * 2**20): (88.36, 104.05, 78.21, 20.34, 17.24, 16.79),
}
PLATFORM = {"abci": "ABCI", "dgx1": "DGX-1", "dgx2": "DGX-2"}
SHORT = {"ring": "ring", "ring-ring": "ring-ring", "dsar-split-allgather": "DSAR",
         "ssar-split-allgather": "SSAR", "sparse-ring": "sparse-ring", "sparse-ring-ring": "sparse-ring-ring"}


def compare(df):
    """One row per published cell: ours (ms), published (ms), error (%)."""
    import pandas as pd

    ok = df[df["ok"].astype(bool)]
    rows = []
    for (topo, gpus, n), pub in PUBLISHED.items():
        for algo, p in zip(ALGORITHMS, pub):
            m = ok[(ok["topology"] == topo) & (ok["gpus"].astype(int) == gpus)
                   & (ok["elements"].astype(int) == n) & (ok["algorithm"] == algo)]
            ours = float(m["time_s"].iloc[0]) * 1e3 if len(m) else float("nan")
            rows.append({"platform": PLATFORM[topo], "gpus": gpus, "elements": n, "algorithm": algo,
                         "ours_ms": ours, "published_ms": p, "error_pct": 100 * (ours / p - 1)})
    return pd.DataFrame(rows)


def _ranking(times: dict) -> list:
    return [a for a, _ in sorted(times.items(), key=lambda kv: kv[1])]


def markdown(cmp) -> str:
    head = "| platform | GPUs | N | " + " | ".join(SHORT[a] for a in ALGORITHMS) + " | fastest (ours / published) |"
    lines = [head, "|" + "---|" * (len(ALGORITHMS) + 4)]
    worst = 0.0
    same = 0
    rows = 0
    for (plat, gpus, n), g in cmp.groupby(["platform", "gpus", "elements"], sort=False):
        cells = []
        ours, pub = {}, {}
        for _, r in g.iterrows():
            cells.append(f"{r.ours_ms:.2f} / {r.published_ms:.2f} ({r.error_pct:+.1f} %)")
            ours[r.algorithm], pub[r.algorithm] = r.ours_ms, r.published_ms
            worst = max(worst, abs(r.error_pct))
        ro, rp = _ranking(ours), _ranking(pub)
        rows += 1
        same += ro[0] == rp[0]
        mark = "same" if ro[0] == rp[0] else "DIFFERENT"
        lines.append(f"| {plat} | {gpus} | {n // 2**20}M | " + " | ".join(cells)
                     + f" | {SHORT[ro[0]]} / {SHORT[rp[0]]} ({mark}) |")
    lines.append("")
    lines.append(f"Cells: ours / published in ms (error). Largest error {worst:.1f} %; "
                 f"mean absolute error {cmp['error_pct'].abs().mean():.1f} %; "
                 f"same fastest algorithm in {same} of {rows} rows.")
    ranks = []
    for (plat, gpus, n), g in cmp.groupby(["platform", "gpus", "elements"], sort=False):
        ro = _ranking(dict(zip(g.algorithm, g.ours_ms)))
        rp = _ranking(dict(zip(g.algorithm, g.published_ms)))
        ranks.append(f"- {plat} {gpus} GPUs: ours {' < '.join(SHORT[a] for a in ro)}; "
                     f"published {' < '.join(SHORT[a] for a in rp)}")
    lines.append("")
    lines.append("Ranking per row (fastest first):")
    lines.extend(ranks)
    return "\n".join(lines) + "\n"


def figure(cmp, out: Path) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    groups = list(cmp.groupby(["platform", "gpus", "elements"], sort=False))
    fig, axes = plt.subplots(2, 4, figsize=(16, 7.5), constrained_layout=True)
    axes = axes.ravel()
    x = np.arange(len(ALGORITHMS))
    for ax, ((plat, gpus, n), g) in zip(axes, groups):
        ax.bar(x - 0.2, g.published_ms, 0.4, label="published (SimGrid 3.19, SMPI)", color="0.6")
        ax.bar(x + 0.2, g.ours_ms, 0.4, label="simcollective smpi --study", color="tab:blue")
        for xi, (o, e) in enumerate(zip(g.ours_ms, g.error_pct)):
            ax.text(xi + 0.2, o, f"{e:+.1f}%", ha="center", va="bottom", fontsize=7, rotation=90)
        ax.set_title(f"{plat}, {gpus} GPUs, N = {n // 2**20}M")
        ax.set_xticks(x, [SHORT[a] for a in ALGORITHMS], rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("allreduce time (ms)")
        ax.set_ylim(0, max(g.ours_ms.max(), g.published_ms.max()) * 1.25)
    handles, labels = axes[0].get_legend_handles_labels()
    ax = axes[len(groups)]
    err = cmp["error_pct"].to_numpy().reshape(len(groups), len(ALGORITHMS))
    im = ax.imshow(err, cmap="RdBu_r", vmin=-10, vmax=10, aspect="auto")
    for i in range(err.shape[0]):
        for j in range(err.shape[1]):
            ax.text(j, i, f"{err[i, j]:+.1f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(ALGORITHMS)), [SHORT[a] for a in ALGORITHMS], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(groups)), [f"{p} {g}" for (p, g, _), _ in groups], fontsize=8)
    ax.set_title("error vs published (%)")
    fig.colorbar(im, ax=ax, shrink=0.8)
    for a in axes[len(groups) + 1:]:
        a.axis("off")
    axes[-1].legend(handles, labels, loc="center", fontsize=9)
    fig.suptitle("The study's published table reproduced: --profile smpi --study")
    written = []
    for ext in ("png", "pdf"):
        path = out.with_suffix(f".{ext}")
        fig.savefig(path, dpi=110)
        written.append(path)
    plt.close(fig)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(HERE / "configs" / "study_table.toml"), metavar="PATH")
    ap.add_argument("--out", default=str(HERE / "results"), metavar="DIR")
    ap.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: all CPUs)")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address")
    ap.add_argument("--figures-only", action="store_true", help="only redo table and figure from the results")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args()

    from simcollective.errors import SimCollectiveError
    from simcollective.sweeps import read_results, run_sweep

    t0 = time.perf_counter()
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    name = Path(args.config).stem
    out = outdir / f"{name}.csv"
    try:
        df = read_results(out) if args.figures_only else run_sweep(
            args.config, out, workers=args.workers, scheduler=args.scheduler, progress=not args.quiet)
    except SimCollectiveError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    cmp = compare(df)
    cmp.to_csv(outdir / f"{name}_compare.csv", index=False)
    text = markdown(cmp)
    (outdir / f"{name}.md").write_text(text)
    written = figure(cmp, outdir / name)
    print(text)
    print(f"{name}: {out}, {outdir / (name + '.md')}, {', '.join(str(w) for w in written)}; "
          f"{time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
