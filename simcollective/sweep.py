"""Parameter sweeps: a TOML grid of runs, executed in parallel, collected in one tidy table.

``simcollective sweep CONFIG.toml [--out results.csv] [--workers N] [--scheduler ADDRESS]``

The configuration file is data (read with :mod:`tomllib`, validated, never executed)::

    name = "smoke"                       # optional
    description = "a tiny end-to-end check"

    [fixed]                              # the same for every point
    topology = "abci"
    profile = "ideal"

    [grid]                               # lists: the sweep is their cartesian product
    nodes = [1, 2]
    algorithm = ["ring", "ring-ring"]
    elements = ["64K", "1M"]             # sizes accept K/M/G suffixes

Several ``[[grid]]`` blocks (an array of tables) make a sweep the union of their products,
each block combined with ``[fixed]``. Keys are the fields of one ``simcollective run``, named
as in :data:`INPUT_KEYS` (``-`` and ``_`` are interchangeable); ``density`` accepts ``"1/128"``;
``topology_opts`` is a table (``{oversubscription = 3}``) or ``"key=value,..."``;
``nodes = "auto"`` means ``ceil(gpus / gpus_per_node)`` of the topology. An unknown key
is an error that names it and lists the allowed ones. ``collective`` (default allreduce),
``root`` and ``bytes`` (the nccl-tests size, instead of ``elements``) are those of
``simcollective run``; in a grid, ``elements``, ``bytes`` and ``gpus`` also accept a range
``{from = "8", to = "128M", factor = 2}`` (or ``step = N``), ``to`` included when reached.
The ``bytes`` column of a row holds the size that was run (nccl-tests rounds per-rank
shares down to 16 bytes).

Inputs that do not apply to a point's algorithm are not passed to it (``density``, ``k``,
``workload``, ``overlap``, ``inputs`` for dense algorithms; ``group_size``, ``chunk_size``,
``allgather``, ``densify``, ``resparsify`` for algorithms that do not declare them): the
row keeps the grid value, and its ``ignored`` column names them. Points that are the same
run once this is applied are simulated once.

The table has one row per point: ``key`` (a hash of the point's inputs), every input
column, ``ok``, ``error``, ``ignored``, then every key of ``run --json``: ``phases`` is
flattened into ``phase_<name>`` columns, ``bytes_by_link_type`` into ``bytes_<type>``,
``options`` and ``top_links`` are JSON strings; run keys that repeat an input are not
repeated (``algorithm, topology, nodes, elements, seed, workload, placement``) except
those the run resolves, which become ``out_density, out_k, out_dtype, out_profile``,
``out_routing, out_timing, out_study`` (``study = true`` resolves routing and timing to
``study``). ``timing`` and ``study`` left unset keep the point keys of older tables.
``wall_s`` (host seconds) is the only column that depends on the machine or executor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported lazily, where it is used
    import pandas as pd

import argparse
import hashlib
import itertools
import json
import math
import os
import sys
import time
import tomllib
from collections import OrderedDict
from pathlib import Path

from .errors import UserInputError
from .simulate import DEFAULT_MEMORY_BUDGET
from .units import parse_float, parse_fraction, parse_size

__all__ = [
    "INPUT_KEYS", "DEFAULTS", "load_config", "expand_grid", "point_key", "run_point", "run_sweep",
    "read_results", "write_results", "add_parser",
]

#: The inputs of one point, in table column order.
INPUT_KEYS = (
    "topology", "topology_opts", "topology_file", "nodes", "gpus", "algorithm", "elements", "dtype",
    "density", "k", "workload", "overlap", "inputs", "profile", "placement", "routing", "seed",
    "group_size", "chunk_size", "allgather", "densify", "resparsify", "verify", "memory_budget",
    "collective", "root", "bytes",
    "timing", "study",
)
#: Values of the inputs a configuration does not set (those of ``simcollective run``).
DEFAULTS = {
    "topology": "abci", "topology_opts": None, "topology_file": None, "nodes": 1, "gpus": None,
    "algorithm": None, "elements": None, "dtype": "float32", "density": None, "k": None,
    "workload": "uniform", "overlap": 0.0, "inputs": None, "profile": "ideal", "placement": "linear",
    "routing": "first", "seed": 1, "group_size": None, "chunk_size": None, "allgather": None,
    "densify": None, "resparsify": None, "verify": "auto", "memory_budget": DEFAULT_MEMORY_BUDGET,
    "collective": None, "root": None, "bytes": None,   # None: allreduce, its root rule, size from elements
    # None = the run's default (simultaneous / false), and keeps the keys of older tables
    "timing": None, "study": None,
}
#: keys whose grid values may be a range ``{from = "8", to = "128M", factor = 2}`` (or ``step = N``)
RANGE_KEYS = ("elements", "bytes", "gpus")
REQUIRED = ("algorithm", "elements")
SPARSE_ONLY = ("density", "k", "workload", "overlap", "inputs")
ALGO_OPTIONS = ("group_size", "chunk_size", "allgather", "densify", "resparsify")
TOP_LEVEL = ("name", "description", "fixed", "grid")
#: ``run --json`` keys that only repeat an input: not repeated in the table
ECHO_KEYS = ("algorithm", "topology", "nodes", "elements", "seed", "workload", "placement", "collective")
#: ``run --json`` keys that share an input's name but are resolved by the run
RESOLVED_KEYS = ("density", "k", "dtype", "profile", "root", "routing", "timing", "study")
STATUS_COLUMNS = ("ok", "error", "ignored")

EPILOG = """\
configuration format (TOML; data only, never executed):

  name = "smoke"                  # optional, also: description
  [fixed]                         # scalars shared by every point
  topology = "abci"
  profile = "ideal"
  [grid]                          # lists; the sweep is their cartesian product
  nodes = [1, 2]
  algorithm = ["ring", "ring-ring"]
  elements = ["64K", "1M"]        # sizes accept K, M, G suffixes
  density = ["1/128"]             # fractions accepted

  Use [[grid]] blocks (array of tables) for a union of several products.
  keys: """ + ", ".join(INPUT_KEYS) + """
  nodes = "auto" uses ceil(gpus / GPUs per node of the topology).
  collective = ["allgather"]; bytes = {from = "8", to = "128M", factor = 2} (ranges
  also for elements and gpus; step = N adds instead of multiplying).
  topology_opts = {oversubscription = 3} (or a list of such tables in a grid).
  Relative topology_file/inputs/placement paths are relative to the config file.
  Inputs an algorithm does not use are not passed to it (column 'ignored').

