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
import io
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
from .parsing import check_output_path, parse_bool, parse_float, parse_fraction, parse_int, parse_seed, parse_size, read_text

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
def _defaults() -> dict:
    from .simulate import run_defaults

    d = run_defaults()
    out = {k: d.get(k) for k in INPUT_KEYS}           # algorithm options: None (the algorithm's own)
    out.update(topology_opts=None, algorithm=None, elements=None)   # required, or none
    out.update(collective=None)   # None: allreduce (keys of points written before collectives unchanged)
    # None = the run's default (simultaneous / false), and keeps the keys of older tables
    out.update(timing=None, study=None)
    return out


#: Values of the inputs a configuration does not set: those of ``RunConfig`` (and ``simcollective run``).
DEFAULTS = _defaults()
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

output: one row per point (CSV, or Parquet if --out ends in .parquet). The file is
locked while a sweep writes it (a second sweep on it refuses). Rows are appended
to a journal (.NAME.journal) as points finish and the table is rewritten
atomically at most every 30 s and at the end; a re-run skips points already in
the table or journal (a truncated row runs again), so an interrupted or killed
sweep resumes where it stopped. A point that fails is recorded with ok=False and
its error; the sweep goes on and exits 0, printing the number of failed points.
A point whose worker is lost (killed, out of memory, Dask worker or scheduler
gone) is retried up to 3 times and never recorded; if some still cannot finish,
the sweep says how many and exits 5. Exit 2: a bad configuration or out file.
Grids of more than 10000 points need --max-points or --yes.
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
        return parse_seed(_int_value(value, where), where)
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
        return parse_bool(value, f"{where}:")
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
            raw = tomllib.loads(read_text(path, "sweep config"))
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
                alt = " or 'bytes'" if req == "elements" else ""
                raise UserInputError(f"the sweep config sets no {req!r}{alt} (in [fixed] or [grid])")
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
    if kw["placement"] not in ("auto", "linear", "study"):
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

#: column types, the same in every table (integers stay integers when a point failed; the
#: Parquet schema of every sweep is the same, so ``pyarrow.dataset`` reads many together)
INT_COLUMNS = ("nodes", "gpus", "elements", "k", "seed", "group_size", "chunk_size", "memory_budget", "ranks",
               "bytes", "messages", "message_bytes", "events", "flows", "out_k", "dense_parts", "result_parts",
               "root", "out_root", "count", "channels")
FLOAT_COLUMNS = ("density", "overlap", "time_s", "algbw", "busbw", "wall_s", "out_density", "result_density",
                 "sim_wall_s", "nccl_predicted_us", "nccl_latency_us")
BOOL_COLUMNS = ("ok", "verified", "resparsify", "exact", "study", "out_study")
STR_COLUMNS = ("key", "topology", "topology_opts", "topology_file", "algorithm", "dtype", "workload", "inputs",
               "profile", "placement", "routing", "allgather", "densify", "verify", "error", "ignored", "kind",
               "out_dtype", "verification", "mode", "out_profile", "options", "top_links", "collective",
               "placement_order", "algorithm_chosen", "protocol", "nccl_algorithm", "nccl_model_choice",
               "timing", "out_routing", "out_timing")


def _column_dtype(col: str):
    if col in INT_COLUMNS or col.startswith("bytes_"):
        return "Int64"
    if col in FLOAT_COLUMNS or col.startswith("phase_"):
        return "Float64"
    if col in BOOL_COLUMNS:
        return "boolean"
    if col in STR_COLUMNS:
        return "string"
    return None


def _typed(df):
    """The table with its stable column types (nullable Int64/Float64/boolean/string)."""
    import pandas as pd

    for col in df.columns:
        dt = _column_dtype(str(col))
        if dt is None:
            continue
        try:
            if dt == "Int64" and not pd.api.types.is_integer_dtype(df[col]):
                df[col] = pd.to_numeric(df[col]).round().astype("Int64")
            elif dt == "boolean" and df[col].dtype == object:
                df[col] = df[col].map(lambda v: v if v is None or isinstance(v, bool) or v != v
                                      else str(v).strip().lower() in ("true", "1")).astype("boolean")
            else:
                df[col] = df[col].astype(dt)
        except (TypeError, ValueError):
            pass                    # an unexpected value: keep the column as read
    return df


