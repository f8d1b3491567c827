"""The marks of a figure: lines with markers (and min-max error bars) per hue value, and
stacked bars of the phases."""

from __future__ import annotations

from .axes import x_formatter, x_label
from .rows import approximate, sort_key

__all__ = ["draw_lines", "draw_breakdown", "hue_colors"]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")


def hue_colors(hues) -> dict:
    """The colour of each ``hue`` value, in the order given: tab10, or tab20 past ten values.
    One map for every panel of a figure, so one algorithm has one colour in all of them."""
    import matplotlib.pyplot as plt

    hues = list(hues)
    cmap = plt.get_cmap("tab10" if len(hues) <= 10 else "tab20")
    return {h: cmap(i % cmap.N) for i, h in enumerate(hues)}


def draw_lines(ax, sub, x, hue, hues, col, yscale, colors, speedup_over, handles, numeric_x):
    import numpy as np

    cats = None
    if not numeric_x:
        cats = sorted(sub[x].unique(), key=sort_key)
        pos = {c: i for i, c in enumerate(cats)}
    for j, hv in enumerate(hues):
        part = sub if hv is None else sub[sub[hue] == hv]
        if part.empty:
            continue
        part = part.sort_values(x, key=lambda s: s.map(sort_key))
        xs = part[x].map(pos).to_numpy() if cats is not None else part[x].to_numpy(dtype=float)
        ys = part[col].to_numpy(dtype=float) / yscale
        lo = part[col + "__lo"].to_numpy(dtype=float) / yscale
        hi = part[col + "__hi"].to_numpy(dtype=float) / yscale
        label = str(hv) if hv is not None else col
        is_base = speedup_over is not None and hue == "algorithm" and hv == speedup_over
        if is_base:
            label = f"{hv} (baseline)"
        approx = approximate(part)
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


def draw_breakdown(ax, sub, x, hue, hues, phases, yscale, handles):
    import numpy as np
    from matplotlib.patches import Patch

    xs = sorted(sub[x].unique(), key=sort_key)
    hv_present = [h for h in hues if h is None or (sub[hue] == h).any()]
    nh = max(1, len(hv_present))
    width = 0.8 / nh
    order = sorted(phases, key=_phase_rank)
    named = [p for p in order if p[6:] not in _PHASE_COLORS]
    color = {p: _PHASE_PALETTE[i % len(_PHASE_PALETTE)] for i, p in enumerate(named)}
    for p in phases:
        color.setdefault(p, _PHASE_COLORS.get(p[6:], "#999999"))
    bar_pos, bar_lab = [], []
    fmt = x_formatter(x)
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
    ax.set_xlabel(x_label(x))
    ax.set_xlim(-0.6, len(xs) - 0.4)
