"""Chrome trace event files of a run, for https://ui.perfetto.dev (or chrome://tracing).

:func:`write_trace` turns the spans of a traced run (``RunConfig(trace=True)``, or
``simcollective run --trace PATH``) into the JSON trace event format: an object with
``"traceEvents"``. Times are microseconds of simulated time.

* One process (pid 0) for the run; one thread track per rank, ``tid = rank``, named
  ``"rank r (gpu id)"``. It holds the rank's phases as complete events (``"ph": "X"``,
  category ``phase``; nested phases nest), the time outside any phase as ``other`` spans
  (so the top-level spans of a rank, ``args.depth == 0``, tile ``[0, finish]`` exactly and
  their durations add up to the rank's finish time), and reductions (category ``compute``).
* Sends and receives overlap each other (non-blocking), so they go on the rank's
  communication tracks just below it (``"rank r p2p"``, more lanes when several messages
  are in flight at once), as complete events named ``send``/``recv`` with ``peer`` (world
  rank) and ``bytes`` in their args.
* Flow arrows (``"ph": "s"``/``"f"``, category ``message``) from each send to its receive.
* Counter tracks (``"ph": "C"``) for the busiest links, in a process of their own (pid 1,
  named "links ..."). With per-link rate series in the
  result (``RunResult.link_series``: link name -> [(t, bytes/s), ...]) they show the
  utilization over time; otherwise the run's average utilization of the link
  (bytes / capacity / time), held from 0 to the end of the run, named "... (run average)".

Limits (``--trace-ranks``, ``--trace-window``): ``ranks`` keeps the tracks of those ranks
only (the flow arrows between two kept ranks); ``window = (t0, t1)`` (seconds of simulated
time) keeps the spans that overlap it, cut to it, and the counters inside it. A 256-rank
X
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import UserInputError
from .parsing import writing

__all__ = ["trace_events", "write_trace", "parse_trace_ranks", "parse_trace_window", "check_trace_ranks",
           "TOP_LINKS"]

#: number of links that get a counter track
TOP_LINKS = 8
#: the process of the link counter tracks (the ranks are process 0)
LINKS_PID = 1
_LANE_TID = 100000


def _us(t: float) -> float:
    return float(t) * 1e6


def _nest(events: list) -> tuple[list, list]:
    """Split events (dicts with _t0/_t1) into properly nested ones and the others."""
    order = sorted(range(len(events)), key=lambda i: (events[i]["_t0"], -events[i]["_t1"], -i))
    nested, loose, stack = [], [], []
    for i in order:
        ev = events[i]
        while stack and stack[-1]["_t1"] <= ev["_t0"]:
            stack.pop()
        if stack and ev["_t1"] > stack[-1]["_t1"]:
            loose.append(ev)
            continue
        ev["_depth"] = len(stack)
        stack.append(ev)
        nested.append(ev)
    return nested, loose


def _lanes(events: list) -> list[list]:
    """Greedy interval partitioning: lanes of non-overlapping events."""
    lanes: list[list] = []
    ends: list[float] = []
    for ev in sorted(events, key=lambda e: (e["_t0"], e["_t1"])):
        for j, end in enumerate(ends):
            if end <= ev["_t0"]:
                lanes[j].append(ev)
                ends[j] = ev["_t1"]
                break
        else:
            lanes.append([ev])
            ends.append(ev["_t1"])
    return lanes


def _top_level_phases(phases: list) -> list:
    """Phase spans not inside another phase span, in time order."""
    out = []
    for ev in sorted(phases, key=lambda e: (e["_t0"], -e["_t1"])):
        if out and ev["_t1"] <= out[-1]["_t1"] and ev["_t0"] >= out[-1]["_t0"]:
            continue
        out.append(ev)
    return out


def parse_trace_ranks(text: str) -> frozenset:
    """``--trace-ranks``: ``N`` (a bare integer: the first N ranks, 0..N-1) or a list of ranks
    and ranges, ``0-7,32,64-71`` (a list of one rank: ``5-5`` or ``5,``)."""
    flag = f"--trace-ranks {text!r}"
    text = str(text).strip()
    try:
        if text.isdigit():
            n = int(text)
            if n < 1:
                raise ValueError
            return frozenset(range(n))
        out = set()
        for part in filter(None, (p.strip() for p in text.split(","))):
            lo, _, hi = part.partition("-")
            lo, hi = int(lo), int(hi if hi else lo)
            if lo < 0 or hi < lo or hi - lo > 10**7:
                raise ValueError
            out.update(range(lo, hi + 1))
        if not out:
            raise ValueError
        return frozenset(out)
    except ValueError:
        raise UserInputError(f"{flag} must be N (the first N ranks, N >= 1) or a list of ranks and ranges "
                             "like 0-7,32 (ranks >= 0, each range LO-HI with LO <= HI)") from None


def check_trace_ranks(ranks, nranks: int) -> None:
    """Refuse ranks the run does not have (before the run)."""
    if ranks and max(ranks) >= nranks:
        raise UserInputError(f"--trace-ranks names rank {max(ranks)}; the run has ranks 0..{nranks - 1}")


def parse_trace_window(text: str) -> tuple:
    """``--trace-window T0:T1``: seconds of simulated time (``T1`` may be left out: to the end)."""
    from .units import parse_float

    lo, sep, hi = str(text).partition(":")
    if not sep:
        raise UserInputError(f"--trace-window {text!r} must be T0:T1 in seconds (e.g. 0:1e-3, or 2e-3: to the end)")
    t0 = parse_float(lo or "0", "--trace-window T0", 0.0)
    t1 = parse_float(hi, "--trace-window T1", 0.0) if hi.strip() else float("inf")
    if not t1 > t0:
        raise UserInputError(f"--trace-window {text!r}: T1 must be later than T0")
    return (t0, t1)


def _clip(ev: dict, window) -> bool:
    """Cut an event (``_t0``/``_t1``) to the window; whether anything of it is left."""
    if window is None:
        return True
    lo, hi = window
    if ev["_t1"] < lo or ev["_t0"] > hi:
        return False
    ev["_t0"], ev["_t1"] = max(ev["_t0"], lo), min(ev["_t1"], hi)
    return True


def trace_events(report, ranks=None, window=None) -> dict:
    """The trace of a traced run as a JSON-ready dict ``{"traceEvents": [...], ...}``;
    ``ranks`` (a set) and ``window`` (``(t0, t1)`` seconds) limit it."""
    result = getattr(report, "result", None)
    spans = getattr(result, "spans", None)
    if spans is None:
        raise UserInputError("the run was not traced: run it with RunConfig(trace=True) (simcollective run --trace)")
    fields = report.fields
    placement = result.placement or [None] * len(spans)
    pid = 0
    events = [
        {"ph": "M", "pid": pid, "name": "process_name",
         "args": {"name": f"{fields.get('algorithm')} allreduce on {fields.get('topology')} "
                          f"({len(spans)} ranks, {fields.get('elements')} x {fields.get('dtype')})"}},
        {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": 0}},
    ]
    sends: dict = {}
    recvs: dict = {}
    for r, rank_spans in enumerate(spans):
        if ranks is not None and r not in ranks:
            continue
        finish = result.finish[r] if result.finish[r] is not None else result.makespan
        gpu = placement[r]
        events.append({"ph": "M", "pid": pid, "tid": r, "name": "thread_name",
                       "args": {"name": f"rank {r} ({gpu})"}})
        events.append({"ph": "M", "pid": pid, "tid": r, "name": "thread_sort_index",
                       "args": {"sort_index": r * 1000}})
        main, comm = [], []
        for name, cat, t0, t1, args in rank_spans:
            ev = {"name": name, "cat": cat, "_t0": float(t0), "_t1": float(t1), "args": dict(args or {})}
            (comm if cat == "p2p" else main).append(ev)
        phases = [e for e in main if e["cat"] == "phase"]
        # time outside every phase: "other" spans, so that top-level spans tile [0, finish]
        t = 0.0
        for ev in _top_level_phases(phases):
            if ev["_t0"] > t:
                main.append({"name": "other", "cat": "phase", "_t0": t, "_t1": ev["_t0"], "args": {}})
            t = max(t, ev["_t1"])
        if finish > t:
            main.append({"name": "other", "cat": "phase", "_t0": t, "_t1": float(finish), "args": {}})
        main = [ev for ev in main if _clip(ev, window)]
        comm = [ev for ev in comm if _clip(ev, window)]
        nested, loose = _nest(main)
        for ev in nested:
            ev["args"]["depth"] = ev["_depth"]
        comm += loose
        for ev in nested:
            events.append({"ph": "X", "pid": pid, "tid": r, "name": ev["name"], "cat": ev["cat"],
                           "ts": _us(ev["_t0"]), "dur": _us(ev["_t1"] - ev["_t0"]), "args": ev["args"]})
        events += _p2p_lanes(r, comm, pid, sends, recvs)
    events += _flow_arrows(sends, recvs, pid)
    events += _link_counters(result, LINKS_PID, window)
    meta = {k: v for k, v in fields.items() if isinstance(v, (str, int, float, bool)) or v is None}
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}


def _p2p_lanes(r: int, comm: list, pid: int, sends: dict, recvs: dict) -> list:
    """Rank ``r``'s sends and receives on its communication tracks (as many lanes as overlap);
    each one noted in ``sends``/``recvs`` for the flow arrows."""
    events = []
    for j, lane in enumerate(_lanes(comm)):
        tid = _LANE_TID + r * 1000 + j
        label = f"rank {r} p2p" + (f" ({j + 1})" if j else "")
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": label}})
        events.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": r * 1000 + 1 + j}})
        for ev in lane:
            events.append({"ph": "X", "pid": pid, "tid": tid, "name": ev["name"], "cat": ev["cat"],
                           "ts": _us(ev["_t0"]), "dur": _us(ev["_t1"] - ev["_t0"]),
                           "args": {**ev["args"], "rank": r}})
            peer, nbytes = ev["args"].get("peer"), ev["args"].get("bytes")
            if ev["name"] == "send":
                sends.setdefault((r, peer, nbytes), []).append((ev["_t0"], ev["_t1"], tid))
            elif ev["name"] == "recv":
                recvs.setdefault((peer, r, nbytes), []).append((ev["_t0"], ev["_t1"], tid))
    return events


def _flow_arrows(sends: dict, recvs: dict, pid: int) -> list:
    """Flow events (``ph`` s/f) from each send to the receive it matched: the k-th send from
    rank a to rank b of a size pairs with the k-th receive of that size at b from a, both in
    posting order (MPI's non-overtaking order)."""
    out = []
    n = 0
    for key in sorted(sends, key=str):
        rs = sorted(recvs.get(key, ()))
        for (s0, _s1, stid), (_r0, r1, rtid) in zip(sorted(sends[key]), rs):
            src, dst, nbytes = key
            common = {"name": "message", "cat": "message", "pid": pid, "id": n,
                      "args": {"from": src, "to": dst, "bytes": nbytes}}
            out.append({**common, "ph": "s", "tid": stid, "ts": _us(s0)})
            out.append({**common, "ph": "f", "bp": "e", "tid": rtid, "ts": _us(r1)})
            n += 1
    return out


def _link_counters(result, pid, window=None) -> list:
    links = list(getattr(result, "links", None) or [])
    t_end = result.makespan
    if window is not None:
        return [ev for ev in _link_counters(result, pid) if ev["ph"] == "M" or
                window[0] * 1e6 <= ev["ts"] <= window[1] * 1e6]
    if not links or t_end <= 0:
        return []
    top = sorted(links, key=lambda ls: (-ls.bytes / ls.capacity, ls.name))[:TOP_LINKS]
    series = getattr(result, "link_series", None) or {}
    out = [{"ph": "M", "pid": pid, "name": "process_name",
            "args": {"name": f"links (the {len(top)} busiest, utilization %)"}},
           {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": 1}}]
    for ls in top:
        if ls.name in series:
            name = f"{ls.name} utilization %"
            for t, rate in series[ls.name]:
                out.append({"ph": "C", "pid": pid, "name": name, "ts": _us(t),
                            "args": {"utilization %": 100.0 * rate / ls.capacity}})
            out.append({"ph": "C", "pid": pid, "name": name, "ts": _us(t_end), "args": {"utilization %": 0.0}})
        else:
            name = f"{ls.name} utilization % (run average)"
            avg = 100.0 * ls.bytes / ls.capacity / t_end
            out.append({"ph": "C", "pid": pid, "name": name, "ts": 0.0, "args": {"utilization %": avg}})
            out.append({"ph": "C", "pid": pid, "name": name, "ts": _us(t_end), "args": {"utilization %": 0.0}})
    return out


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    return str(o)


def write_trace(report, path, ranks=None, window=None) -> None:
    """Write the Chrome trace (JSON) of a traced run to ``path`` (limits: :func:`trace_events`)."""
    doc = trace_events(report, ranks, window)
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise UserInputError(f"--trace {str(path)!r}: directory {str(path.parent)!r} does not exist")
    with writing(path, "--trace"), open(path, "w") as fh:
        json.dump(doc, fh, default=_json_default, allow_nan=False)
        fh.write("\n")
