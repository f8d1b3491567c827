"""The human summary of one run (what ``simcollective run`` prints, and ``str()`` of the
Python API's ``Result``), and the notice every command prints when numba compiles."""

from __future__ import annotations

import os
import sys

from .parsing import format_bytes, format_rate, format_time

__all__ = ["format_report", "format_line", "compile_notice", "noticing_compiles"]


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
        lines.append(_engine_line(f))
    return "\n".join(lines)


def _engine_line(f: dict) -> str:
    """The path the run took, why not the compiled one, and the part of the wall time numba
    spent compiling kernels (a cold cache: the first run after installing or upgrading)."""
    notes = [f"compiled path not taken: {f['engine_note']}"] if f.get("engine_note") else []
    if f.get("compile_s"):
        notes.append(f"numba compiled its kernels for {f['compile_s']:.1f} s of this run: cached for the next runs")
    return f"  engine       {f['engine']}" + (f" ({'; '.join(notes)})" if notes else "")


def compile_notice(cache) -> str:
    """The line a command prints on stderr as numba starts compiling a kernel (a cache miss);
    ``cache``: the directory numba caches that kernel in (``None``: not known)."""
    package = os.path.dirname(os.path.abspath(__file__))    # the kernels' cache spans its folders
    if os.environ.get("NUMBA_CACHE_DIR"):
        where = f"NUMBA_CACHE_DIR ({os.environ['NUMBA_CACHE_DIR']})"
    elif cache is not None and cache.startswith(package + os.sep):
        where = f"the __pycache__ folders under {package} (numba's cache beside the sources; NUMBA_CACHE_DIR moves it)"
    elif cache is not None:
        where = f"{cache} (NUMBA_CACHE_DIR moves it)"
    else:
        where = "numba's cache (__pycache__ beside the sources, or NUMBA_CACHE_DIR)"
    return ("simcollective: numba is compiling the simulator's kernels, once after installing or upgrading: "
            f"up to about a minute of CPU on 2 cores, then cached for the next runs in {where}")


def noticing_compiles():
    """A :class:`~simcollective.network.compile_watch.CompileWatch` for a whole command: it
    prints :func:`compile_notice` on stderr once, as numba starts compiling its first kernel
    (nothing when every kernel loads from the cache). Printed with ``--quiet`` and ``--json -``
    too: it is on stderr, and it explains a minute with no other output."""
    from .network.compile_watch import CompileWatch

    return CompileWatch(on_first=_print_notice)


def _print_notice(watch) -> None:
    line = compile_notice(watch.cache)
    tqdm = sys.modules.get("tqdm")
    if tqdm is not None:    # a progress bar may be on stderr's last line: tqdm clears it and draws it again below
        tqdm.tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr, flush=True)
