"""``simcollective compare LOG --topology T --nodes N``: a published nccl-tests run beside
the simulation (:mod:`simcollective.validation.compare`), ``--fit`` to calibrate one
``--topology-opt`` first (:mod:`simcollective.validation.fit`), ``--plot`` for a figure."""

from __future__ import annotations

from pathlib import Path

from .arguments import (add_nccl_version_argument, add_plugin_argument, add_topology_arguments, add_yes_argument,
                        given)
from .errors import UserInputError
from .parsing import check_output_path, parse_int, parse_size, parse_topology_opts, write_json
from .run_config import SCHEMA_VERSION

__all__ = ["add_parser", "cmd_compare", "plot"]


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare a published nccl-tests run with the simulation",
                       description="Parse an nccl-tests output file (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                                   "broadcast_perf, reduce_perf, alltoall_perf; current and old column "
                                   "formats, busbw-only summaries; launcher prefixes such as '0: ' (srun -l) or "
                                   "'[1,0]<stdout>:' (mpirun --tag-output) are removed), simulate every size on the "
                                   "given machine, and print measured and simulated time and busbw side by side; "
                                   "rows that cannot be simulated (size 0, negative, nan, inf, a row cut short) are "
                                   "listed as dropped; bfloat16, uint32, int64 and uint64 run with data of the same "
                                   "width.")
    p.add_argument("log", metavar="LOG", help="nccl-tests output file")
    add_topology_arguments(p, profile="nccl", nodes_default="the servers that hold the log's ranks")
    p.add_argument("--algorithm", default="auto", metavar="NAME",
                   help="simulated algorithm (default: nccl-X when the log says NCCL_ALGO=X, else nccl, "
                        "NCCL's own choice per size; for a collective without an NCCL algorithm (alltoall): "
                        "'best', the fastest registered algorithm at each size)")
    p.add_argument("--protocol", metavar="simple|ll|ll128", help="force NCCL's protocol")
    p.add_argument("--channels", metavar="N", help="force the channel count")
    p.add_argument("--section", metavar="K", help="which result table of a file with several (1, 2, ...)")
    add_nccl_version_argument(p, "the version the log's header names ('NCCL version 2.18.5', 'NCCL 2.26.2'), "
                                 "else the newest modelled; given, it overrides the log's, with a note")
    p.add_argument("--ranks", metavar="N", help="simulate N ranks instead of the log's count (from its '# Rank' "
                                                "lines, busbw/algbw or size/count)")
    p.add_argument("--in-place", action="store_true", help="compare the in-place columns (default: out-of-place)")
    p.add_argument("--min-size", metavar="BYTES", help="skip smaller sizes of the log")
    p.add_argument("--max-size", metavar="BYTES", help="skip larger sizes of the log")
    p.add_argument("--json", metavar="PATH|-", help="write the comparison as JSON (- for stdout)")
    add_yes_argument(p)
    p.add_argument("--plot", metavar="PNG", help="plot busbw against size (log-log), measured and simulated")
    p.add_argument("--fit", metavar="KEY[=LO:HI]",
                   help="calibrate: find the value of the preset's numeric --topology-opt KEY (e.g. nic_bandwidth, "
                        "net_conn_bandwidth, net_latency) for which the simulated busbw matches the log at --fit-at, "
                        "then print the table with it; range: the option's own (from the preset's check) or LO:HI")
    p.add_argument("--fit-at", metavar="SIZE[,SIZE...]",
                   help="the log's sizes to fit (one: ratio 1 by bisection; several: the largest |ln ratio| "
                        "minimised by golden-section search)")
    add_plugin_argument(p)
    p.set_defaults(func=cmd_compare)



def cmd_compare(args) -> int:
    from .validation.compare import compare
    from .validation.report import format_table

    if args.plot and not args.plot.lower().endswith(".png"):
        raise UserInputError(f"--plot {args.plot!r} must be a .png file name")
    check_output_path(args.plot, "--plot", (".png",))   # checked before any simulation
    check_output_path(args.json, "--json")
    # without --nodes: the servers that hold the log's ranks (compare counts them)
    nodes = parse_int(args.nodes, "--nodes", 1) if "nodes" in given(args) or args.topology_file else None
    kwargs = dict(
        topology=args.topology, nodes=nodes,
        topology_opts=parse_topology_opts(args.topology_opt), algorithm=args.algorithm, profile=args.profile,
        protocol=args.protocol, channels=parse_int(args.channels, "--channels", 1) if args.channels else None,
        section=parse_int(args.section, "--section", 1) if args.section else None, in_place=args.in_place,
        ranks=parse_int(args.ranks, "--ranks", 1) if args.ranks else None,
        min_size=parse_size(args.min_size, "--min-size") if args.min_size else None,
        max_size=parse_size(args.max_size, "--max-size") if args.max_size else None,
        routing=args.routing, topology_file=args.topology_file, nccl_version=args.nccl_version,
    )
    if args.fit is not None or args.fit_at is not None:
        from .validation.fit import fit

        result = fit(args.log, args.fit, args.fit_at, **kwargs)
    else:
        result = compare(args.log, **kwargs)
    if args.plot:
        plot(result, args.plot)
    if args.json:
        write_json({"schema_version": SCHEMA_VERSION, **result}, args.json)
    if args.json != "-":
        print(format_table(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


def plot(res: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    meas = [(s, r["measured_busbw"]) for s, r in zip(sizes, res["rows"]) if r["measured_busbw"]]
    ax.plot([s for s, _ in meas], [b for _, b in meas], "o-", label=f"measured ({res['measured']})")
    ax.plot(sizes, [r["simulated_busbw"] for r in res["rows"]], "s--", label=f"simulated ({res['algorithm']})")
    _size_axis(ax, sizes)
    ax.set_yscale("log")
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(f"{res['collective']}: {Path(res['log']).name}\n{res['ranks']} ranks on {res['topology']}",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise UserInputError(f"--plot {path!r}: cannot write ({exc.strerror})") from None
    finally:
        plt.close(fig)


def _size_axis(ax, sizes) -> None:
    """Log-2 x axis of sizes, ticks written as the command line writes sizes (1M, 4M), at most
    about ten of them (every second power of two, or every fourth, over a wide range)."""
    import math

    import matplotlib.ticker as mt

    ax.set_xscale("log", base=2)
    pos = [s for s in sizes if s > 0]
    if not pos:
        return
    lo, hi = math.floor(math.log2(min(pos))), math.ceil(math.log2(max(pos)))
    step = max(1, math.ceil((hi - lo + 1) / 10))
    ax.xaxis.set_major_locator(mt.FixedLocator([2.0 ** k for k in range(lo, hi + 1, step)]))
    ax.xaxis.set_minor_locator(mt.NullLocator())
    ax.xaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: _size_tick(v)))


def _size_tick(v) -> str:
    """``_size_tick(2**22) == '4M'``, ``_size_tick(2**31) == '2G'``, ``_size_tick(8) == '8'``."""
    for suffix, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if v >= scale and v % scale == 0:
            return f"{int(v // scale)}{suffix}"
    return f"{v:g}"
