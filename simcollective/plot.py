"""Figures from sweep results: ``simcollective plot``.

``simcollective plot RESULTS --x COL [--y COL] [--hue COL] [--facet COL] [--logx] [--logy]
[--where COL=VALUE ...] -o FILE`` draws, from one or more results tables (CSV/Parquet):

* scaling curves (default): one line per ``--hue`` value, markers, one panel per
  ``--facet`` value, axes labelled with units (times scaled to s/ms/us, bandwidths in GB/s,
  sizes as 4M, densities as 1/128);
* ``--speedup-over ALGORITHM``: y becomes baseline time / time for the row of the baseline
  algorithm with the same other inputs (for ``algbw``/``busbw``: value / baseline value);
* ``--breakdown``: stacked bars of the ``phase_*`` columns (time per phase of the last rank
  to finish, adding up to ``time_s``) per x value, one bar per ``--hue`` value.

Failed rows (``ok`` False) are left out. Several rows for one plotted point are an error
naming the columns they differ in (use ``--where`` or another ``--hue``/``--facet``), except
rows differing only in ``seed``: those are averaged, with min-max error bars. The output
type follows the extension: .png, .svg or .pdf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported lazily, where it is used
    import pandas as pd

import math
import sys
from pathlib import Path

from .errors import UserInputError
from .parsing import check_output_path, format_axis_bytes, format_count, format_fraction, parse_fraction, parse_size

__all__ = ["plot_results", "load_results", "save_figure", "FIGURE_SUFFIXES", "add_parser"]

_TIME_COLS = ("time_s", "wall_s")
_BW_COLS = ("algbw", "busbw")
_POW2_COLS = ("elements", "bytes", "message_bytes", "ranks", "gpus", "nodes", "k", "out_k", "density",
              "out_density", "result_density", "chunk_size", "group_size")
_LABELS = {
    "time_s": "allreduce time", "wall_s": "simulator wall time", "algbw": "algorithm bandwidth",
    "busbw": "bus bandwidth", "elements": "vector length N (elements)", "bytes": "vector size",
    "message_bytes": "bytes sent", "ranks": "GPUs", "gpus": "GPUs", "nodes": "nodes",
    "density": "density d (nonzeros / N)", "out_density": "density d (nonzeros / N)",
    "result_density": "result density (nonzeros / N)", "k": "nonzeros per rank k", "out_k": "nonzeros per rank k",
    "messages": "messages", "events": "simulation events", "flows": "flows", "group_size": "group size",
    "chunk_size": "chunk size", "topology": "topology", "algorithm": "algorithm", "profile": "network profile",
}
_SIZE_COLS = ("bytes", "message_bytes", "chunk_size")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")


def load_results(paths) -> "pd.DataFrame":
    """Concatenate results tables (CSV or Parquet by extension)."""
    import pandas as pd

    from .sweep import read_results

    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = [read_results(p) for p in paths]
    if not frames:
        raise UserInputError("no results file given")
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _need(df, col, what):
    if col not in df.columns:
        avail = ", ".join(str(c) for c in df.columns)
        raise UserInputError(f"{what} {col!r}: no such column in the results; available: {avail}")


def _input_columns(df) -> list:
    from .sweep import INPUT_KEYS

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


def _apply_where(df, where):
    import numpy as np

    if not where:
        return df, []
    items = where.items() if isinstance(where, dict) else [_split_where(w) for w in where]
    shown = []
    for col, value in items:
        _need(df, col, "--where column")
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
        fmt = _x_formatter(col)
        shown.append(f"{col} = " + ",".join(fmt(w) if isinstance(w, float) else str(w) for w in wanted))
    return df, shown


def _split_where(text):
    if "=" not in str(text):
        raise UserInputError(f"--where {text!r} must be COLUMN=VALUE (VALUE may be a comma-separated list)")
    col, value = str(text).split("=", 1)
    return col.strip(), value.strip()


# -- axis formatting -------------------------------------------------------------------------

_fmt_count = format_count          # the formatters live in simcollective.parsing (public)
_fmt_bytes = format_axis_bytes
_fmt_fraction = format_fraction


def _time_unit(values):
    vmax = max((abs(v) for v in values if v == v), default=1.0)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if vmax >= scale:
            return unit, scale
    return "ns", 1e-9


def _y_spec(col, values, speedup_over=None, sparse=False):
    """(label, divisor) of the y axis."""
    if speedup_over is not None:
        return f"speedup over {speedup_over} (×)", 1.0
    if col in _TIME_COLS or col.startswith("phase_"):
        unit, scale = _time_unit(values)
        name = _LABELS.get(col, col[6:] + " time" if col.startswith("phase_") else col)
        return f"{name} ({unit})", scale
    if col in _BW_COLS:
        if sparse and col == "busbw":
            return "effective bus bandwidth, dense equivalent (GB/s)", 1e9
        return f"{_LABELS[col]} (GB/s)", 1e9
    if col in _SIZE_COLS or col.startswith("bytes_"):
        return f"{_LABELS.get(col, col.replace('bytes_', '') + ' bytes')} (MiB)", 2**20
    return _LABELS.get(col, col), 1.0


def _x_formatter(col):
    if col in ("density", "out_density", "result_density"):
        return _fmt_fraction
    if col in _SIZE_COLS:
        return _fmt_bytes
    if col in ("elements", "k", "out_k"):
        return _fmt_count
    return lambda v: f"{v:g}"


def _x_label(col):
    if col in _TIME_COLS:
        return _LABELS[col] + " (s)"
    if col in _BW_COLS:
        return _LABELS[col] + " (B/s)"
    return _LABELS.get(col, col)


def _style_x(ax, col, xs, logx, numeric):
    import matplotlib.ticker as mt

    if not numeric:
        return
    base = 2 if col in _POW2_COLS else 10
    if logx:
        ax.set_xscale("log", base=base)
    vals = sorted(set(xs))
    if len(vals) <= 12:
        ax.xaxis.set_major_locator(mt.FixedLocator(vals))
        ax.xaxis.set_minor_locator(mt.NullLocator())
        fmt = _x_formatter(col)
        ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: fmt(v)))
        if len(vals) > 6 or max(len(fmt(v)) for v in vals) > 5:
            for lab in ax.get_xticklabels():
                lab.set_rotation(30)
                lab.set_ha("right")


def _log_y(ax):
    """Log y axis labelled with plain numbers (1, 2, 5 per decade), not 2 x 10^1."""
    import matplotlib.ticker as mt

    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-300) < 1e3 else (1.0,)
    ax.yaxis.set_major_locator(mt.LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_minor_formatter(mt.NullFormatter())


# -- data preparation ------------------------------------------------------------------------

def _sort_key(v):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def _check_unique(df, dims, value_cols):
    """Average rows that differ only in seed; error if other inputs differ."""
    dims = [d for d in dims if d is not None]
    others = [c for c in _input_columns(df) if c not in dims]
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


def _speedup(df, y, baseline):
    import numpy as np

    from .sweep import ALGO_OPTIONS

    _need(df, "algorithm", "--speedup-over needs the column")
    base = df[df["algorithm"] == baseline]
    if base.empty:
        have = ", ".join(sorted(df["algorithm"].astype(str).unique()))
        raise UserInputError(f"--speedup-over {baseline}: no successful row of algorithm {baseline!r}; "
                             f"algorithms in the results: {have}")
    match = [c for c in _input_columns(df) if c != "algorithm" and c not in ALGO_OPTIONS
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
    if y in _BW_COLS:
        out["speedup"] = out[y] / out["_base"]
    else:
        out["speedup"] = np.where(out[y] > 0, out["_base"] / out[y], np.nan)
    return out.drop(columns=["_k", "_base"]), int(missing)


# -- plotting --------------------------------------------------------------------------------

def plot_results(data, x, y="time_s", hue=None, facet=None, logx=False, logy=False, speedup_over=None,
                 breakdown=False, where=None, out=None, title=None, sharey=False, ax=None):
    """Draw a figure from results; return the matplotlib Figure (saved to ``out`` if given).

    ``ax``: draw into this matplotlib Axes (one panel: no ``facet``) and return its Figure.
    The matplotlib backend is never changed (the command line alone selects Agg).

    ``data``: a DataFrame or path(s) of results tables. ``where``: a dict ``{col: value}``
    or a list of ``"COL=VALUE"`` strings (``VALUE`` may list several values, ``a,b``).
    """
    if out is not None:
        check_output_path(out, "-o", FIGURE_SUFFIXES)
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else load_results(data)
    if breakdown and speedup_over:
        raise UserInputError("--breakdown and --speedup-over do not combine; draw them separately")
    for col, what in ((x, "--x"), (hue, "--hue"), (facet, "--facet")):
        if col is not None:
            _need(df, col, what)
    if not breakdown:
        _need(df, y, "--y")
    if "ok" in df.columns:
        df = df[df["ok"].astype(bool)]
    if df.empty:
        raise UserInputError("no successful rows in the results to plot")
    if not breakdown and not pd.api.types.is_numeric_dtype(df[y]) and not _all_numeric(df[y]):
        numeric = [str(c) for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
                   and not pd.api.types.is_bool_dtype(df[c]) and df[c].notna().any() and str(c) != "key"]
        raise UserInputError(f"--y {y!r} is not a numeric column; numeric columns: {', '.join(numeric)}")
    df, filters = _apply_where(df, where)
    df = df[df[x].notna()]
    if df.empty:
        raise UserInputError(f"no row has a value in --x column {x!r}")
    notes = []
    if speedup_over:
        df, missing = _speedup(df, y, speedup_over)
        if missing:
            notes.append(f"{missing} rows without a matching {speedup_over} row left out")
        value_cols = ["speedup"]
    elif breakdown:
        phases = [c for c in df.columns if str(c).startswith("phase_") and df[c].fillna(0).abs().sum() > 0]
        if not phases:
            raise UserInputError("--breakdown needs phase_* columns (a sweep results table); there are none")
        df = df.copy()
        df[phases] = df[phases].fillna(0.0)
        value_cols = phases
    else:
        value_cols = [y]
    df, averaged = _check_unique(df, [facet, hue, x], value_cols)
    if averaged:
        notes.append("mean over seeds, bars: min-max")

    import matplotlib.pyplot as plt

    facets = sorted(df[facet].unique(), key=_sort_key) if facet else [None]
    hues = sorted(df[hue].unique(), key=_sort_key) if hue else [None]
    n = len(facets)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    numeric_x = pd.api.types.is_numeric_dtype(df[x]) and not breakdown
    if breakdown:
        n_bars = df.groupby(facet).size().max() if facet else len(df)
        panel_w = min(9.0, max(4.5, 0.25 * n_bars + 1.5))
        panel_h = 4.2
    else:
        panel_w, panel_h = 4.6, 3.5
    given_ax = ax
    if ax is not None:
        if n > 1:
            raise UserInputError(f"ax= draws one panel; --facet {facet} has {n} values (leave ax out or drop facet)")
        fig, axes = ax.figure, [[ax]]
    else:
        fig, axes = plt.subplots(nrows, ncols, figsize=(panel_w * ncols + 1.8, panel_h * nrows + 0.4),
                                 squeeze=False, sharey=sharey)
    cmap = plt.get_cmap("tab10" if len(hues) <= 10 else "tab20")
    colors = {h: cmap(i % cmap.N) for i, h in enumerate(hues)}
    sparse = "kind" in df.columns and (df["kind"].astype(str) == "sparse").any()
    ylabel, yscale = _y_spec(y if not breakdown else "phase_", df[value_cols].to_numpy().ravel().tolist(),
                             speedup_over, sparse)
    if breakdown:
        ylabel = f"time per phase ({_time_unit(df[value_cols].sum(axis=1).tolist())[0]})"
        yscale = _time_unit(df[value_cols].sum(axis=1).tolist())[1]
    handles = {}
    for i, fv in enumerate(facets):
        ax = axes[i // ncols][i % ncols]
        sub = df if fv is None else df[df[facet] == fv]
        if breakdown:
            _draw_breakdown(ax, sub, x, hue, hues, value_cols, yscale, handles)
        else:
            _draw_lines(ax, sub, x, hue, hues, value_cols[0], yscale, colors, speedup_over, handles, numeric_x)
            _style_x(ax, x, sub[x].tolist(), logx, numeric_x)
            ax.set_xlabel(_x_label(x))
        if logy:
            _log_y(ax)
        if i % ncols == 0 or not sharey:
            ax.set_ylabel(ylabel)
        if fv is not None:
            ax.set_title(f"{facet} = {fv}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_axisbelow(True)
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    legend_title = "phase" if breakdown else (hue if hue else None)
    if handles:
        labels = list(handles)
        hs = [handles[k] for k in labels]
        if breakdown:
            labels, hs = labels[::-1], hs[::-1]
        if n > 1 or breakdown:
            fig.legend(hs, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, title=legend_title,
                       fontsize=9)
        elif len(labels) > 1 or hue:
            axes[0][0].legend(hs, labels, title=legend_title, fontsize=8, title_fontsize=9, frameon=False)
    sup = title or "; ".join(filters)
    if notes:
        sup = (sup + "  " if sup else "") + "(" + "; ".join(notes) + ")"
    if sup:
        if given_ax is not None:
            given_ax.set_title(sup, fontsize=10)
        else:
            fig.suptitle(sup, fontsize=11)
    if given_ax is None:
        fig.tight_layout()
    if out is not None:
        save_figure(fig, out)
        if given_ax is None:
            plt.close(fig)
    return fig


#: figure file types, chosen by the extension of the output path
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def save_figure(fig, out) -> None:
    """Save reproducibly: the same figure gives the same bytes (no creation date in PDF/SVG
    metadata), so re-running an experiment does not rewrite committed figures."""
    check_output_path(out, "-o", FIGURE_SUFFIXES)
    ext = Path(out).suffix.lower()
    metadata = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
                "svg": {"Date": None, "Creator": None}}[ext[1:]]
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "simcollective"}):     # stable SVG element ids
        fig.savefig(out, dpi=200 if ext == ".png" else None, bbox_inches="tight", metadata=metadata)


def _approximate(rows) -> bool:
    """Rows of an approximate algorithm or option (``exact`` False: gtopk, --resparsify)."""
    if "exact" in rows.columns and rows["exact"].notna().any():
        return not bool(rows["exact"].fillna(True).astype(bool).all())
    if "algorithm" in rows.columns:        # tables written before the exact column
        from .algorithms import load_all

        algos = load_all()
        names = set(rows["algorithm"].astype(str))
        if any(n in algos and not algos[n].exact for n in names):
            return True
    if "resparsify" in rows.columns:
        return bool(rows["resparsify"].fillna(False).astype(bool).any())
    return False


def _all_numeric(series) -> bool:
    import pandas as pd

    return bool(pd.to_numeric(series.dropna(), errors="coerce").notna().all()) and series.notna().any()


def _draw_lines(ax, sub, x, hue, hues, col, yscale, colors, speedup_over, handles, numeric_x):
    import numpy as np

    cats = None
    if not numeric_x:
        cats = sorted(sub[x].unique(), key=_sort_key)
        pos = {c: i for i, c in enumerate(cats)}
    for j, hv in enumerate(hues):
        part = sub if hv is None else sub[sub[hue] == hv]
        if part.empty:
            continue
        part = part.sort_values(x, key=lambda s: s.map(_sort_key))
        xs = part[x].map(pos).to_numpy() if cats is not None else part[x].to_numpy(dtype=float)
        ys = part[col].to_numpy(dtype=float) / yscale
        lo = part[col + "__lo"].to_numpy(dtype=float) / yscale
        hi = part[col + "__hi"].to_numpy(dtype=float) / yscale
        label = str(hv) if hv is not None else col
        is_base = speedup_over is not None and hue == "algorithm" and hv == speedup_over
        if is_base:
            label = f"{hv} (baseline)"
        approx = _approximate(part)
        if approx:
            label += " (approximate)"
        kw = dict(color="black" if is_base else colors[hv], marker=_MARKERS[j % len(_MARKERS)], markersize=5,
                  linewidth=1.2 if is_base else 1.6, linestyle="--" if is_base else (":" if approx else "-"),
                  label=label)
        if approx:             # hollow markers, dotted line: not the exact sum
            kw["markerfacecolor"] = "white"
        if np.any(hi > lo):
            h = ax.errorbar(xs, ys, yerr=[ys - lo, hi - ys], capsize=2, **kw)
        else:
            (h,) = ax.plot(xs, ys, **kw)
        handles.setdefault(label, h)
    if speedup_over is not None:
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle=":")
    if cats is not None:
        ax.set_xticks(range(len(cats)), [str(c) for c in cats], rotation=30 if len(cats) > 4 else 0,
                      ha="right" if len(cats) > 4 else "center")


_PHASE_COLORS = {"other": "#bdbdbd", "compute": "#525252"}
_PHASE_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                  "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2")


def _phase_rank(col: str):
    """Roughly chronological stacking: reduce(-scatter) phases first (intra before inter),
    then allgather/broadcast phases (inter before intra); other and compute on top."""
    name = col[6:]
    if name in _PHASE_COLORS:
        return (3, name)
    late = any(w in name for w in ("allgather", "gather", "broadcast", "bcast"))
    early = any(w in name for w in ("reduce", "scatter"))
    stage = 1 if early and late else (2 if late else 0)
    sub = ("intra" in name) if stage == 2 else ("inter" in name)
    return (stage, int(sub), name)


def _draw_breakdown(ax, sub, x, hue, hues, phases, yscale, handles):
    import numpy as np
    from matplotlib.patches import Patch

    xs = sorted(sub[x].unique(), key=_sort_key)
    hv_present = [h for h in hues if h is None or (sub[hue] == h).any()]
    nh = max(1, len(hv_present))
    width = 0.8 / nh
    order = sorted(phases, key=_phase_rank)
    named = [p for p in order if p[6:] not in _PHASE_COLORS]
    color = {p: _PHASE_PALETTE[i % len(_PHASE_PALETTE)] for i, p in enumerate(named)}
    for p in phases:
        color.setdefault(p, _PHASE_COLORS.get(p[6:], "#999999"))
    bar_pos, bar_lab = [], []
    fmt = _x_formatter(x)
    used = set()
    for i, xv in enumerate(xs):
        for j, hv in enumerate(hv_present):
            row = sub[(sub[x] == xv) & ((sub[hue] == hv) if hv is not None else True)]
            if row.empty:
                continue
            p0 = i + (j - (nh - 1) / 2) * width
            bottom = 0.0
            for ph in order:
                v = float(row[ph].iloc[0]) / yscale
                if v <= 0:
                    continue
                ax.bar(p0, v, width * 0.92, bottom=bottom, color=color[ph], edgecolor="white", linewidth=0.4)
                used.add(ph)
                bottom += v
            bar_pos.append(p0)
            bar_lab.append(str(hv) if hv is not None else "")
    for ph in order:                 # legend in stacking order (reversed by the caller: top first)
        if ph in used:
            handles.setdefault(ph[6:], Patch(facecolor=color[ph], edgecolor="white"))
    group_labels = [fmt(v) if isinstance(v, (int, float, np.integer, np.floating)) else str(v) for v in xs]
    if hue is not None and nh > 1:
        ax.xaxis.remove_overlapping_locs = False
        ax.set_xticks(bar_pos, bar_lab, minor=True, rotation=90, fontsize=7)
        longest = max((len(s) for s in bar_lab), default=0)
        ax.set_xticks(range(len(xs)), group_labels)
        ax.tick_params(axis="x", which="major", length=0, pad=6 + 3.7 * longest)
        ax.tick_params(axis="x", which="minor", length=2)
    else:
        ax.set_xticks(range(len(xs)), group_labels)
    ax.set_xlabel(_x_label(x))
    ax.set_xlim(-0.6, len(xs) - 0.4)


# -- command line ----------------------------------------------------------------------------

def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "plot", help="draw scaling curves, speedups or phase breakdowns from sweep results",
        description="Draw a figure from one or more results tables of `simcollective sweep`: scaling "
                    "curves (default), speedup over a baseline algorithm (--speedup-over), or stacked "
                    "phase breakdowns (--breakdown). PNG, SVG or PDF by the extension of -o.",
        epilog="example: simcollective plot results.csv --x gpus --y time_s --hue algorithm --facet topology "
               "--where profile=smpi --logx --logy -o scaling.pdf")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results tables (.csv or .parquet)")
    p.add_argument("--x", required=True, metavar="COL", help="column on the x axis (e.g. gpus, elements, density)")
    p.add_argument("--y", default="time_s", metavar="COL", help="column on the y axis (default: time_s)")
    p.add_argument("--hue", metavar="COL", help="one line (or bar) per value of this column (e.g. algorithm)")
    p.add_argument("--facet", metavar="COL", help="one panel per value of this column (e.g. topology)")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE",
                   help="keep rows with this value (repeatable; VALUE may be a comma-separated list)")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis (base 2 for sizes and counts)")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--speedup-over", metavar="ALGORITHM", help="plot baseline time / time at the same other inputs")
    p.add_argument("--breakdown", action="store_true", help="stacked bars of the phase_* columns")
    p.add_argument("--sharey", action="store_true", help="one y scale for all panels")
    p.add_argument("--title", help="figure title (default: the --where filters)")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help="output .png, .svg or .pdf")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    import matplotlib

    matplotlib.use("Agg")      # the command line draws to files only
    plot_results(args.results, x=args.x, y=args.y, hue=args.hue, facet=args.facet, logx=args.logx,
                 logy=args.logy, speedup_over=args.speedup_over, breakdown=args.breakdown, where=args.where,
                 out=args.out, title=args.title, sharey=args.sharey)
    print(f"wrote {args.out}")
    return 0


# ``simcollective.plot(...)`` is the Python API function (:func:`simcollective.api.plot`): importing
# this submodule binds its name on the package, so the module itself is callable and delegates.
class _CallableModule(type(sys.modules[__name__])):
    def __call__(self, *args, **kwargs):
        from .api import plot as api_plot

        return api_plot(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
