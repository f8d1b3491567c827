"""``simcollective job JOB.toml``: several collectives on sub-communicators of one machine at
once (the job description: :mod:`simcollective.jobs.spec`)."""

from __future__ import annotations

from .arguments import add_plugin_argument, add_yes_argument
from .errors import UserInputError
from .parsing import check_output_path, write_json

__all__ = ["add_parser", "cmd_job"]


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
    spec = load_job(args.job)
    if args.links:
        for flag in ("json", "trace", "no_alone"):
            if getattr(args, flag):
                raise UserInputError(f"--{flag.replace('_', '-')} is not used with --links (which lists and exits)")
        print(machine_links(spec))
        return 0
    report = run_job(spec, alone=not args.no_alone)
    if args.trace:
        write_job_trace(report, args.trace)
    if args.json:
        write_json(report.to_json(), args.json)
    if args.json != "-":
        print(format_job(report))
        if args.trace:
            print(f"  trace        {args.trace} (open in https://ui.perfetto.dev)")
    return 0