def read_results(path) -> "pd.DataFrame":
    """Read a results table (CSV or Parquet by extension), with the stable column types."""
    import pandas as pd

    path = str(path)
    if not os.path.exists(path):
        raise UserInputError(f"results file {path!r} does not exist")
    try:
        if path.endswith(".parquet"):
            df = pd.read_parquet(path)
        else:
            try:
                df = pd.read_csv(path, dtype={c: object for c in STR_COLUMNS}, keep_default_na=False,
                                 na_values=[""])
            except pd.errors.ParserError:       # a record cut short (inside a quoted field)
                df = pd.read_csv(io.StringIO(_whole_records(path)), dtype={c: object for c in STR_COLUMNS},
                                 keep_default_na=False, na_values=[""])
    except Exception as exc:
        raise UserInputError(f"cannot read results file {path!r}: {' '.join(str(exc).split())}") from None
    df = _typed(df)
    if "key" in df.columns:
        df = df[_complete(df)].reset_index(drop=True)
    return df


def _whole_records(path) -> str:
    """The CSV text of ``path`` without records that do not have every column."""
    import csv

    with open(path, newline="") as fh:
        reader = csv.reader(fh, strict=True)
        records = []
        try:
            for rec in reader:
                records.append(rec)
        except csv.Error:
            pass
    if not records:
        return ""
    width = len(records[0])
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerows(r for r in records if len(r) == width)
    return buf.getvalue()


def _complete(df):
    """Rows that are whole: a key of 16 hex digits, ``ok`` set and, when ok, a time (a row
    truncated by a crash or an editor is not kept as done: it runs again)."""
    import pandas as pd

    key_ok = df["key"].astype("string").str.fullmatch(r"[0-9a-f]{16}").fillna(False)
    if "ok" not in df.columns:
        return key_ok.to_numpy(dtype=bool)
    ok = df["ok"]
    status = ok.notna()
    if "time_s" in df.columns:
        status &= ~(ok.fillna(False).astype(bool) & pd.to_numeric(df["time_s"], errors="coerce").isna())
    return (key_ok & status).to_numpy(dtype=bool)


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
    return _typed(df)


def write_results(rows_or_df, path) -> None:
    """Write the table atomically: a temporary file in the same directory, then rename."""
    import pandas as pd

    df = _typed(rows_or_df.copy()) if isinstance(rows_or_df, pd.DataFrame) else _frame(rows_or_df)
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
    df = df.astype(object).where(df.notna(), None)
    records = df.to_dict("records")
    for r in records:
        r["key"] = str(r["key"])
    return records


def _journal_path(out) -> Path:
    out = Path(out)
    return out.with_name(f".{out.name}.journal")


def _journal_rows(out) -> list:
    """Rows appended by a sweep that did not get to rewrite the table (killed); a line cut
    short by the kill is not JSON and is dropped (its point runs again)."""
    path = _journal_path(out)
    if not path.exists():
        return []
    rows = []
    with open(path, "rb") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(row, dict) and isinstance(row.get("key"), str) and "ok" in row:
                rows.append(row)
    return rows


class _Lock:
    """An exclusive lock on ``out`` (a ``.NAME.lock`` file next to it, flock'ed): a second
    sweep writing the same table refuses in one line instead of losing rows."""

    def __init__(self, out):
        self.path = Path(out).with_name(f".{Path(out).name}.lock")
        self.fh = None

    def __enter__(self):
        import fcntl

        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "?"
            self.fh.close()
            raise UserInputError(f"--out {str(self.path.with_name(self.path.name[1:-5]))!r} is being written by "
                                 f"another sweep (pid {holder}); wait for it to finish or choose another --out") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(str(os.getpid()))
        self.fh.flush()
        return self

    def __exit__(self, *exc):
        try:
            self.path.unlink()
        except OSError:
            pass
        self.fh.close()       # closing releases the lock


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


#: attempts of a point whose worker (process, Dask worker or scheduler) was lost
MAX_ATTEMPTS = 3
#: grids larger than this need ``max_points`` or ``yes=True`` (``--max-points``/``--yes``)
LARGE_GRID = 10_000
#: the table is rewritten from the journal at most this often while a sweep runs (and at its end)
REWRITE_SECONDS = 30.0


