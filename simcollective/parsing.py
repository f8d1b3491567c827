"""Parsing and formatting of every user-given value (public; the CLI, sweeps, plots and API use it).

Every parser names the option or file key it checks (``what``) and the allowed range in its
error, and accepts only finite values in range:

>>> parse_int("8", "--nodes", 1)
8
>>> parse_size("32M", "--elements")
33554432
>>> parse_size("1e400", "--elements")
Traceback (most recent call last):
...
simcollective.errors.UserInputError: --elements '1e400' is too large; sizes go up to 2^53 = 9007199254740992
>>> parse_topology_opts(["oversubscription=3"])
{'oversubscription': '3'}
>>> format_count(2**25), format_fraction(1 / 128)
('32M', '1/128')
"""

from __future__ import annotations

import json
import math

from .errors import UserInputError
from .files import check_nesting, check_output_path, load_json, load_toml, read_bytes, read_text, resolve_output, writing
from .units import (MAX_SIZE, format_bytes, format_rate, format_time, parse_float, parse_fraction,
                    parse_size)

__all__ = [
    "MAX_SIZE", "MAX_SEED", "parse_size", "parse_fraction", "parse_float", "parse_int", "parse_seed",
    "parse_overlap", "parse_topology_opts", "parse_bool", "read_text", "read_bytes", "load_json", "check_nesting",
    "load_toml", "check_output_path", "resolve_output", "writing", "parse_stragglers",
    "format_bytes", "format_time", "format_rate", "format_count", "format_fraction", "format_axis_bytes",
    "strict_json", "write_json", "json_default", "check_exclusive",
]

#: seeds are non-negative and below 2^63 (what NumPy's generators accept, and fits an int64 column)
MAX_SEED = 2**63 - 1


