"""The Chrome/Perfetto trace of a job (the trace event format of :mod:`simcollective.trace`):
one process per communicator (pid 1, 2, ... in the job's order, named ``"tp: tp, 2
group(s) ..."``), one thread track per group of it (named ``"tp 0 (ranks 0-7)"``), and a
complete event (``"ph": "X"``, category ``collective``) per collective from its first
rank's start to its last rank's end (args: step, repeat, group, bytes, time_s, alone_s,
slowdown); collectives of one group that overlap go on extra lanes below it. A last
process holds the busiest links' run-average utilization as counter tracks. Times are
microseconds of simulated time.
"""

from __future__ import annotations

import json

__all__ = ["job_trace_events", "write_job_trace"]


def _us(t: float) -> float:
    return float(t) * 1e6


def _ranks(members) -> str:
    m = list(members)
    if m == list(range(m[0], m[0] + len(m))):
        return f"ranks {m[0]}-{m[-1]}"
    return "ranks " + ",".join(map(str, m))


def _track_events(pid: int, tid0: int, label: str, rows: list) -> list:
    events, ends = [], []
    for c in sorted(rows, key=lambda c: (c["start_s"], c["end_s"])):
        lane = next((j for j, e in enumerate(ends) if e <= c["start_s"]), None)
        if lane is None:
            lane = len(ends)
            ends.append(0.0)
            tid = tid0 + lane
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                           "args": {"name": label + (f" ({lane + 1})" if lane else "")}})
            events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                           "args": {"sort_index": tid}})
        ends[lane] = c["end_s"]
        events.append({"ph": "X", "pid": pid, "tid": tid0 + lane, "cat": "collective",
                       "name": f"{c['step']}[{c['repeat']}]", "ts": _us(c["start_s"]),
                       "dur": _us(c["end_s"] - c["start_s"]),
                       "args": {k: c[k] for k in ("step", "repeat", "group", "bytes", "time_s", "alone_s", "slowdown")}})
    return events


def job_trace_events(report) -> dict:
    """The trace of a job as a JSON-ready dict ``{"traceEvents": [...], ...}``."""
    f = report.fields
    events = []
    for pid, (name, groups) in enumerate(report.job.groups.items(), start=1):
        c = f["communicators"][name]
        events += [{"ph": "M", "pid": pid, "name": "process_name",
                    "args": {"name": f"{name}: {c['rule']}, {len(groups)} group(s) (job on {f['topology']}, "
                                     f"{f['ranks']} ranks)"}},
                   {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}]
        for g, members in enumerate(groups):
            rows = [c for c in f["collectives"] if c["communicator"] == name and c["group"] == g]
            events += _track_events(pid, g * 1000, f"{name} {g} ({_ranks(members)})", rows)
    t = f["makespan_s"]
    if f["top_links"] and t > 0:
        lp = len(report.job.groups) + 1
        events += [{"ph": "M", "pid": lp, "name": "process_name",
                    "args": {"name": f"links (the {len(f['top_links'])} busiest, utilization %)"}},
                   {"ph": "M", "pid": lp, "name": "process_sort_index", "args": {"sort_index": lp}}]
        for ln in f["top_links"]:
            name = f"{ln['link']} utilization % (run average)"
            events.append({"ph": "C", "pid": lp, "name": name, "ts": 0.0,
                           "args": {"utilization %": 100.0 * ln["utilization"]}})
            events.append({"ph": "C", "pid": lp, "name": name, "ts": _us(t), "args": {"utilization %": 0.0}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {k: v for k, v in f.items() if isinstance(v, (str, int, float, bool)) or v is None}}


def write_job_trace(report, path) -> None:
    """Write the job's trace (JSON) to ``path``."""
    from ..parsing import json_default

    with open(path, "w") as fh:
        json.dump(job_trace_events(report), fh, default=json_default, allow_nan=False)
        fh.write("\n")
