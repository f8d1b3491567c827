"""The results table of a sweep (CSV or Parquet, stable column types) and its journal.

A sweep appends each finished row to a journal next to the table (``.NAME.journal``, one
JSON object a line) and rewrites the table atomically now and then; a killed sweep's
journal is merged by the next one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported lazily, where it is used
    import pandas as pd

import io
import json
import os
from pathlib import Path

from ..errors import UserInputError
from ..files import check_size
from .config import TABLE_INPUTS

__all__ = ["read_results", "write_results", "existing_rows", "journal_path", "journal_rows", "STATUS_COLUMNS",
           "INT_COLUMNS", "FLOAT_COLUMNS", "BOOL_COLUMNS", "STR_COLUMNS"]

STATUS_COLUMNS = ("ok", "error", "ignored")

#: column types, the same in every table (integers stay integers when a point failed; the
#: Parquet schema of every sweep is the same, so ``pyarrow.dataset`` reads many together)
INT_COLUMNS = ("nodes", "gpus", "elements", "k", "seed", "group_size", "chunk_size", "memory_budget", "ranks",
               "bytes", "messages", "message_bytes", "events", "flows", "out_k", "dense_parts", "result_parts",
               "root", "out_root", "count", "channels", "schema_version")
FLOAT_COLUMNS = ("density", "overlap", "time_s", "algbw", "busbw", "wall_s", "out_density", "result_density",
                 "sim_wall_s", "compile_s", "nccl_predicted_us", "nccl_latency_us")
BOOL_COLUMNS = ("ok", "verified", "resparsify", "exact", "study", "out_study")
STR_COLUMNS = ("key", "topology", "topology_opts", "topology_file", "algorithm", "dtype", "workload", "inputs",
               "profile", "placement", "routing", "allgather", "densify", "verify", "error", "ignored", "kind",
               "out_dtype", "verification", "mode", "out_profile", "options", "top_links", "collective",
               "placement_order", "algorithm_chosen", "protocol", "nccl_algorithm", "nccl_model_choice",
               "timing", "out_routing", "out_timing", "nccl_version",
               "engine", "engine_note")


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
    check_size(path, "results file", "results table")
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
    head = ["key", *TABLE_INPUTS, *STATUS_COLUMNS]
    phases = sorted(c for c in cols if c.startswith("phase_"))
    link_bytes = sorted(c for c in cols if c.startswith("bytes_"))
    tail = [c for c in ("top_links", "wall_s") if c in cols]
    middle = [c for c in cols if c not in head and c not in phases and c not in link_bytes and c not in tail]
    return [c for c in head if c in cols] + middle + phases + link_bytes + tail


def _frame(rows: list):
    import pandas as pd

    df = pd.DataFrame.from_records(rows)
    if df.empty:
        return pd.DataFrame(columns=["key", *TABLE_INPUTS, *STATUS_COLUMNS])
    for c in TABLE_INPUTS + STATUS_COLUMNS:
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


def existing_rows(out) -> list:
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


def journal_path(out) -> Path:
    out = Path(out)
    return out.with_name(f".{out.name}.journal")


def journal_rows(out) -> list:
    """Rows appended by a sweep that did not get to rewrite the table (killed); a line cut
    short by the kill is not JSON and is dropped (its point runs again)."""
    path = journal_path(out)
    if not path.exists():
        return []
    check_size(path, "sweep journal", "results table")
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

