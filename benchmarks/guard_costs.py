"""Measure the per-algorithm costs the run guard estimates from, and write them as
``simcollective/guard_table.json`` (read by :mod:`simcollective.guard_table`).

Each measurement is one run in a fresh subprocess (its peak RSS is the process's
``ru_maxrss``), on ABCI (4 GPUs per node), float32:

* ``sym``: size-only data (dense) or the sparse workload at 128 ranks, 1M elements
  (sparse: density 1/256): wall seconds per message and bytes of memory per rank;
* ``full`` and ``small``: full data at 32 ranks, 2M elements, against size-only data at the
  same ranks (dense), or the sparse workload at 32 ranks, 8M elements, density 1/64, against
  1M elements, density 1/256: wall seconds per byte of data (``P x n x itemsize`` dense, the
  sparse data term of :func:`simcollective.memory.sparse_data_bytes`).

The peak memory ``fixed + P x per_rank + factor x data`` is fitted through the three peaks
(:func:`fit`); alltoall and reduce-scatter, whose count is per peer or per rank, run 1/16
and 1/128 of those counts.

Algorithms that cannot run on that machine (NVLS needs NVSwitch multicast) are measured on
dgx-h100 with the same rank counts.

* ``long`` (NCCL's algorithms): the ``sym`` run on the SimPy path with 16 times the
  elements: NCCL cuts the data into chunks, so the run has many more messages and its seconds
  per message (CPU) weigh the run's fixed costs (NCCL's search, routes) less; at 1M elements
  NCCL's tree sends 2,032 messages, whose cost per message was ten times that of a 16,384-GPU run;
* ``compiled`` and ``compiled-dgx``: the ``sym`` run of a dense algorithm on the compiled path
  (``--engine compiled``, the compiled loop loaded by a small run first), on ABCI and on
  dgx-h100 (16 nodes, 128 GPUs: NCCL's choice there is NVLS or NVLSTree, which react to the
  first message and cannot be recorded): seconds per message (CPU seconds of the run, which a
  loaded machine moves less than wall) where the algorithm records on both, else none (the
  guard then estimates a run from the SimPy path's figure). Run: ``python -m benchmarks.guard_costs`` (about ten
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
if cfg.get("engine") == "compiled":   # the compiled loop loaded first: its load is not a cost per message
    run(RunConfig(topology="abci", nodes=1, algorithm="ring", elements=1024, verify="symbolic", engine="compiled"))
from simcollective.memory import sparse_data_bytes
c = RunConfig(**cfg)
p = resolve(c)
cpu = time.process_time()
r = run(c)
cpu = time.process_time() - cpu
j = r.to_json()
data = (sparse_data_bytes(p.P, p.n, p.dtype.itemsize, p.k) if p.algo.kind == "sparse"
        else p.P * p.n * p.dtype.itemsize)
print(json.dumps({"messages": j["messages"], "events": j["events"], "wall_s": j["wall_s"], "cpu_s": cpu,
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
                "small": {**base, "nodes": nodes[1], "elements": 2**20, "density": 1 / 256},
                # allgather: every rank holds all P streams (P x N): 4M, not 32M, elements
                "wide": {**base, "nodes": nodes[1], "elements": (4 if collective == "allgather" else 32) * 2**20,
                         "density": 1 / 1024}}
    return {"sym": {**base, "nodes": nodes[0], "elements": 2**20, "verify": "symbolic"},
            "full": {**base, "nodes": nodes[1], "elements": 2 * 2**20, "verify": "full"},
            "small": {**base, "nodes": nodes[1], "elements": 2 * 2**20, "verify": "symbolic"}}


DENSITY = {"sym": 1 / 256, "small": 1 / 256, "full": 1 / 64, "wide": 1 / 1024}


def _features(run: dict, kind: str, name: str) -> list:
    """``[1, P, data]`` of a dense run (data ``P x n x 4`` with full data, else 0); ``[1, P,
    inputs, N x 4]`` of a sparse one (inputs ``P x k x (4 + 8)``)."""
    if kind == "sparse":
        return [1.0, run["P"], run["P"] * int(run["n"] * DENSITY[name]) * 12, run["n"] * 4]
    return [1.0, run["P"], run["P"] * run["n"] * 4 if name == "full" else 0]


def fit(runs: dict, kind: str) -> dict:
    """The row of one algorithm from its runs: peak memory ``fixed + P x per_rank +
    data_factor x data`` (dense) or ``fixed + P x per_rank + data_factor x inputs +
    element_factor x N x itemsize`` (sparse), solved through the measured peaks (negative
    parts set to 0); seconds per message (:func:`_per_message`; on the compiled path:
    :func:`_compiled_per_message`) and per byte of data (full minus small)."""
    import numpy as np

    names = ("sym", "small", "full", "wide") if kind == "sparse" else ("sym", "small", "full")
    a = np.array([_features(runs[k], kind, k) for k in names])
    coef = [max(0.0, float(v)) for v in np.linalg.lstsq(a, np.array([float(runs[k]["rss"]) for k in names]),
                                                        rcond=None)[0]]
    sym, small, full = (runs[k] for k in ("sym", "small", "full"))
    extra = sum(_features(full, kind, "full")[2:]) - sum(_features(small, kind, "small")[2:])
    return {"fixed_bytes": round(coef[0]), "bytes_per_rank": round(coef[1]), "data_factor": round(coef[2], 4),
            "element_factor": round(coef[3], 4) if kind == "sparse" else 0.0,
            "wall_per_message": _per_message(runs),
            "events_per_message": round(sym["events"] / max(1, sym["messages"]), 4),
            "wall_per_data_byte": round(max(0.0, full["wall_s"] - small["wall_s"]) / max(1, extra), 13),
            "compiled_wall_per_message": _compiled_per_message(runs)}


def _per_message(runs: dict) -> float:
    """Wall seconds per message on the SimPy path: of the ``long`` run where it has at least
    four times the messages of ``sym`` (CPU seconds), else of ``sym``."""
    sym, long = runs["sym"], runs.get("long")
    if long and long["messages"] >= 4 * sym["messages"]:
        return round(long.get("cpu_s", long["wall_s"]) / long["messages"], 9)
    return round(sym["wall_s"] / max(1, sym["messages"]), 9)


def _compiled_per_message(runs: dict) -> float | None:
    """Wall seconds per message on the compiled path, the larger of the two machines', where
    the algorithm recorded on both; else None."""
    measured = [runs.get(k) for k in ("compiled", "compiled-dgx")]
    if not all(measured):
        return None
    return round(max(r.get("cpu_s", r["wall_s"]) / max(1, r["messages"]) for r in measured), 9)


def _optional_configs(collective: str, name: str, kind: str, topo: str) -> dict:
    """The ``sym`` run on the compiled path, on ABCI and on dgx-h100 (dense algorithms), and
    NCCL's on the SimPy path with 16 times the data (``long``: NCCL cuts it into chunks, so
    the messages grow with it and the run's fixed costs weigh less on each)."""
    if kind == "sparse":
        return {}
    runs = {key: {**_configs(collective, name, kind, machine)["sym"], "engine": "compiled"}
            for key, machine in (("compiled", "abci"), ("compiled-dgx", "dgx-h100"))}
    if name.startswith("nccl"):
        sym = _configs(collective, name, kind, topo)["sym"]
        runs["long"] = {**sym, "elements": 16 * sym["elements"], "engine": "simpy"}
    return runs


