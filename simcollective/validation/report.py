"""The comparison as text: the table ``simcollective compare`` prints, and its ``fit:`` line."""

from __future__ import annotations

from ..units import format_bytes
from .nccltests import STAND_INS

__all__ = ["format_table", "fit_line", "dropped_lines"]


def _fmt(v, spec="8.2f"):
    return f"{v:{spec}}" if v is not None else " " * (int(spec.split(".")[0]) - 1) + "-"


def format_table(res: dict) -> str:
    head = (f"{res['log']}: {res['collective']}_perf, {res['format']} format"
            + (f", section '{res['section']}'" if res["section"] else "")
            + f", {res['ranks_note']}, {_dtype(res)}, {res['measured']}")
    sim = (f"simulated: {res['algorithm']}" + (f" ({res['forced']})" if res.get("forced") else "")
           + f" on {res['topology']}"
           + (f" (--nodes {res['nodes']}" + (f": {res['nodes_note']}" if res.get("nodes_note") else "") + ")"
              if res["nodes"] else "")
           + "".join(f", {k}={v}" for k, v in res.get("topology_opts", {}).items())
           + f", profile {res['profile']}"
           + (f", NCCL tuner {res['nccl_version']}" if res.get("nccl_version") else ""))
    if res["launch_overhead_us"]:
        sim += (f"; single process driving {res['gpus_per_process']} GPUs: "
                f"+{res['launch_overhead_us']:.1f} us of serialised launches per call")
    lines = ([fit_line(res["fit"])] if res.get("fit") else []) + [head, sim] + (
        [f"network: {res['network']}"] if res.get("network") else []) + (
        [f"log settings: {res['settings_note']}"] if res.get("settings_note") else []) + [
             f"{'size':>10} {'meas us':>10} {'sim us':>10} {'t ratio':>8} {'meas busbw':>11} {'sim busbw':>10} "
             f"{'bw ratio':>8}  chosen"]
    derived = False
    other = "in-place" if res["measured"] == "out-of-place" else "out-of-place"
    notes = []
    for r in res["rows"]:
        mark = "*" if r["measured_time_derived"] else "!" if r.get("log_disagrees") else " "
        derived |= r["measured_time_derived"]
        if r.get("log_disagrees"):
            notes.append(f"! {format_bytes(r['size'])}: {res['measured']} {r['measured_time_us']:.2f} us "
                         f"({r['measured_busbw']:.2f} GB/s), {other} {r['other_time_us']:.2f} us "
                         f"({r['other_busbw']:.2f} GB/s)")
        chosen = f"{r['algorithm_chosen']}/{r['protocol']}/{r['channels']}ch" if r["protocol"] else r["algorithm_chosen"]
        lines.append(f"{format_bytes(r['size']):>10} {_fmt(r['measured_time_us'], '9.2f')}{mark}"
                     f"{_fmt(r['simulated_time_us'], '10.2f')} {_fmt(r['time_ratio'], '8.2f')} "
                     f"{_fmt(r['measured_busbw'], '11.2f')} {_fmt(r['simulated_busbw'], '10.2f')} "
                     f"{_fmt(r['busbw_ratio'], '8.2f')}  {chosen}")
    if derived:
        lines.append("* measured time derived from the published busbw (the log has no time column)")
    if notes:
        lines.append(f"! the log's {res['measured']} and {other} columns differ by more than the size's "
                     "tolerance band (30 % time <= 64 KiB, 25 % busbw below 64 MiB, 10 % from 64 MiB):")
        lines += ["  " + n for n in notes]
    lines += dropped_lines(res.get("dropped_rows"))
    s = res["summary"]
    labels = (("busbw_ratio_worst_ge_64MiB", "busbw >= 64 MiB"), ("busbw_ratio_worst_1MiB_64MiB", "busbw 1-64 MiB"),
              ("time_ratio_worst_le_64KiB", "time <= 64 KiB"))
    parts = [f"{label}: worst ratio {s[key]:.2f}" for key, label in labels if s[key] is not None]
    lines.append("sim/measured, " + "; ".join(parts) + f"  ({len(res['rows'])} sizes, all verified)")
    if s.get("rows_log_disagrees"):
        parts = [f"{label} {s[key + '_self_consistent']:.2f}" for key, label in labels
                 if s.get(key + "_self_consistent") is not None]
        lines.append(f"  where the log agrees with itself ({len(res['rows']) - s['rows_log_disagrees']} sizes, "
                     f"without the {s['rows_log_disagrees']} marked !): " + "; ".join(parts))
    return "\n".join(lines)


def _dtype(res: dict) -> str:
    """The simulated data type; a log's type run with a stand-in of the same width says so."""
    logged = res.get("log_dtype")
    if logged and logged != res["dtype"] and logged in STAND_INS:
        return f"{logged} (simulated with {res['dtype']} data, the same width)"
    return res["dtype"]


def dropped_lines(dropped) -> list:
    """The rows of the log not simulated, one line each with its reason (none: no line)."""
    if not dropped:
        return []
    return [f"dropped {len(dropped)} row(s) of the log:"] + [
        f"  line {d['line']}: {d['reason']}: {d['text']}" for d in dropped]


def fit_line(f: dict) -> str:
    """``fit: KEY = VALUE (busbw sim/published at SIZE: RATIO; N simulations)`` (see
    :func:`simcollective.validation.fit.fit`)."""
    at = ", ".join(format_bytes(s) for s in f["sizes"])
    ratios = ", ".join(f"{r:.3f}" for r in f["ratios"])
    line = f"fit: {f['key']} = {f['value']:.4g} (busbw sim/published at {at}: {ratios}; {f['simulations']} simulations)"
    if f.get("note"):
        line += f"; {f['note']}"
    return line

