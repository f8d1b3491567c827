"""The human summary of one run (what ``simcollective run`` prints, and ``str()`` of the
Python API's ``Result``)."""

from __future__ import annotations

from .parsing import format_bytes, format_rate, format_time

__all__ = ["format_report", "format_line"]


def format_line(report) -> str:
    """The one line of ``run --quiet``: what ran, its time, algbw, busbw and verification."""
    f = report.fields
    where = f["topology"] + (f" ({f['nodes']} node{'s' if f['nodes'] != 1 else ''})" if f.get("nodes") else "")
    return (f"{f['algorithm']} {f.get('collective', 'allreduce')} on {where}: {f['ranks']} ranks, "
            f"{format_bytes(f['bytes'])}, time {format_time(f['time_s'])} ({f['time_s']:.9g} s), "
            f"algbw {format_rate(f['algbw'])}, busbw {format_rate(f['busbw'])}, verified {f['verification']}")


def _sizes_lines(f: dict) -> list[str]:
    """alltoallv's totals of its sizes matrix (and its MoE gate)."""
    lines = [f"  sizes        total {format_bytes(f['total_bytes'])} ({format_bytes(f['network_bytes'])} "
             f"between ranks), max per rank {format_bytes(f['max_rank_bytes'])}, imbalance "
             f"{f['imbalance']:.3f} (max / mean per rank)"
             + ("; dispatch, then combine (the transpose)" if f.get("combine") else "")]
    if f.get("moe"):
        lines.append("  moe          " + ", ".join(f"{k}={v}" for k, v in f["moe"].items()))
    return lines


#: how the routing policies other than ``first`` choose among equal-cost paths
_SPREAD = {"dest": "each destination its own path up the fabric (D-mod-k)",
           "hash": "(source, destination) pairs spread over equal-cost paths (ECMP hash)"}


def _setting_lines(f) -> list:
    """The placement and, where equal-cost paths are not the first, how they were chosen."""
    lines = []
    if f.get("placement_order"):
        lines.append(f"  placement    {f['placement_order']}")
    if f.get("routing") in _SPREAD:
        lines.append(f"  routing      {f['routing']}: {_SPREAD[f['routing']]}")
    return lines


def format_report(report) -> str:
    """The human summary of a run."""
    f = report.fields
    where = f["topology"] + (f" ({f['nodes']} node{'s' if f['nodes'] != 1 else ''})" if f.get("nodes") else "")
    lines = [
        f"{f['algorithm']} {f.get('collective', 'allreduce')} on {where}: {f['ranks']} ranks, "
        f"{f['elements']} x {f['dtype']}{'' if f.get('collective', 'allreduce') == 'allreduce' else ' (count)'} "
        f"({format_bytes(f['bytes'])}){'' if f.get('root', -1) < 0 else ', root ' + str(f['root'])}, "
        f"profile {f['profile']}",
    ]
    lines += _setting_lines(f)
    study = [f"{k} study" for k in ("routing", "timing") if f.get(k) == "study"]
    if f.get("options", {}).get("densify") == "study":
        study.append("densify study")
    if study:  # the study's simulator: say which of its behaviours are on
        lines.append(f"  study        {'--study: ' if f.get('study') else ''}{', '.join(study)}")
    if f.get("stragglers"):   # --straggler: the time includes the delays
        late = ", ".join(f"rank {r} {format_time(d)} late" for r, d in f["stragglers"].items())
        lines.append(f"  stragglers   {late} (the time includes it)")
    if f["kind"] == "sparse":
        lines.append(f"  workload     {f['workload']}, k = {f['k']} per rank (density {f['density']:.6g}); "
                     f"result density {f['result_density']:.4g}, {f['dense_parts']} of {f['result_parts']} parts dense")
    if "imbalance" in f:    # alltoallv
        lines += _sizes_lines(f)
    bw = "effective busbw (dense equivalent)" if f["kind"] == "sparse" else "busbw"
    lines += [
        f"  time         {format_time(f['time_s'])}  ({f['time_s']:.9g} s)",
        f"  algbw        {format_rate(f['algbw'])}   {bw} {format_rate(f['busbw'])}",
        f"  verified     yes, every rank: {f['verification']}"
        + ("" if f.get("exact", True) or "approximate" in str(f["verification"])
           else "  [approximate by design: not the exact sum]"),
        f"  messages     {f['messages']} ({format_bytes(f['message_bytes'])} sent)",
    ]
    if "algorithm_chosen" in f:
        lines.append(f"  nccl         {f['algorithm_chosen']}, protocol {f['protocol']}, {f['channels']} channel(s)"
                     + (f", NCCL {f['nccl_version']}'s tuner" if f.get("nccl_version") else "")
                     + (f"; NCCL's model predicts {f['nccl_predicted_us']:.1f} us"
                        if f.get("nccl_predicted_us") is not None else ""))
        if f.get("nccl_network"):
            lines.append(f"  network      {f['nccl_network']}")
        mc = f.get("nccl_model_choice")
        if mc and (mc["algorithm"], mc["protocol"]) != (f["nccl_algorithm"].lower(), f["protocol"]):
            lines.append(f"               (NCCL's own pick here: {mc['algorithm']}/{mc['protocol']}, "
                         "not simulated on this machine; the best simulated one runs)")
    total = f["time_s"] or 1.0
    phases = "  ".join(f"{k} {format_time(v)} ({100 * v / total:.0f}%)" for k, v in f["phases"].items() if v > 0)
    lines.append(f"  phases       {phases or '-'}")
    if f["bytes_by_link_type"]:
        lines.append("  link bytes   " + "  ".join(f"{k} {format_bytes(v)}" for k, v in f["bytes_by_link_type"].items()))
    if f["top_links"]:
        lines.append("  busiest links (bytes / capacity / time):")
        for ln in f["top_links"]:
            lines.append(f"    {ln['link']:<34} {ln['link_type']:<11} {format_bytes(ln['bytes']):>10}  "
                         f"busy {format_time(ln['busy_s']):>11}  utilization {100 * ln['utilization']:5.1f}%")
    lines.append(f"  wall         {f['wall_s']:.3f} s, {f['events']} events, {f['flows']} flows")
    if f.get("engine"):
        note = f" (compiled path not taken: {f['engine_note']})" if f.get("engine_note") else ""
        lines.append(f"  engine       {f['engine']}{note}")
    return "\n".join(lines)

