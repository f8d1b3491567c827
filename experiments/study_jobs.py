"""Job studies: a 3D-parallel transformer step (TP/DP placement compared), a ring allreduce
with one straggler and with one degraded link, two jobs on one fat-tree.

    python experiments/study_jobs.py [--reduced] [--figures-only]

Writes experiments/results/jobs_3d.csv, jobs_faults.csv, jobs_two_jobs.csv and a PNG
each (results/reduced/ with --reduced: smaller machines, seconds); prints how long it took.

* 3D step: :func:`simcollective.jobs.examples.three_d_parallel` on 2-16 DGX H100 nodes
  (TP 8, PP 2, DP nodes / 2; 16 layers, 4 micro-batches; size-only), with TP inside the
  nodes (Megatron's order) against DP inside the nodes and TP across them.
* Faults: a ring allreduce of 64 MiB over the 16 GPUs of 2 DGX H100 nodes; rank 5 late by
  d, or the cable n0/nic0 <-> su0/leaf0 at a fraction of its capacity from t = 0.
* Two jobs: ring allreduces of 16 MiB on the even and the odd hosts of a 16-host fat-tree
  (4 per leaf), each alone and together, at oversubscription 1, 2 and 4, routing ``first``
  (a static table: the lowest spine) and ``hash`` (ECMP).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MiB = 2**20


def _run(table: dict) -> dict:
    from simcollective.jobs import job_from_dict, run_job

    return run_job(job_from_dict(table), alone=False).fields


def study_3d(reduced: bool) -> list:
    from simcollective.jobs.examples import LAYOUTS, three_d_parallel

    rows = []
    for nodes in (2, 4) if reduced else (2, 4, 8, 16):
        for layout in LAYOUTS:
            f = _run(three_d_parallel(nodes=nodes, layers=4 if reduced else 16, microbatches=2 if reduced else 4,
                                      layout=layout, verify="symbolic"))
            dp = [s for s in f["steps"] if s["step"].startswith("dp")]
            tp = [s for s in f["steps"] if s["step"].startswith("tp")]
            rows.append({"nodes": nodes, "gpus": 8 * nodes, "layout": layout, "makespan_s": f["makespan_s"],
                         "tp_time_s": sum(s["time_s"] for s in tp), "dp_time_s": sum(s["time_s"] for s in dp),
                         "messages": f["messages"]})
    return rows


def _ring16(**disturb) -> dict:
    return {"topology": "dgx-h100", "nodes": 2, "profile": "ideal",
            "communicators": {"world": {"rule": "tp", "size": 16}},
            "steps": [{"name": "ar", "communicator": "world", "algorithm": "ring", "bytes": 64 * MiB}], **disturb}


def study_faults(reduced: bool) -> list:
    rows = []
    for d in (0.0, 1e-4, 5e-4) if reduced else (0.0, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3):
        f = _run(_ring16(stragglers=[{"rank": 5, "delay": d}] if d else []))
        rows.append({"kind": "straggler", "value": d, "makespan_s": f["makespan_s"],
                     "cost_s": f.get("cost_s", 0.0)})
    for frac in (1.0, 0.5, 0.1) if reduced else (1.0, 0.75, 0.5, 0.25, 0.1):
        faults = [{"link": "n0/nic0<->su0/leaf0", "capacity": frac}] if frac < 1 else []
        f = _run(_ring16(faults=faults))
        rows.append({"kind": "degraded link", "value": frac, "makespan_s": f["makespan_s"],
                     "cost_s": f.get("cost_s", 0.0)})
    return rows


def _two_jobs(over: float, together: bool, routing: str) -> dict:
    hosts = 16
    even = [0 if i % 2 == 0 else -1 for i in range(hosts)]
    odd = [-1 if c == 0 else 0 for c in even]
    steps = [{"name": "a", "communicator": "a", "algorithm": "ring", "bytes": 16 * MiB}]
    if together:
        steps.append({"name": "b", "communicator": "b", "algorithm": "ring", "bytes": 16 * MiB, "background": True})
    return {"topology": "fat-tree", "nodes": hosts, "profile": "ideal", "routing": routing,
            "topology_opts": {"hosts_per_leaf": 4, "oversubscription": over},
            "communicators": {"a": {"rule": "split", "colour": even}, "b": {"rule": "split", "colour": odd}},
            "steps": steps}


def study_two_jobs(reduced: bool) -> list:
    rows = []
    for over in (1, 4) if reduced else (1, 2, 4):
        for routing in ("first", "hash"):
            f = _run(_two_jobs(over, True, routing))
            rows.append({"oversubscription": over, "routing": routing, "alone_s": f["undisturbed_makespan_s"],
                         "together_s": f["makespan_s"], "slowdown": f["makespan_s"] / f["undisturbed_makespan_s"]})
    return rows


def _write(rows: list, path: Path) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _read(path: Path) -> list:
    def value(v: str):
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                pass
        return v
    with path.open() as fh:
        return [{k: value(v) for k, v in row.items()} for row in csv.DictReader(fh)]


def _figures(out: Path, r3d: list, rfaults: list, rtwo: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for layout in sorted({r["layout"] for r in r3d}):
        pts = [r for r in r3d if r["layout"] == layout]
        ax.plot([r["gpus"] for r in pts], [r["makespan_s"] * 1e3 for r in pts], "o-", label=layout)
    ax.set(xscale="log", xlabel="GPUs (DGX H100, TP 8, PP 2, DP = nodes / 2)", ylabel="step time (ms)",
           title="3D-parallel step: TP inside the nodes or across them")
    ax.minorticks_off()
    ax.set_xticks(sorted({r["gpus"] for r in r3d}), [str(g) for g in sorted({r["gpus"] for r in r3d})])
    ax.set_ylim(0, None)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "jobs_3d.png", dpi=120)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    s = [r for r in rfaults if r["kind"] == "straggler"]
    a1.plot([r["value"] * 1e6 for r in s], [r["cost_s"] * 1e6 for r in s], "o-", label="cost")
    a1.plot([r["value"] * 1e6 for r in s], [r["value"] * 1e6 for r in s], "k:", label="cost = delay")
    a1.set(xlabel="rank 5 late by (us)", ylabel="allreduce cost (us)", title="ring allreduce 64 MiB, 16 GPUs")
    a1.legend()
    d = [r for r in rfaults if r["kind"] == "degraded link"]
    a2.plot([r["value"] for r in d], [r["makespan_s"] * 1e3 for r in d], "o-")
    a2.set(xlabel="capacity left on n0/nic0 <-> su0/leaf0", ylabel="allreduce time (ms)", xscale="log",
           title="one degraded NIC cable")
    fig.tight_layout()
    fig.savefig(out / "jobs_faults.png", dpi=120)

    fig, ax = plt.subplots(figsize=(6, 4))
    x = range(len(rtwo))
    ax.bar([i - 0.2 for i in x], [r["alone_s"] * 1e3 for r in rtwo], 0.4, label="job A alone")
    ax.bar([i + 0.2 for i in x], [r["together_s"] * 1e3 for r in rtwo], 0.4, label="with job B")
    ax.set_xticks(list(x), [f"{r['oversubscription']}:1\n{r['routing']}" for r in rtwo])
    ax.set(xlabel="fat-tree oversubscription (16 hosts, 4 per leaf)", ylabel="ring allreduce 16 MiB (ms)",
           title="two jobs on one fat-tree")
    ax.set_ylim(0, 1.3 * max(r["together_s"] for r in rtwo) * 1e3)
    ax.legend(loc="upper left", ncols=2)
    fig.tight_layout()
    fig.savefig(out / "jobs_two_jobs.png", dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reduced", action="store_true", help="smaller machines (seconds)")
    ap.add_argument("--figures-only", action="store_true", help="redraw the figures from the CSV tables")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE.parent))
    out = HERE / "results" / ("reduced" if args.reduced else "")
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.figures_only:
        _figures(out, *(_read(out / f"{name}.csv") for name in ("jobs_3d", "jobs_faults", "jobs_two_jobs")))
        print(f"redrew {out}/jobs_*.png")
        return 0
    r3d, rfaults, rtwo = study_3d(args.reduced), study_faults(args.reduced), study_two_jobs(args.reduced)
    for name, rows in (("jobs_3d", r3d), ("jobs_faults", rfaults), ("jobs_two_jobs", rtwo)):
        _write(rows, out / f"{name}.csv")
        print(f"{name}:")
        for r in rows:
            print("  " + ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    _figures(out, r3d, rfaults, rtwo)
    print(f"wrote {out}/jobs_*.csv and .png in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
