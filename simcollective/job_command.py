"""``simcollective job JOB.toml``: several collectives on sub-communicators of one machine at
once (the job description: :mod:`simcollective.jobs.spec`)."""

from __future__ import annotations

from .arguments import add_plugin_argument, add_yes_argument
from .errors import UserInputError
from .parsing import check_output_path, write_json

__all__ = ["add_parser", "cmd_job", "draw_timeline"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "job", help="run a job: collectives on sub-communicators (tp, dp, pp, ep, split) at once",
        description="Simulate every step of a job (TOML: machine, [communicators.NAME] rule + size, [[steps]] "
                    "with collective, communicator, size, algorithm, after, compute, repeat) on one network, "
                    "verify every collective against NumPy, and print per step and repeat its start, end, time "
                    "and slowdown against the same collective alone on the same machine, per-communicator "
                    "totals and the busiest links. [[stragglers]], [[faults]], [[background]] and steps with "
                    "background = true (another job) disturb it; the job then also runs without them and "
                    "reports what each cost.")
    p.add_argument("job", metavar="JOB.toml", help="the job description")
    p.add_argument("--json", metavar="PATH|-", help="write the result as JSON (- for stdout)")
    add_yes_argument(p)
    p.add_argument("--trace", metavar="PATH", help="write a Perfetto trace: one track per communicator group")
    p.add_argument("--plot", metavar="PATH",
                   help="draw the timeline (one row per communicator group, a bar per collective): .png, .pdf, .svg")
    p.add_argument("--no-alone", action="store_true",
                   help="skip the runs of each collective alone (no slowdowns)")
    add_plugin_argument(p)
    p.add_argument("--links", action="store_true",
                   help="list the machine's links (the names [[faults]] link = \"u->v\" takes) and exit")
    p.set_defaults(func=cmd_job)


def cmd_job(args) -> int:
    from .jobs import format_job, load_job, machine_links, run_job, write_job_trace

    check_output_path(args.json, "--json")
    check_output_path(args.trace, "--trace")
    check_output_path(args.plot, "--plot")
    if args.plot and not args.plot.lower().endswith((".png", ".pdf", ".svg")):
        raise UserInputError(f"--plot {args.plot!r} must end in .png, .pdf or .svg")
    spec = load_job(args.job)
    if args.links:
        for flag in ("json", "trace", "plot", "no_alone"):
            if getattr(args, flag):
                raise UserInputError(f"--{flag.replace('_', '-')} is not used with --links (which lists and exits)")
        print(machine_links(spec))
        return 0
    report = run_job(spec, alone=not args.no_alone)
    if args.trace:
        write_job_trace(report, args.trace)
    if args.plot:
        draw_timeline(report.fields, args.plot)
    if args.json:
        write_json(report.to_json(), args.json)
    if args.json != "-":
        print(format_job(report))
        if args.trace:
            print(f"  trace        {args.trace} (open in https://ui.perfetto.dev)")
        if args.plot:
            print(f"  timeline     {args.plot}")
    return 0


def draw_timeline(fields: dict, path=None, title: str | None = None, max_groups: int | None = None):
    """The job's timeline: one row per communicator group, one bar per collective from its
    start to its end, coloured by collective (overlapping collectives of a group overlap).

    Parameters
    ----------
    fields : dict
        A job's result fields (``sc.job(...).fields``, or ``simcollective job --json``).
    path : str or Path, optional
        Save the figure there (.png, .pdf, .svg); else only return it.
    title : str, optional
        The figure's title (default: the makespan and the number of collectives).
    max_groups : int, optional
        Draw only the first ``max_groups`` groups of each communicator (default: all).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colls = [c for c in fields["collectives"] if max_groups is None or c["group"] < max_groups]
    kind_of = {s["step"]: s["collective"] for s in fields["steps"]}
    rows = sorted({(c["communicator"], c["group"]) for c in colls})
    kinds = sorted(set(kind_of.values()))
    colours = dict(zip(kinds, plt.get_cmap("tab10").colors))
    lanes = _lanes(colls)
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.3 * len(rows)))
    y = {row: i for i, row in enumerate(rows)}
    span = max((c["end_s"] for c in colls), default=0.0)
    for c, (lane, n) in zip(colls, lanes):
        h, width = 0.8 / n, c["end_s"] - c["start_s"]
        # a thin white edge parts back-to-back bars; bars under 1/200 of the plot get none
        ax.barh(y[(c["communicator"], c["group"])] - 0.4 + h * (lane + 0.5), width * 1e3,
                left=c["start_s"] * 1e3, height=0.9 * h, color=colours[kind_of[c["step"]]], edgecolor="white",
                linewidth=0.5 if width > span / 200 else 0.0)
    ax.set_yticks(range(len(rows)), [f"{comm} group {g}" for comm, g in rows])
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel("time (ms)")
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colours[k]) for k in kinds], labels=kinds,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.set_title(title or f"job timeline: {len(colls)} collectives, makespan {fields['makespan_s'] * 1e3:.3f} ms")
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _lanes(colls: list) -> list:
    """Per collective (in order): (its lane, the lanes of its group's row), lanes packed
    so that collectives of one group that overlap in time sit side by side."""
    out, by_row = [None] * len(colls), {}
    for i, c in enumerate(colls):
        by_row.setdefault((c["communicator"], c["group"]), []).append(i)
    for idx in by_row.values():
        ends: list = []
        for i in sorted(idx, key=lambda i: (colls[i]["start_s"], colls[i]["end_s"])):
            lane = next((k for k, e in enumerate(ends) if e <= colls[i]["start_s"]), len(ends))
            if lane == len(ends):
                ends.append(colls[i]["end_s"])
            else:
                ends[lane] = colls[i]["end_s"]
            out[i] = lane
        for i in idx:
            out[i] = (out[i], len(ends))
    return out
