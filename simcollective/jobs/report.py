"""What a job measured (:class:`JobReport`): per step and repeat, per communicator, the
slowdowns against each collective alone, the busiest links; as JSON, text and a trace.

JSON keys (``simcollective job --json``): ``topology, nodes, ranks, profile, makespan_s,
verified, communicators, steps, collectives, top_links, messages, message_bytes, events,
flows, sim_wall_s, wall_s``. ``steps``: one entry per step and repeat (``step, repeat,
communicator, collective, algorithm, bytes, start_s, end_s, time_s, alone_s, slowdown``:
start = the first of its groups to start, end = the last to finish, alone = the slowest
group alone, slowdown = time / alone). ``collectives``: one entry per step, repeat and
group (``group, ranks``, its own ``start_s, end_s, time_s, alone_s, slowdown``, and
``verification``). ``communicators``: per communicator, ``groups, collectives,
time_s`` (sum of its steps' times), ``busy_s`` (the union of their spans), ``bytes``.
``sim_wall_s``: building, simulating and verifying; ``wall_s``: that and the alone runs
(and, for a disturbed job, the undisturbed runs).

A disturbed job (stragglers, faults, background traffic, another job's steps) adds
``disturbances`` (one line each), ``background`` (per ``[[background]]``: pattern, ranks,
bytes, load, window, messages), ``undisturbed_makespan_s`` and ``cost_s`` (makespan minus
it), ``each_cost`` (with several disturbances: each alone, ``disturbance, makespan_s,
cost_s``); each step row adds ``background`` (another job's step), ``undisturbed_s`` (its time in
the run without the disturbances; None for another job's steps) and ``cost_s``.
"""

from __future__ import annotations

from ..parsing import format_bytes, format_time

__all__ = ["JobReport", "format_job", "TOP_LINKS"]

TOP_LINKS = 5


def _union(spans) -> float:
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def _nbytes(plan) -> int:
    return plan.coll.size_bytes(plan.count, plan.P, plan.dtype.itemsize)


class JobReport:
    """The measurements of a job (``fields``: the JSON data; ``tasks``: the raw tasks)."""

    def __init__(self, job, result, verified: dict, sim_wall_s: float, wall_s: float):
        self.job, self.result, self.tasks = job, result, result.tasks
        self.fields = self._fields(job, result, verified)
        self.fields["sim_wall_s"], self.fields["wall_s"] = sim_wall_s, wall_s

    def _collectives(self, job, result, verified) -> list:
        rows = []
        for t in result.tasks:
            if len(t.key) != 3:   # background traffic
                continue
            name, rep, g = t.key
            plan, alone = job.plans[(name, g)], job.alone.get((name, g))
            time_s = t.end - t.start
            rows.append({"step": name, "repeat": rep, "group": g, "ranks": list(t.members),
                         "communicator": job.spec.step(name).communicator, "start_s": t.start, "end_s": t.end,
                         "time_s": time_s, "alone_s": alone, "slowdown": time_s / alone if alone else None,
                         "bytes": _nbytes(plan), "verification": verified[t.key]})
        return rows

    @staticmethod
    def _steps(job, collectives) -> list:
        rows: dict = {}
        for c in collectives:
            key = (c["step"], c["repeat"])
            row = rows.get(key)
            if row is None:
                step = job.spec.step(c["step"])
                row = rows[key] = {"step": c["step"], "repeat": c["repeat"], "communicator": step.communicator,
                                   "collective": step.collective, "algorithm": step.algorithm, "bytes": c["bytes"],
                                   "groups": 0, "start_s": c["start_s"], "end_s": c["end_s"], "alone_s": c["alone_s"]}
            row["groups"] += 1
            row["start_s"] = min(row["start_s"], c["start_s"])
            row["end_s"] = max(row["end_s"], c["end_s"])
            if c["alone_s"] is not None:
                row["alone_s"] = max(row["alone_s"], c["alone_s"])
        for row in rows.values():
            row["time_s"] = row["end_s"] - row["start_s"]
            row["slowdown"] = row["time_s"] / row["alone_s"] if row["alone_s"] else None
        return list(rows.values())

    @staticmethod
    def _communicators(job, steps, collectives) -> dict:
        out = {}
        for name, groups in job.groups.items():
            mine = [s for s in steps if s["communicator"] == name]
            out[name] = {"rule": job.spec.communicators[name].rule, "groups": len(groups),
                         "ranks_per_group": [len(g) for g in groups],
                         "collectives": sum(1 for c in collectives if c["communicator"] == name),
                         "time_s": sum(s["time_s"] for s in mine),
                         "busy_s": _union((s["start_s"], s["end_s"]) for s in mine),
                         "bytes": sum(c["bytes"] for c in collectives if c["communicator"] == name)}
        return out

    @staticmethod
    def _disturbed(job, steps, makespan: float) -> dict:
        clean = job.undisturbed
        for s in steps:
            s["background"] = job.spec.step(s["step"]).background
            u = None if clean is None else clean["steps"].get((s["step"], s["repeat"]))
            s["undisturbed_s"], s["cost_s"] = u, None if u is None else s["time_s"] - u
        if clean is None:
            return {}
        spec = job.spec
        lines = [f"rank {r} starts {format_time(d)} late" for r, d in sorted(job.disturb.late.items())]
        lines += [f"rank {r} computes {k:g} x slower" for r, k in sorted(job.disturb.slow.items())]
        lines += [f.label for f in spec.disturb["faults"]]
        lines += [f"background {b['name']}: {b['pattern']} over {len(b['ranks'])} ranks at load {b['load']:g}, "
                  f"{b['messages']} x {format_bytes(b['bytes'])} in [{format_time(b['start_s'])}, "
                  f"{format_time(b['end_s'])})" for b in job.background]
        others = sorted({s.name for s in spec.steps if s.background})
        if others:
            lines.append(f"another job's steps: {', '.join(others)}")
        return {"disturbances": lines, "background": job.background, "undisturbed_makespan_s": clean["makespan_s"],
                "cost_s": makespan - clean["makespan_s"], "each_cost": clean.get("each", [])}

    def _fields(self, job, result, verified) -> dict:
        collectives = self._collectives(job, result, verified)
        steps = self._steps(job, collectives)
        t = max((c["end_s"] for c in collectives if not job.spec.step(c["step"]).background), default=0.0)
        extra = self._disturbed(job, steps, t)
        top = sorted(result.links, key=lambda ls: (-ls.bytes / ls.capacity, ls.name))[:TOP_LINKS]
        base = job.base
        return {
            "topology": base.topology_file or base.topology, "nodes": None if base.topology_file else base.nodes,
            "ranks": len(job.placement), "profile": job.profile.name, "makespan_s": t, "verified": True,
            "communicators": self._communicators(job, steps, collectives), "steps": steps,
            "collectives": collectives,
            "top_links": [{"link": ls.name, "link_type": ls.link_type, "bytes": ls.bytes, "busy_s": ls.busy_time,
                           "utilization": ls.bytes / ls.capacity / t if t > 0 else 0.0} for ls in top],
            "messages": result.messages, "message_bytes": result.message_bytes, "events": result.events,
            "flows": result.flows, **extra,
        }

    def to_json(self) -> dict:
        from ..parsing import strict_json
        from ..run_config import SCHEMA_VERSION

        return strict_json({"schema_version": SCHEMA_VERSION, **self.fields})

    def __str__(self) -> str:
        return format_job(self)

    def __repr__(self) -> str:
        f = self.fields
        return (f"<JobReport on {f['topology']}: {f['ranks']} ranks, {len(f['collectives'])} collectives, "
                f"makespan_s={f['makespan_s']!r}>")


