"""The rows a figure draws: results read, filtered (``--where``), checked for one row per
plotted point (seeds averaged), and turned into speedups over a baseline."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported lazily, where it is used
    import pandas as pd

from pathlib import Path

from ..errors import UserInputError
from ..parsing import parse_fraction, parse_size
from .axes import BW_COLS, x_formatter

__all__ = ["load_results", "need", "input_columns", "apply_where", "sort_key", "check_unique", "speedup",
           "approximate", "all_numeric"]


def load_results(paths) -> "pd.DataFrame":
    """Concatenate results tables (CSV or Parquet by extension).

    A table without an ``ok`` column (``bench --csv``, a table made by hand) holds only
    successful rows: its rows get ``ok`` True, so a concatenation keeps ``ok`` boolean (a
    sweep's table marks its failed points ``ok`` False)."""
    import pandas as pd

    from ..sweeps import read_results

    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = [read_results(p) for p in paths]
    frames = [f if "ok" in f.columns else f.assign(ok=True) for f in frames]
    if not frames:
        raise UserInputError("no results file given")
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def need(df, col, what):
    if col not in df.columns:
        avail = ", ".join(str(c) for c in df.columns)
        raise UserInputError(f"{what} {col!r}: no such column in the results; available: {avail}")


def input_columns(df) -> list:
    from ..sweeps import INPUT_KEYS

    return [c for c in INPUT_KEYS if c in df.columns]


def _coerce(df, col, text):
    """A --where value in the type of column ``col``."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(df[col]):
        return str(text).strip().lower() in ("true", "1", "yes")
    if pd.api.types.is_numeric_dtype(df[col]):
        t = str(text).strip()
        for parse in (float, lambda v: float(parse_size(v)), lambda v: parse_fraction(v)):
            try:
                return parse(t)
            except (ValueError, UserInputError):
                continue
        raise UserInputError(f"--where {col}={text}: {text!r} is not a number (column {col!r} is numeric)")
    return str(text)


def apply_where(df, where):
    import numpy as np

    if not where:
        return df, []
    items = where.items() if isinstance(where, dict) else [_split_where(w) for w in where]
    shown = []
    for col, value in items:
        need(df, col, "--where column")
        values = value if isinstance(value, (list, tuple)) else str(value).split(",")
        wanted = [_coerce(df, col, v) for v in values]
        if isinstance(wanted[0], float):
            mask = np.zeros(len(df), dtype=bool)
            for w in wanted:
                mask |= np.isclose(df[col].astype(float), w, rtol=1e-9, atol=0)
        else:
            mask = df[col].astype(str).isin([str(w) for w in wanted]).to_numpy()
        if not mask.any():
            present = ", ".join(sorted({str(v) for v in df[col].dropna().unique()})[:20])
            raise UserInputError(f"--where {col}={value}: no row has that value; {col} takes: {present}")
        df = df[mask]
        fmt = x_formatter(col)
        shown.append(f"{col} = " + ",".join(fmt(w) if isinstance(w, float) else str(w) for w in wanted))
    return df, shown


def _split_where(text):
    if "=" not in str(text):
        raise UserInputError(f"--where {text!r} must be COLUMN=VALUE (VALUE may be a comma-separated list)")
    col, value = str(text).split("=", 1)
    return col.strip(), value.strip()



# -- data preparation ------------------------------------------------------------------------

def sort_key(v):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def check_unique(df, dims, value_cols):
    """Average rows that differ only in seed; error if other inputs differ."""
    dims = [d for d in dims if d is not None]
    others = [c for c in input_columns(df) if c not in dims]
    grouped = df.groupby(dims, dropna=False, sort=False)
    sizes = grouped.size()
    if (sizes <= 1).all():
        out = df.copy()
        for c in value_cols:
            out[c + "__lo"] = out[c]
            out[c + "__hi"] = out[c]
        return out, False
    varying = []
    for c in others:
        n = grouped[c].nunique(dropna=False)
        if (n > 1).any():
            varying.append(c)
    real = [c for c in varying if c != "seed"]
    if real:
        details = "; ".join(
            f"{c} ({', '.join(sorted({str(v) for v in df[c].unique()})[:6])})" for c in real[:4])
        raise UserInputError(
            f"several rows per plotted point: they differ in {details}; pick one with --where COL=VALUE "
            f"or show it with --hue/--facet")
    agg = {c: ["mean", "min", "max"] for c in value_cols}
    g = grouped.agg(agg)
    g.columns = [f"{c}{'' if s == 'mean' else '__lo' if s == 'min' else '__hi'}" for c, s in g.columns]
    return g.reset_index(), "seed" in varying


def speedup(df, y, baseline):
    import numpy as np

    from ..sweeps.config import ALGO_OPTIONS

    need(df, "algorithm", "--speedup-over needs the column")
    base = df[df["algorithm"] == baseline]
    if base.empty:
        have = ", ".join(sorted(df["algorithm"].astype(str).unique()))
        raise UserInputError(f"--speedup-over {baseline}: no successful row of algorithm {baseline!r}; "
                             f"algorithms in the results: {have}")
    match = [c for c in input_columns(df) if c != "algorithm" and c not in ALGO_OPTIONS
             and not base[c].isna().all()]
    key = lambda frame: frame[match].astype(str).agg("|".join, axis=1) if match else ["*"] * len(frame)  # noqa: E731
    base = base.assign(_k=list(key(base)))
    dup = base.groupby("_k")[y].nunique()
    if (dup > 1).any():
        raise UserInputError(f"--speedup-over {baseline}: several {baseline} rows with different {y} for the same "
                             "inputs (they differ in an algorithm option); narrow them with --where")
    ref = base.groupby("_k")[y].first()
    out = df.assign(_k=list(key(df)))
    out["_base"] = out["_k"].map(ref)
    missing = out["_base"].isna().sum()
    out = out[out["_base"].notna()]
    if out.empty:
        raise UserInputError(f"--speedup-over {baseline}: no row has a {baseline} row with the same inputs "
                             f"({', '.join(match)})")
    if y in BW_COLS:
        out["speedup"] = out[y] / out["_base"]
    else:
        out["speedup"] = np.where(out[y] > 0, out["_base"] / out[y], np.nan)
    return out.drop(columns=["_k", "_base"]), int(missing)



def approximate(rows) -> bool:
    """Rows of an approximate algorithm or option (``exact`` False: gtopk, --resparsify)."""
    if "exact" in rows.columns and rows["exact"].notna().any():
        return not bool(rows["exact"].fillna(True).astype(bool).all())
    if "algorithm" in rows.columns:        # tables without the exact column
        from ..algorithms import load_all

        algos = load_all()
        names = set(rows["algorithm"].astype(str))
        if any(n in algos and not algos[n].exact for n in names):
            return True
    if "resparsify" in rows.columns:
        return bool(rows["resparsify"].fillna(False).astype(bool).any())
    return False


def all_numeric(series) -> bool:
    import pandas as pd

    return bool(pd.to_numeric(series.dropna(), errors="coerce").notna().all()) and series.notna().any()
