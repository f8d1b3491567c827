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

import math
from pathlib import Path

from ..errors import UserInputError
from ..parsing import check_output_path, writing
from .axes import log_y, style_x, time_unit, x_label, y_spec
from .marks import draw_breakdown, draw_lines, hue_colors
from .rows import all_numeric, apply_where, check_unique, load_results, need, sort_key, speedup

__all__ = ["plot_results", "load_results", "hue_colors", "save_figure", "FIGURE_SUFFIXES", "add_parser"]

# -- plotting --------------------------------------------------------------------------------

def plot_results(data, x, y="time_s", hue=None, facet=None, logx=False, logy=False, speedup_over=None,
                 breakdown=False, where=None, out=None, title=None, sharey=False, ax=None, colors=None):
    """Draw a figure from results; return the matplotlib Figure (saved to ``out`` if given).

    ``ax``: draw into this matplotlib Axes (one panel: no ``facet``) and return its Figure.
    ``colors``: ``{hue value: matplotlib colour}``, to give a value one colour across several
    figures (each figure's own map otherwise: :func:`hue_colors` of its values); values not
    in it take that default.
    The matplotlib backend is never changed (the command line alone selects Agg).

    ``data``: a DataFrame or path(s) of results tables. ``where``: a dict ``{col: value}``
    or a list of ``"COL=VALUE"`` strings (``VALUE`` may list several values, ``a,b``).
    """
    if out is not None:
        check_output_path(out, "-o", FIGURE_SUFFIXES)
    df, value_cols, filters, notes = _rows(data, x, y, hue, facet, speedup_over, breakdown, where)
    import matplotlib.pyplot as plt
    import pandas as pd

    facets = sorted(df[facet].unique(), key=sort_key) if facet else [None]
    hues = sorted(df[hue].unique(), key=sort_key) if hue else [None]
    fig, axes, ncols = _panels(df, facet, len(facets), breakdown, ax, sharey)
    numeric_x = pd.api.types.is_numeric_dtype(df[x]) and not breakdown
    colors = {h: (colors or {}).get(h, c) for h, c in hue_colors(hues).items()}
    ylabel, yscale = _y_axis(df, y, value_cols, breakdown, speedup_over)
    handles, in_panel = {}, []
    for i, fv in enumerate(facets):
        pax = axes[i // ncols][i % ncols]
        sub = df if fv is None else df[df[facet] == fv]
        drawn = {}
        if breakdown:
            draw_breakdown(pax, sub, x, hue, hues, value_cols, yscale, drawn)
        else:
            draw_lines(pax, sub, x, hue, hues, value_cols[0], yscale, colors, speedup_over, drawn, numeric_x)
            style_x(pax, x, sub[x].tolist(), logx, numeric_x)
            pax.set_xlabel(x_label(x))
        in_panel.append((pax, drawn))
        for label, h in drawn.items():
            handles.setdefault(label, h)
        if logy:
            log_y(pax)
        if i % ncols == 0 or not sharey:
            pax.set_ylabel(ylabel)
        if fv is not None:
            pax.set_title(f"{facet} = {fv}", fontsize=10)
        pax.grid(True, which="major", alpha=0.3)
        pax.set_axisbelow(True)
    for j in range(len(facets), len(axes) * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    _legend(fig, axes, handles, in_panel, breakdown, hue)
    _title(fig, ax, title, filters, notes)
    if ax is None:
        fig.tight_layout()
    if out is not None:
        save_figure(fig, out)
        if ax is None:
            plt.close(fig)
    return fig


def _title(fig, ax, title, filters, notes) -> None:
    """The title (default: the --where filters) and the notes on the rows, over the figure
    (or over ``ax`` when drawing into one)."""
    sup = title or "; ".join(filters)
    if notes:
        sup = (sup + "  " if sup else "") + "(" + "; ".join(notes) + ")"
    if sup:
        if ax is not None:
            ax.set_title(sup, fontsize=10)
        else:
            fig.suptitle(sup, fontsize=11)


def _rows(data, x, y, hue, facet, speedup_over, breakdown, where) -> tuple:
    """``(rows, value columns, filter texts, notes)``: the successful rows to draw, checked."""
    import pandas as pd

    df = data if isinstance(data, pd.DataFrame) else load_results(data)
    if breakdown and speedup_over:
        raise UserInputError("--breakdown and --speedup-over do not combine; draw them separately")
    for col, what in ((x, "--x"), (hue, "--hue"), (facet, "--facet")):
        if col is not None:
            need(df, col, what)
    if not breakdown:
        need(df, y, "--y")
    if "ok" in df.columns:
        df = df[df["ok"].astype(bool)]
    if df.empty:
        raise UserInputError("no successful rows in the results to plot")
    if not breakdown and not pd.api.types.is_numeric_dtype(df[y]) and not all_numeric(df[y]):
        numeric = [str(c) for c in df.columns if pd.api.types.is_numeric_dtype(df[c])
                   and not pd.api.types.is_bool_dtype(df[c]) and df[c].notna().any() and str(c) != "key"]
        raise UserInputError(f"--y {y!r} is not a numeric column; numeric columns: {', '.join(numeric)}")
    df, filters = apply_where(df, where)
    df = df[df[x].notna()]
    if df.empty:
        raise UserInputError(f"no row has a value in --x column {x!r}")
    notes = []
    if speedup_over:
        df, missing = speedup(df, y, speedup_over)
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
    df, averaged = check_unique(df, [facet, hue, x], value_cols)
    if averaged:
        notes.append("mean over seeds, bars: min-max")
    return df, value_cols, filters, notes


def _panels(df, facet, n, breakdown, ax, sharey) -> tuple:
    """``(figure, axes grid, columns)``: one panel per facet value, three to a row, or ``ax``."""
    import matplotlib.pyplot as plt

    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    if breakdown:
        n_bars = df.groupby(facet).size().max() if facet else len(df)
        panel_w = min(9.0, max(4.5, 0.25 * n_bars + 1.5))
        panel_h = 4.2
    else:
        panel_w, panel_h = 4.6, 3.5
    if ax is not None:
        if n > 1:
            raise UserInputError(f"ax= draws one panel; --facet {facet} has {n} values (leave ax out or drop facet)")
        return ax.figure, [[ax]], ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel_w * ncols + 1.8, panel_h * nrows + 0.4),
                             squeeze=False, sharey=sharey)
    return fig, axes, ncols