def _kept(run: dict | None):
    """The fields of a run kept in the raw file (``False``: it failed)."""
    if not run:
        return False
    return {f: run[f] for f in ("messages", "events", "P", "n", "rss", "wall_s", "cpu_s") if f in run}


def _measure_algorithm(algo, have: dict | None = None) -> dict | None:
    """The runs of one algorithm (``have``: runs measured before, only the missing ones run;
    the compiled runs are optional: ``False`` where the algorithm does not record)."""
    have = have or {}
    for topo in [have["topology"]] if have else ("abci", "dgx-h100"):
        runs = {key: have.get(key) or measure_one(cfg)
                for key, cfg in _configs(algo.collective, algo.name, algo.kind, topo).items()}
        if all(runs.values()):
            runs.update({key: have[key] if key in have else measure_one(cfg)
                         for key, cfg in _optional_configs(algo.collective, algo.name, algo.kind, topo).items()})
            return {"topology": topo, "kind": algo.kind, **{k: _kept(v) for k, v in runs.items()}}
    return None


def main(argv=None) -> int:
    """``python -m benchmarks.guard_costs [--refit | --missing] [COLLECTIVE ...]``: measure every
    algorithm (or those of the collectives named, the others kept from the last measurement),
    fit the table and write it; ``--refit``: fit again from the committed runs, measuring
    nothing; ``--missing``: measure only the runs the committed file lacks."""
    from simcollective.algorithms import load_all
    from simcollective.algorithms.registry import REGISTRY

    argv = list(sys.argv[1:] if argv is None else argv)
    refit, missing = "--refit" in argv, "--missing" in argv
    argv = [a for a in argv if a not in ("--refit", "--missing")]
    load_all()
    root = Path(__file__).resolve().parent.parent
    raw_path = root / "benchmarks" / "guard_costs.json"
    old = json.loads(raw_path.read_text()) if raw_path.exists() else {"runs": {}}
    if refit:
        base, raw = old["base_rss"], old["runs"]
    else:
        base = json.loads(subprocess.run([sys.executable, "-c", NULL_CHILD], capture_output=True, text=True,
                                         check=True).stdout)["rss"]
        raw = {k: v for k, v in old["runs"].items() if missing or argv and k.split("/")[0] not in argv}
        for (collective, name), algo in sorted(REGISTRY.items()):
            if argv and collective not in argv:
                continue
            runs = _measure_algorithm(algo, old["runs"].get(f"{collective}/{name}") if missing else None)
            print(f"{collective:<15} {name:<26} {'failed' if runs is None else runs['topology']}", flush=True)
            if runs is not None:
                raw[f"{collective}/{name}"] = runs
                raw_path.write_text(json.dumps({"base_rss": base, "runs": dict(sorted(raw.items()))}, indent=1) + "\n")
    need = {"dense": {"sym", "small", "full"}, "sparse": {"sym", "small", "full", "wide"}}
    table = {tuple(k.split("/")): {"topology": v["topology"], **fit(v, v["kind"])} for k, v in sorted(raw.items())
             if need[v["kind"]] <= set(v)}
    _write_table(root / "simcollective" / "guard_table.json", base, table)
    raw_path.write_text(json.dumps({"base_rss": base, "runs": dict(sorted(raw.items()))}, indent=1) + "\n")
    return 0


def _write_table(path: Path, base: int, table: dict) -> None:
    old = json.loads(path.read_text()) if path.exists() else {}
    doc = {"about": old.get("about", "measured per-algorithm costs of the run guard"), "base_rss": base,
           "costs": {f"{c}/{n}": row for (c, n), row in sorted(table.items())}}
    path.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
