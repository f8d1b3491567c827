"""The sweep configuration: its keys, the parsing of each value, and the TOML file.

:func:`load_config` reads and validates a configuration (a TOML path or a dict); every
value is normalized here, once (sizes, fractions, ranges, ``topology_opts``), and every
error names the table and key it comes from.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from ..algorithms.registry import OPTION_FLAGS
from ..errors import UserInputError
from ..parsing import parse_bool, parse_float, parse_fraction, parse_seed, parse_size, load_toml

__all__ = ["INPUT_KEYS", "TABLE_INPUTS", "DEFAULTS", "ALGO_OPTIONS", "WHEN_SET_OPTIONS", "SPARSE_ONLY",
           "load_config", "norm_key", "opts_dict", "int_value", "resolve_path", "with_engine"]

#: every algorithm option of the registry (``group_size``, ``chunk_size``, ``protocol``, ...)
#: is a sweep input, passed only to the algorithms that declare it
ALGO_OPTIONS = tuple(OPTION_FLAGS)
#: the options whose columns every table has, in this order (the table's layout)
_OPTION_COLUMNS = ("group_size", "chunk_size", "allgather", "densify", "resparsify")
#: the other options of the registry, and the NCCL release of the nccl algorithms' tuner: a
#: point holds them, and the table has their columns, only when they are set
WHEN_SET_OPTIONS = tuple(o for o in ALGO_OPTIONS if o not in _OPTION_COLUMNS) + ("nccl_version",)
#: alltoallv's per-pair sizes (as ``run --sizes PATH`` / ``--moe GATE``): inputs with a
#: column only when set, like the options above
WHEN_SET_OPTIONS += ("sizes", "moe")

#: The inputs of one point, in table column order.
INPUT_KEYS = (
    "topology", "topology_opts", "topology_file", "nodes", "gpus", "algorithm", "elements", "dtype",
    "density", "k", "workload", "overlap", "inputs", "profile", "placement", "routing", "engine", "seed",
    *(o for o in _OPTION_COLUMNS if o in ALGO_OPTIONS), "verify", "memory_budget",
    "collective", "root", "bytes",
    "timing", "study", *WHEN_SET_OPTIONS,
)
#: the inputs every table has a column for
TABLE_INPUTS = tuple(k for k in INPUT_KEYS if k not in WHEN_SET_OPTIONS)


def _defaults() -> dict:
    from ..simulate import run_defaults

    d = run_defaults()
    out = {k: d.get(k) for k in INPUT_KEYS}           # algorithm options: None (the algorithm's own)
    out.update(topology_opts=None, algorithm=None, elements=None)   # required, or none
    # None: the run's default (allreduce, simultaneous, false), left out of the point's key
    # engine: None is the run's ``auto``, left out of the key (a table of points that do not
    # set it keeps its keys)
    out.update(collective=None, timing=None, study=None, engine=None)
    return out


#: Values of the inputs a configuration does not set: those of ``RunConfig`` (and ``simcollective run``).
DEFAULTS = _defaults()
#: keys whose grid values may be a range ``{from = "8", to = "128M", factor = 2}`` (or ``step = N``)
RANGE_KEYS = ("elements", "bytes", "gpus")
REQUIRED = ("algorithm", "elements")
SPARSE_ONLY = ("density", "k", "workload", "overlap", "inputs")
TOP_LEVEL = ("name", "description", "fixed", "grid")


def norm_key(key: str) -> str:
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
        out.append(f"{norm_key(k)}={v}")
    return ",".join(sorted(out)) or None


def opts_dict(text: str) -> dict:
    return dict(part.split("=", 1) for part in text.split(",")) if text else {}


def int_value(value, where: str, minimum: int | None = None) -> int:
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
    if key == "nccl_version":   # a modelled NCCL release, as text (checked before any point runs)
        from ..nccl.versions import parse_version

        parse_version(value, where)
        return value
    if key in ("engine", "routing"):
        from ..run_config import ENGINES, ROUTINGS

        allowed = ENGINES if key == "engine" else ROUTINGS
        if value not in allowed:
            raise UserInputError(f"{where}: {value!r} is not {'an engine' if key == 'engine' else 'a routing policy'}; "
                                 f"allowed: {', '.join(allowed)}")
        return value
    if key == "nodes":
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        return int_value(value, where, 1)
    if key == "root":
        return int_value(value, where, 0)
    if key == "moe":            # checked now (a bad gate is refused before any point runs)
        from ..data.moe import parse_moe

        parse_moe(_str_value(value, where))
        return value
    if key in ("gpus", "group_size", "channels"):
        return int_value(value, where, 1)
    if key == "seed":
        return parse_seed(int_value(value, where), where)
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
        key = norm_key(raw)
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
    raw, base, default_name = _read_config(config)
    for key in raw:
        if key not in TOP_LEVEL:
            raise UserInputError(f"unknown top-level key {key!r} in the sweep config; allowed: {', '.join(TOP_LEVEL)}")
    name = raw.get("name", default_name)
    if not isinstance(name, str):
        raise UserInputError(f"name {name!r} must be a string")
    fixed = _fixed_values(raw.get("fixed", {}))
    grids = _grid_values(raw.get("grid", [{}]), fixed)
    for grid in grids:
        for req in REQUIRED:
            if req == "elements" and any(k in fixed or k in grid for k in ("bytes", "sizes", "moe")):
                continue
            if req not in fixed and req not in grid:
                alt = " or 'bytes', 'sizes', 'moe'" if req == "elements" else ""
                raise UserInputError(f"the sweep config sets no {req!r}{alt} (in [fixed] or [grid])")
    return {"name": name, "description": raw.get("description", ""), "fixed": fixed, "grids": grids,
            "base": str(base)}


def _read_config(config) -> tuple:
    """(raw table, directory of relative paths, default name) of a TOML path or a dict."""
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        raw = load_toml(path, "sweep config", "sweep config")
        return raw, path.resolve().parent, path.stem
    if isinstance(config, dict):
        return config, Path.cwd(), "sweep"
    raise UserInputError(f"a sweep config is a TOML file path or a dict, not {type(config).__name__}")


def _fixed_values(fixed_raw) -> dict:
    if not isinstance(fixed_raw, dict):
        raise UserInputError("[fixed] must be a table of key = value")
    fixed = {}
    for key, value in _check_keys(fixed_raw, "[fixed]").items():
        if isinstance(value, list):
            raise UserInputError(f"[fixed] {key} is a list; lists of values belong in [grid]")
        fixed[key] = _parse_value(key, value, f"[fixed] {key}")
    return fixed


def _grid_values(grids_raw, fixed: dict) -> list:
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
    return grids


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
        f = int_value(spec["factor"], f"{where} factor", 2)
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


def with_engine(cfg: dict, engine: str | None, flag: str = "--engine") -> dict:
    """``cfg`` (of :func:`load_config`) with ``engine`` the engine of every point that does not
    set one (``sweep --engine``); an error when no point would take it (``[fixed]`` or every
    grid block sets ``engine``)."""
    if engine is None:
        return cfg
    where = f"{flag} {engine}"
    _parse_value("engine", engine, where)
    if "engine" in cfg["fixed"]:
        raise UserInputError(f"{flag} is not used: [fixed] engine sets every point's engine; drop one")
    grids = [g for g in cfg["grids"] if "engine" not in g]
    if not grids:
        raise UserInputError(f"{flag} is not used: every [grid] block sets engine; drop one")
    out = dict(cfg)
    out["grids"] = [g if "engine" in g else OrderedDict(g, engine=[engine]) for g in cfg["grids"]]
    return out


def resolve_path(path, base: str):
    """A path of the configuration: relative paths are relative to the config file's directory."""
    if path is None:
        return None
    p = Path(path)
    return str(p if p.is_absolute() else Path(base) / p)