def parse_int(text, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer option in ``[minimum, maximum]``; the error names ``what`` and the range."""
    if isinstance(text, bool):
        raise UserInputError(f"{what} {text!r} is not an integer")
    if isinstance(text, int):
        v = text
    else:
        try:
            v = int(str(text).strip())
        except ValueError:
            raise UserInputError(f"{what} {text!r} is not an integer") from None
    if minimum is not None and v < minimum:
        raise UserInputError(f"{what} {v} must be >= {minimum}")
    if maximum is not None and v > maximum:
        raise UserInputError(f"{what} {v} must be <= {maximum}")
    return v


def parse_seed(text, what: str = "--seed") -> int:
    """A seed: an integer in ``[0, 2^63 - 1]``."""
    return parse_int(text, what, 0, MAX_SEED)


def parse_overlap(text, what: str = "--overlap") -> float:
    """A fraction in ``[0, 1]`` (the topk workload's shared heavy indices)."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise UserInputError(f"{what} {text!r} is not a number in [0, 1]") from None
    if not 0.0 <= v <= 1.0:   # also false for NaN
        raise UserInputError(f"{what} {text!r} must be in [0, 1]")
    return v


def parse_topology_opts(items, what: str = "--topology-opt") -> dict:
    """``["key=value", ...]`` (or a dict) -> ``{key: value}``."""
    if isinstance(items, dict):
        return {str(k): v for k, v in items.items()}
    out = {}
    for item in items or ():
        if "=" not in str(item):
            raise UserInputError(f"{what} {item!r} must be KEY=VALUE")
        k, v = str(item).split("=", 1)
        out[k.strip()] = v.strip()
    return out


def check_exclusive(first, second, names: tuple, prefix: str = "") -> None:
    """Two inputs that exclude each other (``density`` and ``k``, ``elements`` and ``bytes``)
    both set are an error: ``give either A or B, not both``, with the names of the front
    end (``--density``/``--k`` on the command line) after ``prefix`` (``run(): ``)."""
    if first is not None and second is not None:
        raise UserInputError(f"{prefix}give either {names[0]} or {names[1]}, not both")


# -- axis and table formatting ----------------------------------------------------------------

def format_count(v) -> str:
    """An element count with a binary suffix when exact: ``format_count(2**25) == '32M'``."""
    if v >= 2**20 and v % 2**20 == 0:
        return f"{int(v // 2**20)}M"
    if v >= 2**10 and v % 2**10 == 0:
        return f"{int(v // 2**10)}K"
    return f"{v:g}"


def format_axis_bytes(v) -> str:
    """Bytes for an axis tick: ``format_axis_bytes(2**20) == '1 MiB'``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if v >= scale:
            return f"{v / scale:g} {unit}"
    return f"{v:g} B"


def format_fraction(v) -> str:
    """A density as ``1/128`` when it is one over an integer, else a short fraction or number."""
    from fractions import Fraction

    if not math.isfinite(v):
        return str(v)
    if v <= 0:
        return "0"
    inv = 1 / v
    if abs(inv - round(inv)) < 1e-6 * inv:
        return f"1/{round(inv)}"
    f = Fraction(v).limit_denominator(4096)
    return f"{f.numerator}/{f.denominator}" if abs(float(f) - v) < 1e-9 else f"{v:.3g}"


# -- one table: the parser of each run input given as text ---------------------------------------
# Every user value of a run is parsed here, once: ``RunConfig`` applies this table to the
# text it is given (by the command line, the Python API or a script), with the command
# line's flag names in the errors.

def _topology_opts(v):
    if isinstance(v, str):        # the Python API's "key=value,key=value"
        return parse_topology_opts([p for p in v.split(",") if p.strip()], "topology_opts")
    return parse_topology_opts(v, "--topology-opt")


def _chunk_size(v):
    n = parse_size(v, "--chunk-size")
    if n == 0:
        raise UserInputError(f"--chunk-size {n} must be > 0")
    return n


#: field of ``RunConfig`` -> parser of its text form (CLI flag names in errors)
RUN_FIELD_PARSERS = {
    "nodes": lambda v: parse_int(v, "--nodes", 1),
    "gpus": lambda v: parse_int(v, "--gpus", 1),
    "root": lambda v: parse_int(v, "--root", 0),
    "elements": lambda v: parse_size(v, "--elements"),
    "bytes": lambda v: parse_size(v, "--bytes"),
    "seed": lambda v: parse_seed(v, "--seed"),
    "density": lambda v: parse_fraction(v, "--density"),
    "k": lambda v: parse_size(v, "--k"),
    "overlap": lambda v: parse_overlap(v, "--overlap"),
    "memory_budget": lambda v: parse_size(v, "--memory-budget"),
    "topology_opts": _topology_opts,
}
#: algorithm options given as text
OPTION_PARSERS = {
    "group_size": lambda v: parse_int(v, "--group-size", 1),
    "chunk_size": _chunk_size,
    "channels": lambda v: parse_int(v, "--channels", 1),
    "resparsify": lambda v: parse_bool(v, "--resparsify"),
}


def parse_bool(v, what: str) -> bool:
    """``True``/``False`` from a bool or from true/yes/1/on and false/no/0/off (any case)."""
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t in ("true", "yes", "1", "on"):
        return True
    if t in ("false", "no", "0", "off"):
        return False
    raise UserInputError(f"{what} {v!r} must be true or false")


def coerce_run_fields(values: dict) -> dict:
    """Text values of run inputs parsed as the CLI parses them (``elements="32M"`` -> 33554432,
    ``density="1/128"``, ``topology_opts=["key=value", ...]``); other values are returned
    unchanged (checked when the run starts)."""
    out = dict(values)
    for key, value in values.items():
        text = isinstance(value, str) or (key == "topology_opts" and isinstance(value, (list, tuple)))
        if text and key in RUN_FIELD_PARSERS:
            out[key] = RUN_FIELD_PARSERS[key](value)
    if isinstance(out.get("options"), dict):
        out["options"] = {k: OPTION_PARSERS[k](v) if isinstance(v, str) and k in OPTION_PARSERS else v
                          for k, v in out["options"].items()}
    return out


def strict_json(obj):
    """``obj`` with every non-finite float replaced by ``None`` (JSON has no Infinity/NaN);
    the key of each replaced float is listed in ``"null_reasons"`` of the enclosing dict
    when it has none of its own (``algbw: null`` of a P = 1 run: "time_s is 0: ...")."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if hasattr(v, "item") and not isinstance(v, (list, dict)):
                v = v.item()
            out[k] = None if isinstance(v, float) and not math.isfinite(v) else strict_json(v)
        return out
    if isinstance(obj, (list, tuple)):
        return [None if isinstance(v, float) and not math.isfinite(v) else strict_json(v) for v in obj]
    return obj


def write_json(obj, dest, what: str = "--json") -> None:
    """Write ``obj`` as strict JSON (see :func:`strict_json`) to the path ``dest``, or to
    stdout for ``-``; a write error is one line naming ``what`` and ``dest``."""
    text = json.dumps(strict_json(obj), indent=2, sort_keys=False, default=json_default, allow_nan=False)
    if dest == "-":
        print(text)
    else:
        with writing(dest, what), open(dest, "w") as fh:
            fh.write(text + "\n")


def json_default(o):
    """NumPy scalars as Python numbers; anything else as its ``str``."""
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def parse_stragglers(values: list) -> dict:
    """``{rank: seconds}`` of ``--straggler RANK:DELAY`` values (a rank given twice adds up)."""
    out: dict = {}
    for v in values:
        rank, sep, delay = v.partition(":")
        try:
            r, d = int(rank), float(delay)
        except ValueError:
            r, d = -1, -1.0
        if not sep or r < 0 or not d >= 0 or d == float("inf"):
            raise UserInputError(f"--straggler {v!r} must be RANK:DELAY, a rank >= 0 and a delay in seconds >= 0 "
                                 "(e.g. 5:2e-4)")
        out[r] = out.get(r, 0.0) + d
    return out