def _worker_init(parent_pid: int) -> None:
    """Local worker processes end when the sweep process dies, even by SIGKILL: the kernel's
    parent-death signal where there is one (Linux), and a watchdog thread everywhere."""
    import threading

    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch():
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="simcollective-parent-watchdog", daemon=True).start()


def _worker_run_group(points, base):
    return _run_group(points, base)      # looked up in the worker (tests replace it)


def _failed_rows(points, error):
    rows = []
    for p in points:
        row = dict(p)
        row.update({"ignored": None, "ok": False, "error": error, "wall_s": 0.0})
        rows.append(row)
    return rows


def _execute_local(groups, base, workers, on_rows):
    """Run groups in local processes; a group whose worker died is retried (in a process of
    its own after the first loss) up to :data:`MAX_ATTEMPTS` times. Returns the groups that
    could not be finished (never recorded as results)."""
    if workers <= 1:
        for g in groups:
            on_rows(_run_group(g, base))
        return []
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    lost, pending, attempt = [], list(groups), 1
    while pending:
        retry = []
        batches = [pending] if attempt == 1 else [[g] for g in pending]     # isolate after a loss
        for batch in batches:
            pool = ProcessPoolExecutor(max_workers=min(workers, len(batch)), initializer=_worker_init,
                                       initargs=(os.getpid(),))
            futures = {pool.submit(_worker_run_group, g, base): g for g in batch}
            try:
                for fut in as_completed(futures):
                    try:
                        rows = fut.result()
                    except BrokenProcessPool:         # the worker was lost (killed, out of memory)
                        retry.append(futures[fut])
                        continue
                    except Exception as exc:          # not the simulation's fault either: say what
                        rows = _failed_rows(futures[fut], f"{type(exc).__name__}: {' '.join(str(exc).split())}")
                    on_rows(rows)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
        attempt += 1
        if attempt > MAX_ATTEMPTS:
            lost += retry
            break
        pending = retry
    return lost


def _execute_dask(groups, base, scheduler, on_rows):
    """Run groups on a Dask cluster; a group whose worker or scheduler was lost is resubmitted
    up to :data:`MAX_ATTEMPTS` times. Returns the groups that could not be finished."""
    import logging

    try:
        from dask.distributed import Client, as_completed
    except ImportError:  # pragma: no cover - dask is a dependency
        raise UserInputError("--scheduler needs dask.distributed (pip install 'dask[distributed]')") from None
    names = ["distributed", "tornado", "asyncio",
             *(n for n in logging.root.manager.loggerDict if n.startswith(("distributed.", "tornado.")))]
    quiet = {name: logging.getLogger(name).level for name in names}
    for name in quiet:                        # no third-party tracebacks when the cluster fails
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        try:
            client = Client(scheduler, timeout="10s")
        except Exception as exc:
            raise UserInputError(f"cannot connect to the Dask scheduler at {scheduler!r}: "
                                 f"{' '.join(str(exc).split())}") from None
        lost = []
        try:
            attempts = {}

            def submit(g):
                n = attempts.get(g[0]["key"], 0) + 1
                attempts[g[0]["key"]] = n
                return client.submit(_run_group, g, base, pure=False, key=f"simcollective-point-{g[0]['key']}-{n}")

            futures = {}
            for g in groups:
                futures[submit(g)] = g
            ac = as_completed(list(futures))
            try:
                for fut in ac:
                    g = futures.pop(fut)
                    try:
                        rows = fut.result()
                    except Exception:             # lost worker (KilledWorker) or scheduler
                        if attempts[g[0]["key"]] < MAX_ATTEMPTS and client.status == "running":
                            try:
                                nf = submit(g)
                            except Exception:
                                lost.append(g)
                                continue
                            futures[nf] = g
                            ac.add(nf)
                        else:
                            lost.append(g)
                        continue
                    on_rows(rows)
            except BaseException:
                try:
                    client.cancel(list(futures))
                except Exception:
                    pass
                raise
            lost += list(futures.values())
        finally:
            try:
                client.close(timeout=5)
            except Exception:
                pass
        return lost
    finally:
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)


def grid_size(config) -> int:
    """Number of points of a configuration, counted without expanding it (duplicates included)."""
    cfg = config if isinstance(config, dict) and "grids" in config else load_config(config)
    return sum(math.prod(len(v) for v in g.values()) for g in cfg["grids"])


