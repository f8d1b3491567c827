"""The ``simcollective`` command line.

Subcommands: ``run`` (one collective, allreduce by default), ``algorithms``, ``topologies`` here, and,
from their own modules, ``p2p``, ``sweep``, ``plot``, ``draw-topology``, ``bench``, ``compare``, ``job``.
Every user error is one line on stderr (``simcollective: error: ...``) and a non-zero exit status: 2 for
bad input, 3 for a result that fails verification, 4 for a deadlock. One rule for every command
(``arguments``): an option given explicitly that the chosen command, algorithm, topology or profile does
not use is an error, and so is a single-valued option given twice. numba compiling: a line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# No transparent huge pages and one BLAS thread for NumPy (values the user set are kept): the
# kernel's compaction on a huge page's fault (``defrag`` = ``madvise``) cost several times the
# first touch's user time (32M int32 on 8 ranks: 1.9-3.1 s of system time against 0.6-0.7 s),
# and OpenBLAS's pool spins on the other cores at import (0.05-0.1 s of CPU a command), where
# a simulation runs on one thread and a sweep a process per core.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from . import __version__
from .arguments import (Parser, add_engine_argument, add_nccl_version_argument, add_plugin_argument,
                        add_topology_arguments, add_yes_argument, check_distinct_outputs, check_topology_conflicts,
                        load_plugin_arguments, refuse_unused)
from .errors import DeadlockError, SimCollectiveError, TopologyError, UserInputError, VerificationError
from .listing import algorithm_help, cmd_algorithms, cmd_topologies
from .parsing import check_exclusive, check_output_path, format_time, parse_stragglers, write_json
from .summary import format_line, format_report, noticing_compiles

__all__ = ["main", "build_parser", "command_of", "COMMANDS", "add_topology_arguments", "config_from_args"]

# the command modules, each with ``add_parser(subparsers)`` adding the one subcommand named
# here, listed after ``algorithms`` and ``topologies`` (``p2p`` comes right after ``run``)
_COMMAND_MODULES = {"sweep": "simcollective.sweeps", "plot": "simcollective.figures",
                    "draw-topology": "simcollective.drawings", "bench": "simcollective.bench",
                    "compare": "simcollective.compare_command", "job": "simcollective.job_command"}
#: every subcommand, in the order ``--help`` lists them
COMMANDS = ("run", "p2p", "algorithms", "topologies", *_COMMAND_MODULES)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``command`` (one of :data:`COMMANDS`): only that
    subcommand is built, so a command imports only its own modules (``main`` passes the
    command its arguments name); ``None``: every subcommand (``--help``, a bad command)."""
    from .algorithms.registry import COLLECTIVES

    if command is not None and command not in COMMANDS:
        raise ValueError(f"unknown command {command!r}; known: {', '.join(COMMANDS)}")
    parser = Parser(
        prog="simcollective",
        description=f"Flow-level simulation of GPU collectives on GPU clusters, on real data: "
                    f"{', '.join(COLLECTIVES)} (allreduce dense and sparse).")
    parser.add_argument("--version", action="version", version=f"simcollective {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        if command is None or command == name:
            _add_command(sub, name)
    return parser


def _add_command(sub, name: str) -> None:
    """Add subcommand ``name`` to ``sub`` (importing the module that defines it)."""
    if name == "run":
        _add_run_parser(sub)
    elif name == "p2p":
        from . import p2p

        p2p.add_parser(sub)
    elif name == "algorithms":
        from .algorithms.registry import COLLECTIVES

        p = sub.add_parser("algorithms", help="list the algorithms of every collective")
        p.add_argument("--collective", metavar="NAME", help=f"only this collective: {', '.join(COLLECTIVES)}")
        add_plugin_argument(p)
        p.set_defaults(func=cmd_algorithms)
    elif name == "topologies":
        p = sub.add_parser("topologies", help="list the topology presets (or describe one)")
        p.add_argument("--show", metavar="NAME", help="describe this preset built with --nodes")
        p.add_argument("--nodes", default="2", metavar="N", help="servers of the preset --show describes (default: 2)")
        p.set_defaults(func=cmd_topologies)
    else:
        importlib.import_module(_COMMAND_MODULES[name]).add_parser(sub)


def command_of(argv) -> str | None:
    """The subcommand ``argv`` names (its first word, when that is one of :data:`COMMANDS`),
    else None (``--help``, ``--version``, nothing or a bad command: the whole parser)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _add_run_parser(sub) -> None:
    from .algorithms.registry import COLLECTIVES
    from .placement import PLACEMENTS
    from .simulate import run_defaults

    D = run_defaults()
    names = ", ".join(COLLECTIVES)
    p = sub.add_parser("run", help=f"simulate one collective ({names}), verify it, print time and bandwidth",
                       description=f"Simulate one collective ({names}) on real data, verify every rank's "
                                   "result against NumPy, and print time, algbw/busbw, phases and busiest links. "
                                   "An option given that the command, algorithm or profile does not use is an error.")
    add_topology_arguments(p)
    p.add_argument("--collective", default="allreduce", metavar="NAME",
                   help=f"{names} (default: allreduce)")
    algorithm = p.add_argument("--algorithm", metavar="NAME",
                               help="required ('simcollective algorithms' lists them)")
    p.help_when_shown(algorithm, algorithm_help)
    p.add_argument("--elements", metavar="N",
                   help="count as NCCL takes it: the vector length (allreduce, broadcast, reduce) or "
                        "per-rank count (allgather: send, reduce-scatter: receive, alltoall: per peer), e.g. 32M")
    p.add_argument("--bytes", metavar="BYTES",
                   help="size as nccl-tests counts it instead of --elements (allgather: output buffer, "
                        "alltoall: whole send buffer; per-rank shares rounded down to 16 bytes)")
    p.add_argument("--root", metavar="R", help="root rank of broadcast and reduce (default: 0)")
    p.add_argument("--gpus", metavar="P", help="use the first P GPUs in placement order (default: all)")
    p.add_argument("--dtype", default=D["dtype"], help=f"float32, float16, float64, int32 (default: {D['dtype']})")
    p.add_argument("--placement", default=D["placement"], metavar="|".join(PLACEMENTS) + "|PATH",
                   help="rank order: auto (the graph's rank order if it has one, else linear), "
                        f"linear, the study's order, or a file of GPU ids (default: {D['placement']})")
    p.add_argument("--seed", default=str(D["seed"]), help=f"seed of the inputs (default: {D['seed']})")
    add_nccl_version_argument(p)
    _add_run_groups(p, D)
    add_plugin_argument(p)
    p.set_defaults(func=cmd_run)


def _add_run_groups(p, D) -> None:
    """The option groups of ``run``: the study's simulator, algorithm options, workload, output."""
    from .simulate import VERIFY_MODES

    st = p.add_argument_group("the study's simulator (artefacts of its setup, not of the hardware)")
    st.add_argument("--timing", default=D["timing"], choices=("simultaneous", "study"),
                    help=f"study: ranks start at their barrier-exit offsets and the time is the "
                         f"largest (finish - own start) (default: {D['timing']})")
    st.add_argument("--straggler", action="append", default=[], metavar="RANK:DELAY",
                    help="rank RANK starts DELAY seconds late (e.g. 5:2e-4); repeatable. The time "
                         "reported is from 0, the delay included")
    st.add_argument("--study", action="store_true",
                    help="all of the study's behaviours: --routing study --timing study "
                         "--densify study (where the algorithm has a study sizing rule)")
    a = p.add_argument_group("algorithm options (an option the algorithm does not use is an error)")
    a.add_argument("--group-size", metavar="L", help="ranks per group for two-level algorithms (default: the topology's)")
    a.add_argument("--chunk-size", metavar="BYTES", help="pipelining chunk size, e.g. 1M")
    a.add_argument("--allgather", choices=("direct", "ring", "recursive-doubling"),
                   help="allgather variant of dsar-split-allgather / topk-allgather")
    a.add_argument("--densify", choices=("exact", "upper-bound", "study"),
                   help="when merged sparse streams turn dense: exact union size or n1+n2; study: "
                        "the study's message sizing (ssar/dsar-split-allgather, sparse rings)")
    a.add_argument("--resparsify", action="store_true", default=None,
                   help="sparse-ring-ring: keep only the top-k after the intra-group phase")
    a.add_argument("--protocol", metavar="simple|ll|ll128",
                   help="nccl-*: NCCL protocol (default: simple; nccl: NCCL's choice)")
    a.add_argument("--channels", metavar="N", help="nccl-*: channels (default: what NCCL runs for the size)")
    v = p.add_argument_group("alltoallv sizes (--collective alltoallv; without them: uniform, --elements per peer)")
    v.add_argument("--sizes", metavar="FILE", help="P x P matrix of bytes, rank i sends [i][j] to rank j "
                                                   "(.npy, .csv rows, or .json list of rows)")
    v.add_argument("--moe", metavar="KEY=VALUE,...",
                   help="a seeded MoE gate, dispatch then combine: tokens=T,hidden=H,topk=K"
                        "[,experts_per_rank=X][,skew=S (Zipf, 0 uniform)][,dtype=bfloat16] (docs/moe.md)")
    s = p.add_argument_group("sparse workload")
    s.add_argument("--density", metavar="D", help="nonzeros per rank as a fraction of N, e.g. 1/128")
    s.add_argument("--k", metavar="K", help="nonzeros per rank")
    s.add_argument("--workload", default=D["workload"], help=f"uniform, topk, npy (default: {D['workload']})")
    s.add_argument("--overlap", default=str(D["overlap"]),
                   help="topk workload: fraction of heavy indices shared by all ranks")
    s.add_argument("--inputs", metavar="DIR", help="npy workload: directory of rank{r}.npy files")
    o = p.add_argument_group("output")
    o.add_argument("--verify", default=D["verify"], choices=VERIFY_MODES,
                   help="full data, size-only symbolic, or auto by --memory-budget (default: auto)")
    o.add_argument("--memory-budget", default=str(D["memory_budget"]), metavar="BYTES",
                   help="dense runs above P*N*itemsize of this switch to size-only mode (default: 1G)")
    o.add_argument("--json", metavar="PATH|-", help="write the result as JSON (- for stdout)")
    add_engine_argument(o)
    o.add_argument("--trace", metavar="PATH", help="write a Chrome trace (Perfetto) of the run")
    o.add_argument("--trace-ranks", metavar="N|LIST",
                   help="--trace: only these ranks' tracks: N (the first N) or a list like 0-7,32")
    o.add_argument("--trace-window", metavar="T0:T1",
                   help="--trace: only the spans in this window of simulated time, in seconds (e.g. 0:1e-3)")
    add_yes_argument(o)
    o.add_argument("--quiet", action="store_true",
                   help="no progress bar (shown on stderr when it is a terminal, never with --json -: "
                        "messages sent of the run's exact total, with percentage and ETA; an algorithm "
                        "without a declared count shows the count only) and one summary line (time, "
                        "algbw, busbw, verified) instead of the full summary")


def config_from_args(args):
    """A :class:`~simcollective.simulate.RunConfig` from parsed ``run`` arguments: the text of
    every value goes to ``RunConfig`` as given, which parses it (one parse, the flags' names
    in its errors)."""
    from .algorithms.registry import OPTION_FLAGS
    from .simulate import RunConfig

    _check_missing(args)
    check_topology_conflicts(args)
    check_exclusive(args.density, args.k, ("--density", "--k"))
    sized = [f for f, v in (("--sizes", args.sizes), ("--moe", args.moe)) if v is not None]
    if sized and args.collective != "alltoallv":
        raise UserInputError(f"{sized[0]} applies to --collective alltoallv, not to {args.collective}")
    if sized and (args.elements is not None or args.bytes is not None):
        raise UserInputError(f"{'--elements' if args.elements is not None else '--bytes'} and {sized[0]} both "
                             "give alltoallv's sizes; give one of them")
    if not sized and (args.elements is None) == (args.bytes is None):
        raise UserInputError("give the size as --elements N or --bytes B (one of them)"
                             + (", or --sizes FILE or --moe ..." if args.collective == "alltoallv" else ""))
    options = {name: getattr(args, name) for name in OPTION_FLAGS}
    config = RunConfig(
        topology=args.topology,
        nodes=args.nodes,
        topology_opts=args.topology_opt,
        topology_file=args.topology_file,
        algorithm=args.algorithm,
        elements=args.elements if args.elements is not None else 2**20,
        bytes=args.bytes,
        collective=args.collective,
        root=args.root,
        gpus=args.gpus,
        dtype=args.dtype,
        profile=args.profile,
        placement=args.placement,
        routing=args.routing,
        seed=args.seed,
        options={k: v for k, v in options.items() if v is not None},
        density=args.density,
        k=args.k,
        workload=args.workload,
        overlap=args.overlap,
        inputs=args.inputs,
        verify=args.verify,
        memory_budget=args.memory_budget,
        trace=bool(args.trace),
        timing=args.timing,
        study=bool(args.study),
        nccl_version=args.nccl_version,
        stragglers=parse_stragglers(args.straggler),
        sizes=args.sizes,
        moe=args.moe,
        engine=args.engine,
    )
    refuse_unused(args, _unused_by_run(args))    # after the values' own checks
    return config


def _check_missing(args) -> None:
    """``run`` without an algorithm or a size: one line saying what is missing."""
    from .algorithms.registry import algorithms_for, check_collective

    missing = []
    if args.algorithm is None:
        names = ", ".join(sorted(algorithms_for(check_collective(args.collective))))
        missing.append(f"--algorithm NAME (for {args.collective}: {names})")
    if args.elements is None and args.bytes is None and args.sizes is None and args.moe is None:
        missing.append("a size (--elements N or --bytes B" + (", --sizes FILE or --moe ..." if args.collective == "alltoallv"
                                                              else "") + ")")
    if missing:
        raise UserInputError(f"run needs {' and '.join(missing)}")


def _unused_by_run(args) -> dict:
    """``{dest: why}`` of ``run``'s options that the chosen algorithm, workload, verification or
    ``--study`` does not use (the algorithm's own options are checked by the registry)."""
    from .algorithms import get_algorithm

    algo = get_algorithm(args.algorithm, args.collective)
    unused = {}
    if algo.kind == "dense":
        for dest in ("workload", "overlap"):    # --inputs, --density, --k: resolve refuses any value
            unused[dest] = f"by the dense algorithm '{algo.name}': it applies to sparse algorithms"
    else:
        if args.workload != "topk":
            unused["overlap"] = f"with --workload {args.workload} (only --workload topk reads it)"
        if args.workload != "npy":
            unused["inputs"] = f"with --workload {args.workload} (only --workload npy reads it)"
    if algo.kind == "sparse" or args.verify != "auto":
        unused["memory_budget"] = (f"with --verify {args.verify} (only --verify auto reads it)" if algo.kind == "dense"
                                   else f"by the sparse algorithm '{algo.name}' (sparse runs carry full data)")
    if args.verify == "symbolic" and args.moe is None:    # --moe: the gate's seed
        unused["seed"] = "with --verify symbolic (size-only runs have no input values)"
    if args.study:
        if args.timing != "study":
            unused["timing"] = f"with --study (which sets --timing study; --timing {args.timing} contradicts it)"
        if args.routing == "first":     # another value: resolve_study names the contradiction
            unused["routing"] = "with --study (which sets --routing study; --routing first contradicts it)"
    return unused


class _Progress:
    """The progress bar of ``run`` on stderr (a tqdm bar, shown after 2 s): messages sent out
    of the exact total the algorithm declares (its registry ``messages`` hook), with
    percentage and ETA; a count without a total for algorithms that declare none. The
    postfix is the simulated time so far."""

    def __init__(self, file=None, delay: float = 2.0):
        self.file = sys.stderr if file is None else file
        self.delay = delay
        self.bar = None
        self.total = None

    def set_total(self, total) -> None:
        from tqdm import tqdm

        self.total = total
        self.bar = tqdm(total=total, unit=" msg", unit_scale=True, desc="  simulating", file=self.file,
                        delay=self.delay, leave=False, dynamic_ncols=True, mininterval=0.5)

    def __call__(self, now, flows_done, messages):
        if self.bar is None:
            self.set_total(None)
        self.bar.set_postfix_str(f"simulated {format_time(now)}", refresh=False)
        self.bar.update(messages - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def cmd_run(args) -> int:
    from .simulate import run_allreduce

    config = config_from_args(args)
    check_distinct_outputs(json=args.json, trace=args.trace)
    check_output_path(args.json, "--json")
    check_output_path(args.trace, "--trace")
    limits = _trace_limits(args, config)
    progress = None
    if not args.quiet and args.json != "-" and sys.stderr.isatty():
        progress = _Progress()
    try:
        report = run_allreduce(config, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    if args.trace:
        from .trace import write_trace

        write_trace(report, args.trace, *limits)
    if args.json:
        write_json(report.to_json(), args.json)
    if args.json != "-" and args.quiet:
        print(format_line(report))
    elif args.json != "-":
        print(format_report(report))
        if args.trace:
            print(f"  trace        {args.trace} (open in https://ui.perfetto.dev)")
    return 0


def _trace_limits(args, config) -> tuple:
    """``(ranks, window)`` of ``--trace-ranks``/``--trace-window``, checked before the run
    (the ranks against the run's rank count); both need ``--trace``."""
    if not args.trace:
        refuse_unused(args, {d: "without --trace (it limits the trace file)" for d in ("trace_ranks", "trace_window")})
        return None, None
    from .trace import check_trace_ranks, parse_trace_ranks, parse_trace_window

    ranks = parse_trace_ranks(args.trace_ranks) if args.trace_ranks is not None else None
    window = parse_trace_window(args.trace_window) if args.trace_window is not None else None
    if ranks is not None:
        from .simulate import resolve

        check_trace_ranks(ranks, resolve(config).P)
    return ranks, window


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(command_of(argv))
        args = parser.parse_args(argv)
        load_plugin_arguments(args)
        if getattr(args, "yes", False):       # --yes: beyond the guard's wall limit
            from .guard import confirm

            confirm()
        with noticing_compiles():       # one line on stderr if numba compiles (a cold cache)
            return args.func(args)
    except VerificationError as exc:
        print(f"simcollective: verification FAILED: {exc}", file=sys.stderr)
        return 3
    except DeadlockError as exc:
        print(f"simcollective: error: {exc}", file=sys.stderr)
        return 4
    except (SimCollectiveError, TopologyError) as exc:
        print(f"simcollective: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("simcollective: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
