"""The axes of a figure: labels with units, scales (times in s/ms/us, bandwidths in GB/s,
sizes as 4M, densities as 1/128) and tick formatters."""

from __future__ import annotations

from ..parsing import format_axis_bytes, format_count, format_fraction

__all__ = ["TIME_COLS", "BW_COLS", "time_unit", "y_spec", "x_formatter", "x_label", "style_x", "log_y"]

TIME_COLS = ("time_s", "wall_s")
BW_COLS = ("algbw", "busbw")
_POW2_COLS = ("elements", "bytes", "message_bytes", "ranks", "gpus", "nodes", "k", "out_k", "density",
              "out_density", "result_density", "chunk_size", "group_size")
_LABELS = {
    "time_s": "allreduce time", "wall_s": "simulator wall time", "algbw": "algorithm bandwidth",
    "busbw": "bus bandwidth", "elements": "vector length N (elements)", "bytes": "size (bytes, as nccl-tests)",
    "message_bytes": "bytes sent", "ranks": "GPUs", "gpus": "GPUs", "nodes": "nodes",
    "density": "density d (nonzeros / N)", "out_density": "density d (nonzeros / N)",
    "result_density": "result density (nonzeros / N)", "k": "nonzeros per rank k", "out_k": "nonzeros per rank k",
    "messages": "messages", "events": "simulation events", "flows": "flows", "group_size": "group size",
    "chunk_size": "chunk size", "topology": "topology", "algorithm": "algorithm", "profile": "network profile",
}
_SIZE_COLS = ("bytes", "message_bytes", "chunk_size")

# -- axis formatting -------------------------------------------------------------------------

_fmt_count = format_count          # the formatters live in simcollective.parsing
_fmt_bytes = format_axis_bytes
_fmt_fraction = format_fraction


def time_unit(values):
    vmax = max((abs(v) for v in values if v == v), default=1.0)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if vmax >= scale:
            return unit, scale
    return "ns", 1e-9


def y_spec(col, values, speedup_over=None, sparse=False, collective="allreduce"):
    """(label, divisor) of the y axis; ``collective``: what ``time_s`` is the time of (the
    one collective of the rows, or ``None`` for several)."""
    if speedup_over is not None:
        return f"speedup over {speedup_over} (×)", 1.0
    if col == "time_s":
        unit, scale = time_unit(values)
        return f"{collective + ' ' if collective else ''}time ({unit})", scale
    if col in TIME_COLS or col.startswith("phase_"):
        unit, scale = time_unit(values)
        name = _LABELS.get(col, col[6:] + " time" if col.startswith("phase_") else col)
        return f"{name} ({unit})", scale
    if col in BW_COLS:
        if sparse and col == "busbw":
            return "effective bus bandwidth, dense equivalent (GB/s)", 1e9
        return f"{_LABELS[col]} (GB/s)", 1e9
    if col in _SIZE_COLS or col.startswith("bytes_"):
        return f"{_LABELS.get(col, col.replace('bytes_', '') + ' bytes')} (MiB)", 2**20
    return _LABELS.get(col, col), 1.0


def x_formatter(col):
    if col in ("density", "out_density", "result_density"):
        return _fmt_fraction
    if col in _SIZE_COLS:
        return _fmt_bytes
    if col in ("elements", "k", "out_k"):
        return _fmt_count
    return lambda v: f"{v:g}"


def x_label(col):
    if col in TIME_COLS:
        return _LABELS[col] + " (s)"
    if col in BW_COLS:
        return _LABELS[col] + " (B/s)"
    return _LABELS.get(col, col)


def style_x(ax, col, xs, logx, numeric):
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
        fmt = x_formatter(col)
        ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: fmt(v)))
        if len(vals) > 6 or max(len(fmt(v)) for v in vals) > 5:
            for lab in ax.get_xticklabels():
                lab.set_rotation(30)
                lab.set_ha("right")


def log_y(ax):
    """Log y axis labelled with plain numbers (1, 2, 5 per decade), not 2 x 10^1."""
    import matplotlib.ticker as mt

    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-300) < 1e3 else (1.0,)
    ax.yaxis.set_major_locator(mt.LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.yaxis.set_minor_formatter(mt.NullFormatter())