def run_sweep(config, out, workers: int | None = None, scheduler: str | None = None, progress: bool = True,
              max_points: int | None = None, retry_failed: bool = False, yes: bool = False):
    """Run every point of ``config`` not yet in ``out``; return the whole table.

    ``config``: a TOML path or a parsed dict. ``out``: ``.csv`` or ``.parquet`` path, locked
    while the sweep runs; each finished point is appended to a journal next to it
    (``.NAME.journal``) and the table is rewritten atomically at most every
    :data:`REWRITE_SECONDS` and at the end (a killed sweep's journal is merged by the next).
    ``workers``: local processes (default ``os.cpu_count()``; 1 runs in this process);
    ``scheduler``: the address of a Dask distributed scheduler to run on instead.
    ``max_points``: stop after that many new points (the rest on the next run).
    ``retry_failed``: run again points whose row failed. Grids above :data:`LARGE_GRID` points
    need ``max_points`` or ``yes=True``.

    Points whose worker was lost are retried and never recorded; those that still cannot be
    finished are counted in ``attrs["summary"]["lost"]``. The returned DataFrame's
    ``attrs["summary"]`` holds ``points, skipped, ran, ok, failed, lost, left, seconds``.
    """
    t0 = time.perf_counter()
    cfg = load_config(config)
    if out is None:
        raise UserInputError("no output file given")
    out = str(out)
    if not (out.endswith(".csv") or out.endswith(".parquet")):
        raise UserInputError(f"--out {out!r} must end in .csv or .parquet")
    check_output_path(out, "--out")
    size = grid_size(cfg)
    if size > LARGE_GRID and max_points is None and not yes:
        raise UserInputError(f"the sweep has {size} points (more than {LARGE_GRID}); give --max-points N to run N of "
                             "them now, or --yes to run them all")
    points = expand_grid(cfg)
    with _Lock(out):
        return _run_locked(cfg, points, out, workers, scheduler, progress, max_points, retry_failed, t0)


def _run_locked(cfg, points, out, workers, scheduler, progress, max_points, retry_failed, t0):
    for stale in Path(out).parent.glob(f".{Path(out).name}.tmp*"):   # left by a killed sweep
        try:
            stale.unlink()
        except OSError:
            pass
    existing = _existing_rows(out)
    rows_by_key = OrderedDict((r["key"], r) for r in existing)
    journal = _journal_path(out)
    for r in _journal_rows(out):
        rows_by_key[r["key"]] = r
    done = {k for k, r in rows_by_key.items() if not retry_failed or bool(r.get("ok"))}
    todo = [p for p in points if p["key"] not in done]
    skipped = len(points) - len(todo)
    if max_points is not None:
        todo = todo[:max(0, int(max_points))]
    order = {p["key"]: i for i, p in enumerate(points)}
    stats = {"ok": 0, "failed": 0, "lost": 0, "written": time.monotonic()}
    bar = None
    if todo and progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"sweep {cfg['name']}", unit="pt", file=sys.stderr,
                   dynamic_ncols=True)
        bar.set_postfix(failed=0)

    def sorted_rows():
        return sorted(rows_by_key.values(), key=lambda r: order.get(r["key"], len(order)))

    def rewrite():
        write_results(sorted_rows(), out)
        try:
            journal.unlink()
        except FileNotFoundError:
            pass
        stats["written"] = time.monotonic()

    if journal.exists():                # a killed sweep's rows: into the table first
        rewrite()
    jfh = None

    def on_rows(rows):
        nonlocal jfh
        if jfh is None:
            jfh = open(journal, "ab")
        for row in rows:
            rows_by_key[row["key"]] = row
            stats["ok" if row.get("ok") else "failed"] += 1
            jfh.write(json.dumps(row, default=_json_value, allow_nan=True).encode() + b"\n")
        jfh.flush()
        os.fsync(jfh.fileno())
        if time.monotonic() - stats["written"] > REWRITE_SECONDS:
            jfh.close()
            jfh = None
            rewrite()
        if bar is not None:
            bar.update(len(rows))
            bar.set_postfix(failed=stats["failed"])

    try:
        lost = []
        if todo:
            groups = _groups(todo, cfg["base"])
            if scheduler:
                lost = _execute_dask(groups, cfg["base"], scheduler, on_rows)
            else:
                n = workers if workers is not None else (os.cpu_count() or 1)
                if n < 1:
                    raise UserInputError(f"--workers {n} must be >= 1")
                lost = _execute_local(groups, cfg["base"], n, on_rows)
        stats["lost"] = sum(len(g) for g in lost)
    finally:
        if bar is not None:
            bar.close()
        if jfh is not None:
            jfh.close()
        if journal.exists() or not os.path.exists(out):
            rewrite()
    df = read_results(out)
    df.attrs["summary"] = {"name": cfg["name"], "points": len(points), "skipped": skipped,
                           "ran": stats["ok"] + stats["failed"], "ok": stats["ok"], "failed": stats["failed"],
                           "lost": stats["lost"],
                           "left": len(points) - skipped - stats["ok"] - stats["failed"],
                           "seconds": time.perf_counter() - t0}
    return df


