"""One point of a sweep: the run configuration it stands for, its simulation, its row.

Points that are the same run once the inputs their algorithm does not use are dropped
(:func:`effective`) form one group, simulated once (:func:`group_points`, :func:`run_group`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict

from ..errors import UserInputError
from ..parsing import check_exclusive
from ..run_config import SCHEMA_VERSION
from .config import ALGO_OPTIONS, DEFAULTS, SPARSE_ONLY, opts_dict, resolve_path
from .grid import resolve_auto_nodes

__all__ = ["effective", "run_point", "run_group", "group_points", "failed_rows", "ECHO_KEYS", "RESOLVED_KEYS"]

#: ``run --json`` keys that only repeat an input: not repeated in the table
ECHO_KEYS = ("algorithm", "topology", "nodes", "elements", "seed", "workload", "placement", "collective")
#: ``run --json`` keys that share an input's name but are resolved by the run
RESOLVED_KEYS = ("density", "k", "dtype", "profile", "root", "routing", "timing", "study")

#: inputs passed to the run only when a point sets them
_WHEN_GIVEN = ("collective", "root", "bytes", "timing", "study", "engine", "nccl_version", "moe")


def effective(point: dict, base: str):
    """(RunConfig keyword arguments, names of inputs not passed to the algorithm)."""
    from ..algorithms import load_all
    from ..algorithms.registry import REGISTRY

    load_all()
    algo = REGISTRY.get((point.get("collective") or "allreduce", point["algorithm"]))
    ignored = []
    kw = {
        "topology": point["topology"],
        "nodes": point["nodes"],
        "topology_opts": opts_dict(point["topology_opts"] or ""),
        "topology_file": resolve_path(point["topology_file"], base),
        "algorithm": point["algorithm"],
        "elements": point["elements"],
        "gpus": point["gpus"],
        "dtype": point["dtype"],
        "profile": point["profile"],
        "placement": point["placement"],
        "routing": point["routing"],
        "seed": point["seed"],
        "verify": point["verify"],
        "memory_budget": point["memory_budget"],
    }
    if kw["elements"] is None:
        del kw["elements"]
    # set only when given (defaults: the run's: allreduce, simultaneous timing, engine auto,
    # the newest NCCL release); moe: alltoallv's seeded MoE gate
    kw.update({key: point[key] for key in _WHEN_GIVEN if point.get(key) is not None})
    if point.get("sizes") is not None:
        kw["sizes"] = resolve_path(point["sizes"], base)
    if kw["placement"] not in ("auto", "linear", "study"):
        kw["placement"] = resolve_path(kw["placement"], base)
    dense = algo is not None and algo.kind == "dense"
    for key in SPARSE_ONLY:
        value = point[key]
        if dense:
            if value is not None and value != DEFAULTS[key]:
                ignored.append(key)
            continue
        kw[key] = resolve_path(value, base) if key == "inputs" else value
    options = {}
    for key in ALGO_OPTIONS:
        value = point.get(key)
        if value is None:
            continue
        if algo is not None and key not in algo.options:
            ignored.append(key)
            continue
        options[key] = value
    kw["options"] = options
    return kw, ignored



def _effective_key(kw: dict) -> str:
    text = json.dumps(kw, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _flatten_report(js: dict) -> dict:
    out = {}
    for key, value in js.items():
        if key in ECHO_KEYS or key in ("links", "sim_wall_s"):  # too long / host-dependent
            continue
        if key in RESOLVED_KEYS:
            out[f"out_{key}"] = value
        elif key == "phases":
            for name, t in value.items():
                out[f"phase_{name}"] = t
        elif key == "bytes_by_link_type":
            for name, b in value.items():
                out[f"bytes_{name}"] = b
        elif key == "moe" and isinstance(value, dict):   # the gate's figures: the input keeps "moe"
            for name, v in value.items():
                out[f"moe_{name}"] = v
        elif key in ("options", "top_links"):
            out[key] = json.dumps(value, sort_keys=True)
        elif isinstance(value, (dict, list)):
            out[key] = json.dumps(value, sort_keys=True, default=str)
        else:
            out[key] = value
    return out


def _run_config(kw: dict) -> dict:
    """Simulate one effective configuration; returns the flattened outputs (never raises)."""
    from ..simulate import RunConfig, run_allreduce

    t0 = time.perf_counter()
    try:
        if kw.get("nodes") == "auto" or kw.get("nodes") is None:
            raise UserInputError("nodes = \"auto\": cannot tell GPUs per node of this topology")
        check_exclusive(kw.get("density"), kw.get("k"), ("density", "k"))
        check_exclusive(kw.get("elements"), kw.get("bytes"), ("elements", "bytes"))
        report = run_allreduce(RunConfig(**kw))
        out = {"ok": True, "error": None}
        out.update(_flatten_report(report.to_json()))
        return out
    except Exception as exc:   # any failure is the point's result, the sweep goes on
        msg = " ".join(str(exc).split()) or repr(exc)
        return {"ok": False, "error": f"{type(exc).__name__}: {msg}", "wall_s": time.perf_counter() - t0}


def run_point(point: dict, base: str = ".") -> dict:
    """Run one point of :func:`expand_grid` and return its table row (never raises)."""
    return run_group([point], base)[0]


def run_group(points: list, base: str) -> list:
    """Rows of points that share one effective configuration (simulated once)."""
    rows = []
    try:
        first = resolve_auto_nodes(points[0], base)
        kw, _ = effective(first, base)
        result = _run_config(kw)
    except Exception as exc:
        msg = " ".join(str(exc).split())
        result = {"ok": False, "error": f"{type(exc).__name__}: {msg}", "wall_s": 0.0}
    for p in points:
        try:
            ignored = effective(resolve_auto_nodes(p, base), base)[1]
        except Exception:
            ignored = []
        row = dict(p)
        if row.get("nodes") == "auto" and result.get("ok"):
            row["nodes"] = resolve_auto_nodes(p, base)["nodes"]
        row["ignored"] = ",".join(ignored) or None
        row.update(result)
        row.setdefault("schema_version", SCHEMA_VERSION)       # failed rows too (docs/schema.md)
        rows.append(row)
    return rows



def group_points(points: list, base: str) -> list:
    """Points grouped by effective configuration (simulated once per group)."""
    groups: OrderedDict = OrderedDict()
    for p in points:
        try:
            kw, _ = effective(resolve_auto_nodes(p, base), base)
            ek = _effective_key(kw)
        except Exception:
            ek = "point-" + p["key"]
        groups.setdefault(ek, []).append(p)
    return list(groups.values())



def failed_rows(points, error):
    rows = []
    for p in points:
        row = dict(p)
        row.update({"ignored": None, "ok": False, "error": error, "wall_s": 0.0})
        rows.append(row)
    return rows

