"""Measure the per-algorithm costs the run guard estimates from, and write them as
``simcollective/guard_table.py``.

Each measurement is one run in a fresh subprocess (its peak RSS is the process's
``ru_maxrss``), on ABCI (4 GPUs per node), float32:

* ``sym``: size-only data (dense) or the sparse workload at 128 ranks, 1M elements
  (sparse: density 1/256): wall seconds per message and bytes of memory per rank;
* ``full`` and ``small``: full data at 32 ranks, 2M elements, against size-only data at the
  same ranks (dense), or the sparse workload at 32 ranks, 8M elements, density 1/64: bytes
  of memory and wall seconds per byte of data (``P x n x itemsize`` dense, the sparse data
  term of :func:`simcollective.memory.sparse_data_bytes`).

Algorithms that cannot run on that machine (NVLS needs NVSwitch multicast) are measured on
dgx-h100 with the same rank counts. Run: ``python -m benchmarks.guard_costs`` (about ten
minutes on one core).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

__all__ = ["measure_one", "main"]

CHILD = r"""
import json, resource, sys, time
cfg = json.loads(sys.argv[1])
from simcollective.simulate import RunConfig, resolve, run
from simcollective.memory import sparse_data_bytes
c = RunConfig(**cfg)
p = resolve(c)
r = run(c)
j = r.to_json()
data = (sparse_data_bytes(p.P, p.n, p.dtype.itemsize, p.k) if p.algo.kind == "sparse"
        else p.P * p.n * p.dtype.itemsize)
print(json.dumps({"messages": j["messages"], "events": j["events"], "wall_s": j["wall_s"],
                  "P": p.P, "n": p.n, "data": data, "mode": p.mode,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""

NULL_CHILD = r"""
import json, resource
from simcollective.simulate import RunConfig, run
run(RunConfig(topology="abci", nodes=1, algorithm="ring", elements=1024, verify="symbolic"))
print(json.dumps({"rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def measure_one(cfg: dict) -> dict | None:
    """One run in a subprocess: its report's counts and its peak RSS; ``None`` if it fails."""
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg)], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def _configs(collective: str, name: str, kind: str, topo: str) -> dict:
    nodes = {"abci": (32, 8), "dgx-h100": (16, 4)}[topo]
    base = {"topology": topo, "collective": collective, "algorithm": name, "seed": 1}
    if collective in ("alltoall", "reduce-scatter"):   # a count per peer / per rank: P x it per rank
        return {"sym": {**base, "nodes": nodes[0], "elements": 2**13, "verify": "symbolic"},
                "full": {**base, "nodes": nodes[1], "elements": 2**16, "verify": "full"},
                "small": {**base, "nodes": nodes[1], "elements": 2**16, "verify": "symbolic"}}
    if kind == "sparse":
        return {"sym": {**base, "nodes": nodes[0], "elements": 2**20, "density": 1 / 256},
                "full": {**base, "nodes": nodes[1], "elements": 8 * 2**20, "density": 1 / 64},
                "small": {**base, "nodes": nodes[1], "elements": 2**20, "density": 1 / 256}}
    return {"sym": {**base, "nodes": nodes[0], "elements": 2**20, "verify": "symbolic"},
            "full": {**base, "nodes": nodes[1], "elements": 2 * 2**20, "verify": "full"},
            "small": {**base, "nodes": nodes[1], "elements": 2 * 2**20, "verify": "symbolic"}}


def _measure_algorithm(algo, base_rss: int) -> dict | None:
    for topo in ("abci", "dgx-h100"):
        runs = {key: measure_one(cfg) for key, cfg in _configs(algo.collective, algo.name, algo.kind, topo).items()}
        if all(runs.values()):
            break
    else:
        return None
    sym, full, small = runs["sym"], runs["full"], runs["small"]
    return {
        "topology": topo,
        "wall_per_message": sym["wall_s"] / max(1, sym["messages"]),
        "events_per_message": sym["events"] / max(1, sym["messages"]),
        "bytes_per_rank": max(0, sym["rss"] - base_rss) / sym["P"],
        "data_factor": max(0, full["rss"] - small["rss"]) / full["data"],
        "wall_per_data_byte": max(0.0, full["wall_s"] - small["wall_s"]) / full["data"],
        "measured": {k: {"messages": v["messages"], "P": v["P"], "n": v["n"], "rss": v["rss"], "wall_s": v["wall_s"]}
                     for k, v in runs.items()},
    }


def main(argv=None) -> int:
    """``python -m benchmarks.guard_costs [COLLECTIVE ...]``: measure every algorithm (or those
    of the collectives named, merged into the table written before)."""
    from simcollective.algorithms import load_all
    from simcollective.algorithms.registry import REGISTRY
    from simcollective.guard_table import COSTS

    argv = sys.argv[1:] if argv is None else argv
    load_all()
    base = json.loads(subprocess.run([sys.executable, "-c", NULL_CHILD], capture_output=True, text=True,
                                     check=True).stdout)["rss"]
    root = Path(__file__).resolve().parent.parent
    raw_path = root / "benchmarks" / "guard_costs.json"
    table = {k: v for k, v in COSTS.items() if argv and k[0] not in argv}
    raw = {k: v for k, v in json.loads(raw_path.read_text())["runs"].items()
           if argv and k.split("/")[0] not in argv} if raw_path.exists() and argv else {}
    for (collective, name), algo in sorted(REGISTRY.items()):
        if argv and collective not in argv:
            continue
        row = _measure_algorithm(algo, base)
        print(f"{collective:<15} {name:<26} {'failed' if row is None else row['topology']}", flush=True)
        if row is None:
            continue
        raw[f"{collective}/{name}"] = row.pop("measured")
        table[(collective, name)] = {k: (round(v, 12) if isinstance(v, float) else v) for k, v in row.items()}
    _write_table(root / "simcollective" / "guard_table.py", base, dict(sorted(table.items())))
    raw_path.write_text(json.dumps({"base_rss": base, "runs": dict(sorted(raw.items()))}, indent=1) + "\n")
    return 0


def _write_table(path: Path, base: int, table: dict) -> None:
    lines = ['"""The measured per-algorithm costs the run guard estimates from (generated by',
             "``python -m benchmarks.guard_costs``, which documents the measurement; its raw runs are in",
             '``benchmarks/guard_costs.json``). Do not edit by hand: rerun the script."""', "",
             '__all__ = ["BASE_RSS", "COSTS"]', "", "#: peak RSS of a tiny run (the interpreter, NumPy, SimPy, NetworkX)",
             f"BASE_RSS = {base}", "",
             "#: (collective, algorithm) -> wall_per_message (s), events_per_message, bytes_per_rank,",
             "#: data_factor (peak bytes per byte of data), wall_per_data_byte (s), the machine measured on",
             "COSTS = {"]
    for key, row in table.items():
        lines.append(f"    {key!r}: {row!r},")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