def _y_axis(df, y, value_cols, breakdown, speedup_over) -> tuple:
    """``(label, divisor)`` of the y axis."""
    sparse = "kind" in df.columns and (df["kind"].astype(str) == "sparse").any()
    colls = set(df["collective"].fillna("allreduce").astype(str)) if "collective" in df.columns else {"allreduce"}
    ylabel, yscale = y_spec(y if not breakdown else "phase_", df[value_cols].to_numpy().ravel().tolist(),
                            speedup_over, sparse, colls.pop() if len(colls) == 1 else None)
    if breakdown:
        ylabel = f"time per phase ({time_unit(df[value_cols].sum(axis=1).tolist())[0]})"
        yscale = time_unit(df[value_cols].sum(axis=1).tolist())[1]
    return ylabel, yscale


def _legend(fig, axes, handles, in_panel, breakdown, hue) -> None:
    """One legend for the figure, or, when the panels draw different ``hue`` values (e.g. the
    algorithms of two collectives), one legend in each panel naming what that panel draws."""
    legend_title = "phase" if breakdown else (hue if hue else None)
    if not handles:
        return
    n = len(in_panel)
    if n > 1 and not breakdown and len({tuple(drawn) for _, drawn in in_panel}) > 1:
        for pax, drawn in in_panel:
            if drawn:
                pax.legend(list(drawn.values()), list(drawn), title=legend_title, fontsize=7, title_fontsize=8,
                           frameon=False)
        return
    labels = list(handles)
    hs = [handles[k] for k in labels]
    if breakdown:
        labels, hs = labels[::-1], hs[::-1]
    if n > 1 or breakdown:
        fig.legend(hs, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, title=legend_title,
                   fontsize=9)
    elif len(labels) > 1 or hue:
        axes[0][0].legend(hs, labels, title=legend_title, fontsize=8, title_fontsize=9, frameon=False)


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
        with writing(out, "-o"):
            fig.savefig(out, dpi=200 if ext == ".png" else None, bbox_inches="tight", metadata=metadata)



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