def _slow(v) -> str:
    return "-" if v is None else f"{v:.3f}x"


def _time(v) -> str:
    return "other job" if v is None else format_time(v)


def _disturbance_lines(f) -> list:
    u = f["undisturbed_makespan_s"]
    out = ["  disturbances:"] + [f"    {line}" for line in f["disturbances"]]
    for e in f["each_cost"]:
        out.append(f"    {e['disturbance']}, alone: makespan {format_time(e['makespan_s'])}, "
                   f"+{format_time(e['cost_s'])}")
    out.append(f"  cost         makespan {format_time(f['makespan_s'])} against {format_time(u)} undisturbed: "
               f"+{format_time(f['cost_s'])} ({100 * f['cost_s'] / u if u > 0 else 0.0:+.1f}%)")
    return out


def format_job(report) -> str:
    """The human summary of a job."""
    f = report.fields
    where = f["topology"] + (f" ({f['nodes']} node{'s' if f['nodes'] != 1 else ''})" if f.get("nodes") else "")
    lines = [f"job on {where}: {f['ranks']} ranks, profile {f['profile']}, {len(f['collectives'])} collectives, "
             f"makespan {format_time(f['makespan_s'])} ({f['makespan_s']:.9g} s), every collective verified"]
    disturbed = "disturbances" in f
    lines.append(f"  {'step':<18} {'rep':>3} {'comm':<6} {'collective':<26} {'size':>10} {'start':>12} "
                 f"{'end':>12} {'time':>12} {'alone':>12} {'slowdown':>8}"
                 + (f" {'undisturbed':>12} {'cost':>12}" if disturbed else ""))
    for s in f["steps"]:
        coll = f"{s['collective']}/{s['algorithm']} x{s['groups']}"
        lines.append(f"  {s['step']:<18} {s['repeat']:>3} {s['communicator']:<6} {coll:<26} "
                     f"{format_bytes(s['bytes']):>10} {format_time(s['start_s']):>12} {format_time(s['end_s']):>12} "
                     f"{format_time(s['time_s']):>12} "
                     f"{format_time(s['alone_s']) if s['alone_s'] is not None else '-':>12} {_slow(s['slowdown']):>8}"
                     + (f" {_time(s['undisturbed_s']):>12} {_time(s['cost_s']):>12}" if disturbed else ""))
    if disturbed:
        lines += _disturbance_lines(f)
    lines.append("  communicators:")
    for name, c in f["communicators"].items():
        lines.append(f"    {name:<8} {c['rule']:<5} {c['groups']} group(s) of {c['ranks_per_group'][0]}: "
                     f"{c['collectives']} collectives, {format_bytes(c['bytes'])}, time {format_time(c['time_s'])}, "
                     f"busy {format_time(c['busy_s'])}")
    if f["top_links"]:
        lines.append("  busiest links (bytes / capacity / makespan):")
        for ln in f["top_links"]:
            lines.append(f"    {ln['link']:<34} {ln['link_type']:<11} {format_bytes(ln['bytes']):>10}  "
                         f"busy {format_time(ln['busy_s']):>11}  utilization {100 * ln['utilization']:5.1f}%")
    lines.append(f"  wall         {f['wall_s']:.3f} s (build, simulation and verification {f['sim_wall_s']:.3f} s, "
                 f"{'undisturbed and ' if disturbed else ''}alone runs {f['wall_s'] - f['sim_wall_s']:.3f} s), {f['events']} events, {f['flows']} flows")
    return "\n".join(lines)