def _json_value(o):
    if hasattr(o, "item"):
        return o.item()
    return str(o)


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
    p.add_argument("--yes", action="store_true", help=f"run a grid of more than {LARGE_GRID} points")
    p.add_argument("--dry-run", action="store_true",
                   help=f"count the points (and list them, up to {LARGE_GRID}) and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def _describe_point(p: dict) -> str:
    shown = [f"{k}={p[k]}" for k in INPUT_KEYS if p.get(k) is not None and p[k] != DEFAULTS[k]
             or k in ("topology", "algorithm", "elements")]
    return " ".join(shown)


def cmd_sweep(args) -> int:
    _int = parse_int
    out = args.out or f"{Path(args.config).stem}.csv"
    workers = _int(args.workers, "--workers", 1) if args.workers is not None else None
    max_points = _int(args.max_points, "--max-points", 0) if args.max_points is not None else None
    if args.dry_run:
        cfg = load_config(args.config)
        size = grid_size(cfg)
        if size > LARGE_GRID:
            print(f"{size} points (counted from the grid, duplicates included; not listed: more than {LARGE_GRID}; "
                  "running them needs --max-points N or --yes)")
            return 0
        points = expand_grid(cfg)
        for p in points:
            print(f"{p['key']}  {_describe_point(p)}")
        print(f"{len(points)} points")
        return 0
    try:
        df = run_sweep(args.config, out, workers=workers, scheduler=args.scheduler, progress=not args.quiet,
                       max_points=max_points, retry_failed=args.retry_failed, yes=args.yes)
    except KeyboardInterrupt:
        print(f"sweep interrupted: the points that finished are in {out}; run the same command again to "
              "resume", file=sys.stderr)
        raise
    s = df.attrs["summary"]
    line = (f"sweep {s['name']}: {s['points']} points; ran {s['ran']} now ({s['ok']} ok, {s['failed']} failed), "
            f"{s['skipped']} already in {out}")
    if s["left"] - s["lost"]:
        line += f", {s['left'] - s['lost']} left for a re-run"
    if s["lost"]:
        line += f", {s['lost']} lost (worker lost)"
    print(line + f"; {s['seconds']:.1f} s")
    failed = df[~df["ok"].astype(bool)] if "ok" in df.columns else df.iloc[:0]
    if len(failed):
        print(f"  {len(failed)} failed point(s) in the table (ok = False), e.g.:")
        for _, r in failed.head(3).iterrows():
            print(f"    {r['algorithm']} on {r['topology']}: {r['error']}")
    print(f"  results: {out}")
    if s["lost"]:
        who = "Dask worker or scheduler" if args.scheduler else "worker process"
        print(f"simcollective: error: {s['lost']} point(s) could not be finished: their {who} was lost "
              f"(killed, out of memory, unreachable; tried up to {MAX_ATTEMPTS} times); they are not in {out}: "
              "run the same command again to retry them", file=sys.stderr)
        return 5
    return 0


# ``simcollective.sweep(...)`` is the Python API function (:func:`simcollective.api.sweep`): importing
# this submodule binds its name on the package, so the module itself is callable and delegates.
class _CallableModule(type(sys.modules[__name__])):
    def __call__(self, *args, **kwargs):
        from .api import sweep as api_sweep

        return api_sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