output: one row per point (CSV, or Parquet if --out ends in .parquet); rows are
written as points finish (atomically) and a re-run skips points already in the
file, so an interrupted sweep resumes where it stopped. A point that fails is
recorded with ok=False and its error; the sweep goes on and exits 0, printing
the number of failed points (exit 2 only for a bad configuration or out file).
"""


# -- configuration ---------------------------------------------------------------------------

def _norm_key(key: str) -> str:
    return str(key).strip().replace("-", "_")


def _opts_string(value, where: str) -> str:
    if value is None or value == "":
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, str):
        items = []
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if "=" not in part:
                raise UserInputError(f"{where}: {part!r} must be KEY=VALUE")
            k, v = part.split("=", 1)
            items.append((k.strip(), v.strip()))
    else:
        raise UserInputError(f"{where}: {value!r} must be a table like {{oversubscription = 3}} or 'key=value,...'")
    out = []
    for k, v in items:
        if isinstance(v, (dict, list)):
            raise UserInputError(f"{where}: option {k!r} has a non-scalar value {v!r}")
        v = str(v).lower() if isinstance(v, bool) else str(v)
        out.append(f"{_norm_key(k)}={v}")
    return ",".join(sorted(out)) or None


def _opts_dict(text: str) -> dict:
    return dict(part.split("=", 1) for part in text.split(",")) if text else {}


def _int_value(value, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool):
        raise UserInputError(f"{where}: {value!r} is not an integer")
    try:
        v = int(value) if isinstance(value, int) else int(str(value).strip())
    except ValueError:
        raise UserInputError(f"{where}: {value!r} is not an integer") from None
    if minimum is not None and v < minimum:
        raise UserInputError(f"{where}: {v} must be >= {minimum}")
    return v


def _str_value(value, where: str) -> str:
    if not isinstance(value, str):
        raise UserInputError(f"{where}: {value!r} must be a string")
    return value


def _bool_value(value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1", "on"):
        return True
    if text in ("false", "no", "0", "off"):
        return False
    raise UserInputError(f"{where}: {value!r} must be true or false")


def _parse_value(key: str, value, where: str):
    """Normalize one input value (raises UserInputError naming ``where``)."""
    if value is None:
        return None
    if key == "topology_opts":
        return _opts_string(value, where)
    if key == "nodes":
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return _int_value(value, where, 1)
    if key == "root":
        return _int_value(value, where, 0)
    if key in ("gpus", "group_size"):
        return _int_value(value, where, 1)
    if key == "seed":
        return _int_value(value, where)
    if key in ("elements", "k", "chunk_size", "memory_budget", "bytes"):
        v = parse_size(value, where)
        if key in ("elements", "k", "chunk_size", "bytes") and v < 1:
            raise UserInputError(f"{where}: {value!r} must be >= 1")
        return v
    if key == "density":
        return parse_fraction(value, where)
    if key == "overlap":
        v = parse_float(value, where, 0.0)
        if v > 1:
            raise UserInputError(f"{where}: {value!r} must be in [0, 1]")
        return v
    if key in ("resparsify", "study"):
        return _bool_value(value, where)
    return _str_value(value, where)


def _check_keys(table: dict, where: str) -> dict:
    out = {}
    for raw, value in table.items():
        key = _norm_key(raw)
        if key not in INPUT_KEYS:
            raise UserInputError(f"unknown key {raw!r} in {where}; allowed: {', '.join(INPUT_KEYS)}")
        if key in out:
            raise UserInputError(f"key {raw!r} given twice in {where}")
        out[key] = value
    return out


def load_config(config) -> dict:
    """Read and validate a sweep configuration (a TOML path or an already parsed dict).

    Returns ``{"name", "description", "fixed": {key: value}, "grids": [{key: [values]}],
    "base": directory for relative paths}`` with every value normalized.
    """
    base = Path.cwd()
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        try:
            with open(path, "rb") as fh:
                raw = tomllib.load(fh)
        except FileNotFoundError:
            raise UserInputError(f"sweep config {str(path)!r} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise UserInputError(f"sweep config {str(path)!r} is not valid TOML: {exc}") from None
        base = path.resolve().parent
        default_name = path.stem
    elif isinstance(config, dict):
        raw = config
        default_name = "sweep"
    else:
        raise UserInputError(f"a sweep config is a TOML file path or a dict, not {type(config).__name__}")
    for key in raw:
        if key not in TOP_LEVEL:
            raise UserInputError(f"unknown top-level key {key!r} in the sweep config; allowed: {', '.join(TOP_LEVEL)}")
    name = raw.get("name", default_name)
    if not isinstance(name, str):
        raise UserInputError(f"name {name!r} must be a string")
    fixed_raw = raw.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise UserInputError("[fixed] must be a table of key = value")
    fixed = {}
    for key, value in _check_keys(fixed_raw, "[fixed]").items():
        if isinstance(value, list):
            raise UserInputError(f"[fixed] {key} is a list; lists of values belong in [grid]")
        fixed[key] = _parse_value(key, value, f"[fixed] {key}")
    grids_raw = raw.get("grid", [{}])
    if isinstance(grids_raw, dict):
        grids_raw = [grids_raw]
    if not isinstance(grids_raw, list) or not all(isinstance(g, dict) for g in grids_raw):
        raise UserInputError("[grid] must be a table (or [[grid]] tables) of key = [values]")
    grids = []
    for i, g in enumerate(grids_raw or [{}]):
        where = "[grid]" if len(grids_raw) <= 1 else f"[[grid]] #{i + 1}"
        grid = OrderedDict()
        for key, values in _check_keys(g, where).items():
            if key in fixed:
                raise UserInputError(f"{key!r} is set in both [fixed] and {where}; keep one")
            if isinstance(values, dict) and key in RANGE_KEYS:
                values = _range_values(values, f"{where} {key}")
            if not isinstance(values, list):
                raise UserInputError(f"{where} {key} = {values!r} must be a list (e.g. {key} = [{values!r}]) "
                                     "or move it to [fixed]")
            if not values:
                raise UserInputError(f"{where} {key} is an empty list")
            grid[key] = [_parse_value(key, v, f"{where} {key}") for v in values]
        grids.append(grid)
    for grid in grids:
        for req in REQUIRED:
            if req == "elements" and ("bytes" in fixed or "bytes" in grid):
                continue
            if req not in fixed and req not in grid:
                raise UserInputError(f"the sweep config sets no {req!r} (in [fixed] or [grid])")
    return {"name": name, "description": raw.get("description", ""), "fixed": fixed, "grids": grids,
            "base": str(base)}


def _range_values(spec: dict, where: str) -> list:
    """The values of a range ``{from, to, factor}`` (multiply) or ``{from, to, step}`` (add),
    ``to`` included when reached; sizes accept K/M/G."""
    keys = set(spec)
    if not {"from", "to"} <= keys or len(keys & {"factor", "step"}) != 1 or keys - {"from", "to", "factor", "step"}:
        raise UserInputError(f"{where} = {spec!r}: a range is {{from = A, to = B, factor = F}} or "
                             "{from = A, to = B, step = S}")
    lo, hi = parse_size(spec["from"], f"{where} from"), parse_size(spec["to"], f"{where} to")
    if lo < 1 or hi < lo:
        raise UserInputError(f"{where}: from {lo} and to {hi} must satisfy 1 <= from <= to")
    if "factor" in spec:
        f = _int_value(spec["factor"], f"{where} factor", 2)
        step = lambda v: v * f  # noqa: E731
    else:
        d = parse_size(spec["step"], f"{where} step")
        if d < 1:
            raise UserInputError(f"{where} step {d} must be >= 1")
        step = lambda v: v + d  # noqa: E731
    values, v = [], lo
    while v <= hi:
        values.append(v)
        v = step(v)
        if len(values) > 10_000:
            raise UserInputError(f"{where}: more than 10000 values")
    return values


def point_key(point: dict) -> str:
    """Stable 16-hex-digit key of a point: hash of its canonical inputs (``None`` omitted)."""
    canon = {k: point.get(k) for k in INPUT_KEYS if point.get(k) is not None}
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_GPN_CACHE: dict = {}


def _gpus_per_node(point: dict, base: str) -> int:
    key = (point["topology"], point["topology_opts"], point["topology_file"])
    if key not in _GPN_CACHE:
        import topologies

        if point["topology_file"]:
            g = topologies.load(_resolve_path(point["topology_file"], base))
        else:
            g = topologies.build(point["topology"], 1, _opts_dict(point["topology_opts"]))
        _GPN_CACHE[key] = int(g.graph.get("gpus_per_node", 1) or 1)
    return _GPN_CACHE[key]


def _resolve_auto_nodes(point: dict, base: str) -> dict:
    if point.get("nodes") != "auto":
        return point
    if point.get("gpus") is None:
        raise UserInputError("nodes = \"auto\" needs gpus (the GPU count) in the same point")
    p = dict(point)
    p["nodes"] = math.ceil(point["gpus"] / _gpus_per_node(point, base))
    return p


def expand_grid(config) -> list[dict]:
    """Every point of a sweep configuration, in grid order, duplicates removed.

    Each point is a dict with ``key`` followed by every input of :data:`INPUT_KEYS`
    (defaults filled in; ``nodes = "auto"`` resolved where the topology can be built).
    """
    cfg = config if isinstance(config, dict) and "grids" in config else load_config(config)
    points, seen = [], set()
    for grid in cfg["grids"]:
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            p = dict(DEFAULTS)
            p.update(cfg["fixed"])
            p.update(zip(keys, combo))
            if p["nodes"] == "auto":
                if p.get("gpus") is None:
                    raise UserInputError("nodes = \"auto\" needs gpus (the GPU count) in every point")
                try:
                    p = _resolve_auto_nodes(p, cfg["base"])
                except Exception:   # a bad topology: the point records the error when run
                    pass
            key = point_key(p)
            if key in seen:
                continue
            seen.add(key)
            points.append({"key": key, **{k: p[k] for k in INPUT_KEYS}})
    return points


# -- running one point -----------------------------------------------------------------------

def _resolve_path(path, base: str):
    if path is None:
        return None
    p = Path(path)
    return str(p if p.is_absolute() else Path(base) / p)


def _effective(point: dict, base: str):
    """(RunConfig keyword arguments, names of inputs not passed to the algorithm)."""
    from .algorithms import load_all
    from .algorithms.registry import REGISTRY

    load_all()
    algo = REGISTRY.get((point.get("collective") or "allreduce", point["algorithm"]))
    ignored = []
    kw = {
        "topology": point["topology"],
        "nodes": point["nodes"],
        "topology_opts": _opts_dict(point["topology_opts"] or ""),
        "topology_file": _resolve_path(point["topology_file"], base),
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
    for key in ("collective", "root", "bytes"):   # set only when given (defaults: allreduce)
        if point.get(key) is not None:
            kw[key] = point[key]
    if kw["elements"] is None:
        del kw["elements"]
    if point.get("timing") is not None:
        kw["timing"] = point["timing"]
    if point.get("study") is not None:
        kw["study"] = point["study"]
    if kw["placement"] not in ("linear", "study"):
        kw["placement"] = _resolve_path(kw["placement"], base)
    dense = algo is not None and algo.kind == "dense"
    for key in SPARSE_ONLY:
        value = point[key]
        if dense:
            if value is not None and value != DEFAULTS[key]:
                ignored.append(key)
            continue
        kw[key] = _resolve_path(value, base) if key == "inputs" else value
    options = {}
    for key in ALGO_OPTIONS:
        value = point[key]
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
        elif key in ("options", "top_links"):
            out[key] = json.dumps(value, sort_keys=True)
        elif isinstance(value, (dict, list)):
            out[key] = json.dumps(value, sort_keys=True, default=str)
        else:
            out[key] = value
    return out


def _run_config(kw: dict) -> dict:
    """Simulate one effective configuration; returns the flattened outputs (never raises)."""
    from .simulate import RunConfig, run_allreduce

    t0 = time.perf_counter()
    try:
        if kw.get("nodes") == "auto" or kw.get("nodes") is None:
            raise UserInputError("nodes = \"auto\": cannot tell GPUs per node of this topology")
        if kw.get("density") is not None and kw.get("k") is not None:
            raise UserInputError("give either density or k, not both")
        if kw.get("bytes") is not None and kw.get("elements") is not None:
            raise UserInputError("give either elements or bytes, not both")
        report = run_allreduce(RunConfig(**kw))
        out = {"ok": True, "error": None}
        out.update(_flatten_report(report.to_json()))
        return out
    except Exception as exc:   # any failure is the point's result, the sweep goes on
        msg = " ".join(str(exc).split()) or repr(exc)
        return {"ok": False, "error": f"{type(exc).__name__}: {msg}", "wall_s": time.perf_counter() - t0}


def run_point(point: dict, base: str = ".") -> dict:
    """Run one point of :func:`expand_grid` and return its table row (never raises)."""
    return _run_group([point], base)[0]


def _run_group(points: list, base: str) -> list:
    """Rows of points that share one effective configuration (simulated once)."""
    rows = []
    try:
        first = _resolve_auto_nodes(points[0], base)
        kw, _ = _effective(first, base)
        result = _run_config(kw)
    except Exception as exc:
        msg = " ".join(str(exc).split())
        result = {"ok": False, "error": f"{type(exc).__name__}: {msg}", "wall_s": 0.0}
    for p in points:
        try:
            ignored = _effective(_resolve_auto_nodes(p, base), base)[1]
        except Exception:
            ignored = []
        row = dict(p)
        if row.get("nodes") == "auto" and result.get("ok"):
            row["nodes"] = _resolve_auto_nodes(p, base)["nodes"]
        row["ignored"] = ",".join(ignored) or None
        row.update(result)
        rows.append(row)
    return rows


# -- the results table -----------------------------------------------------------------------

def read_results(path) -> "pd.DataFrame":
    """Read a results table (CSV or Parquet by extension)."""
    import pandas as pd

    path = str(path)
    if not os.path.exists(path):
        raise UserInputError(f"results file {path!r} does not exist")
    try:
        if path.endswith(".parquet"):
            return pd.read_parquet(path)
        return pd.read_csv(path, dtype={"key": str, "error": object, "ignored": object,
                                        "topology_opts": object})
    except Exception as exc:
        raise UserInputError(f"cannot read results file {path!r}: {' '.join(str(exc).split())}") from None


def _ordered_columns(columns) -> list:
    cols = list(dict.fromkeys(columns))
    head = ["key", *INPUT_KEYS, *STATUS_COLUMNS]
    phases = sorted(c for c in cols if c.startswith("phase_"))
    link_bytes = sorted(c for c in cols if c.startswith("bytes_"))
    tail = [c for c in ("top_links", "wall_s") if c in cols]
    middle = [c for c in cols if c not in head and c not in phases and c not in link_bytes and c not in tail]
    return [c for c in head if c in cols] + middle + phases + link_bytes + tail


def _frame(rows: list):
    import pandas as pd

    df = pd.DataFrame.from_records(rows)
    if df.empty:
        return pd.DataFrame(columns=["key", *INPUT_KEYS, *STATUS_COLUMNS])
    for c in INPUT_KEYS + STATUS_COLUMNS:
        if c not in df.columns:
            df[c] = None
    df = df[_ordered_columns(df.columns)]
    if "ok" in df.columns:
        ok = df["ok"].astype(bool)
        for c in df.columns:
            if c.startswith("phase_") or c.startswith("bytes_"):
                df.loc[ok, c] = df.loc[ok, c].fillna(0)
    return df


def write_results(rows_or_df, path) -> None:
    """Write the table atomically: a temporary file in the same directory, then rename."""
    import pandas as pd

    df = rows_or_df if isinstance(rows_or_df, pd.DataFrame) else _frame(rows_or_df)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        if path.suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _existing_rows(out) -> list:
    if not os.path.exists(out):
        return []
    df = read_results(out)
    if "key" not in df.columns:
        raise UserInputError(f"{str(out)!r} exists and is not a sweep results table (no 'key' column); "
                             "choose another --out")
    records = df.to_dict("records")
    for r in records:
        r["key"] = str(r["key"])
    return records


# -- executors -------------------------------------------------------------------------------

def _groups(points: list, base: str) -> list:
    """Points grouped by effective configuration (simulated once per group)."""
    groups: OrderedDict = OrderedDict()
    for p in points:
        try:
            kw, _ = _effective(_resolve_auto_nodes(p, base), base)
            ek = _effective_key(kw)
        except Exception:
            ek = "point-" + p["key"]
        groups.setdefault(ek, []).append(p)
    return list(groups.values())


def _execute_local(groups, base, workers, on_rows):
    if workers <= 1:
        for g in groups:
            on_rows(_run_group(g, base))
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=min(workers, len(groups))) as pool:
        futures = {pool.submit(_run_group, g, base): g for g in groups}
        try:
            for fut in as_completed(futures):
                try:
                    rows = fut.result()
                except BrokenProcessPool:
                    rows = _failed_rows(futures[fut], "WorkerDied: a worker process died (out of memory?)")
                except Exception as exc:
                    rows = _failed_rows(futures[fut], f"{type(exc).__name__}: {exc}")
                on_rows(rows)
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def _execute_dask(groups, base, scheduler, on_rows):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask is a dependency
        raise UserInputError("--scheduler needs dask.distributed (pip install 'dask[distributed]')") from None
    try:
        client = Client(scheduler, timeout="10s")
    except Exception as exc:
        raise UserInputError(f"cannot connect to the Dask scheduler at {scheduler!r}: "
                             f"{' '.join(str(exc).split())}") from None
    try:
        futures = {}
        for g in groups:
            fut = client.submit(_run_group, g, base, pure=False, key=f"simcollective-point-{g[0]['key']}")
            futures[fut] = g
        try:
            for fut in as_completed(list(futures)):
                try:
                    rows = fut.result()
                except Exception as exc:
                    rows = _failed_rows(futures[fut], f"{type(exc).__name__}: {' '.join(str(exc).split())}")
                on_rows(rows)
        except BaseException:
            client.cancel(list(futures))
            raise
    finally:
        client.close()


def _failed_rows(points, error):
    rows = []
    for p in points:
        row = dict(p)
        row.update({"ignored": None, "ok": False, "error": error, "wall_s": 0.0})
        rows.append(row)
    return rows


def run_sweep(config, out, workers: int | None = None, scheduler: str | None = None, progress: bool = True,
              max_points: int | None = None, retry_failed: bool = False):
    """Run every point of ``config`` not yet in ``out``; return the whole table.

    ``config``: a TOML path or a parsed dict. ``out``: ``.csv`` or ``.parquet`` path,
    rewritten atomically after each finished point. ``workers``: local processes
    (default ``os.cpu_count()``; 1 runs in this process); ``scheduler``: the address of a
    Dask distributed scheduler to run on instead. ``max_points``: stop after that many new
    points (the rest on the next run). ``retry_failed``: run again points whose row failed.

    The returned DataFrame's ``attrs["summary"]`` holds ``points, skipped, ran, ok, failed,
    seconds``.
    """
    t0 = time.perf_counter()
    cfg = load_config(config)
    points = expand_grid(cfg)
    if out is None:
        raise UserInputError("no output file given")
    out = str(out)
    if not (out.endswith(".csv") or out.endswith(".parquet")):
        raise UserInputError(f"--out {out!r} must end in .csv or .parquet")
    for stale in Path(out).parent.glob(f".{Path(out).name}.tmp*"):   # left by a killed sweep
        try:
            stale.unlink()
        except OSError:
            pass
    existing = _existing_rows(out)
    rows_by_key = OrderedDict((r["key"], r) for r in existing)
    done = {k for k, r in rows_by_key.items() if not retry_failed or bool(r.get("ok"))}
    todo = [p for p in points if p["key"] not in done]
    skipped = len(points) - len(todo)
    if max_points is not None:
        todo = todo[:max(0, int(max_points))]
    order = {p["key"]: i for i, p in enumerate(points)}
    stats = {"ok": 0, "failed": 0}
    bar = None
    if todo and progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"sweep {cfg['name']}", unit="pt", file=sys.stderr,
                   dynamic_ncols=True)
        bar.set_postfix(failed=0)

    def sorted_rows():
        return sorted(rows_by_key.values(), key=lambda r: order.get(r["key"], len(order)))

    def on_rows(rows):
        for row in rows:
            rows_by_key[row["key"]] = row
            stats["ok" if row.get("ok") else "failed"] += 1
        write_results(sorted_rows(), out)
        if bar is not None:
            bar.update(len(rows))
            bar.set_postfix(failed=stats["failed"])

    try:
        if todo:
            groups = _groups(todo, cfg["base"])
            if scheduler:
                _execute_dask(groups, cfg["base"], scheduler, on_rows)
            else:
                n = workers if workers is not None else (os.cpu_count() or 1)
                if n < 1:
                    raise UserInputError(f"--workers {n} must be >= 1")
                _execute_local(groups, cfg["base"], n, on_rows)
    finally:
        if bar is not None:
            bar.close()
    if not todo and not os.path.exists(out):
        write_results(sorted_rows(), out)
    df = read_results(out)
    df.attrs["summary"] = {"name": cfg["name"], "points": len(points), "skipped": skipped,
                           "ran": stats["ok"] + stats["failed"], "ok": stats["ok"], "failed": stats["failed"],
                           "left": len(points) - skipped - stats["ok"] - stats["failed"],
                           "seconds": time.perf_counter() - t0}
    return df


# -- command line ----------------------------------------------------------------------------

def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help="run a grid of allreduce simulations in parallel into one results table",
        description="Run every point of a TOML grid (topology x size x algorithm x ...) in parallel "
                    "(local processes or a Dask cluster), verify each, and collect one row per point.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="CONFIG.toml", help="the sweep configuration")
    p.add_argument("--out", metavar="PATH", help="results table, .csv or .parquet (default: CONFIG's name + .csv)")
    p.add_argument("--workers", metavar="N", help="local worker processes (default: number of CPUs)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask distributed cluster, e.g. tcp://host:8786")
    p.add_argument("--max-points", metavar="N", help="run at most N new points now (the rest on a re-run)")
    p.add_argument("--retry-failed", action="store_true", help="run again the points whose row failed")
    p.add_argument("--dry-run", action="store_true", help="list the points and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def _describe_point(p: dict) -> str:
    shown = [f"{k}={p[k]}" for k in INPUT_KEYS if p.get(k) is not None and p[k] != DEFAULTS[k]
             or k in ("topology", "algorithm", "elements")]
    return " ".join(shown)


def cmd_sweep(args) -> int:
    from .cli import _int

    out = args.out or f"{Path(args.config).stem}.csv"
    workers = _int(args.workers, "--workers", 1) if args.workers is not None else None
    max_points = _int(args.max_points, "--max-points", 0) if args.max_points is not None else None
    if args.dry_run:
        points = expand_grid(args.config)
        for p in points:
            print(f"{p['key']}  {_describe_point(p)}")
        print(f"{len(points)} points")
        return 0
    try:
        df = run_sweep(args.config, out, workers=workers, scheduler=args.scheduler, progress=not args.quiet,
                       max_points=max_points, retry_failed=args.retry_failed)
    except KeyboardInterrupt:
        print(f"sweep interrupted: the points that finished are in {out}; run the same command again to "
              "resume", file=sys.stderr)
        raise
    s = df.attrs["summary"]
    line = (f"sweep {s['name']}: {s['points']} points; ran {s['ran']} now ({s['ok']} ok, {s['failed']} failed), "
            f"{s['skipped']} already in {out}")
    if s["left"]:
        line += f", {s['left']} left for a re-run"
    print(line + f"; {s['seconds']:.1f} s")
    failed = df[~df["ok"].astype(bool)] if "ok" in df.columns else df.iloc[:0]
    if len(failed):
        print(f"  {len(failed)} failed point(s) in the table (ok = False), e.g.:")
        for _, r in failed.head(3).iterrows():
            print(f"    {r['algorithm']} on {r['topology']}: {r['error']}")
    print(f"  results: {out}")
    return 0
