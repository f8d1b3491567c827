"""``simcollective bench``: the nccl-tests workflow, simulated.

``simcollective bench --collective allgather --topology dgx-h100 --nodes 2 -b 8 -e 1G -f 4``
runs every size from ``-b`` to ``-e`` (times ``-f``, or plus ``-i`` bytes) in one command,
verifies every rank's result at every size, and prints the table of nccl-tests'
``*_perf`` binaries with the same columns, units and layout (``size`` in bytes, ``count``
in elements, ``type``, ``redop``, ``root``, time in us, algbw and busbw in GB/s = 1e9 B/s,
``#wrong``), so the two outputs can be diffed. Every other nccl-tests flag (``-t -g -n -w
-m -c -a``, the types of ``-d``, and those refused) is described in
:mod:`simcollective.bench_flags`.

How sizes map to counts is nccl-tests': for allreduce, broadcast, reduce the count is
``size / itemsize``; for allgather, reduce-scatter and alltoall it is the per-rank share
``size / (P itemsize)`` rounded down to a multiple of 16 bytes, and the printed size is
``P x count x itemsize`` (so sizes below 16 P bytes give count 0: such rows are printed
with time 0, as NCCL skips empty collectives, and are not simulated).

The simulator runs one collective per size: the in-place columns repeat the out-of-place
ones (the simulation does not tell them apart), ``#wrong`` is 0 when every element of every
rank was verified (a wrong result stops the command with exit status 3 instead), and
alltoall's in-place ``#wrong`` is ``N/A`` as in nccl-tests.

``--json`` writes the rows in the table's units (``time_us``, GB/s; each row with the
``schema_version`` of docs/schema.md); ``--csv`` writes them
in SI units under a sweep table's column names (``bytes``, ``time_s`` in seconds, ``algbw``
and ``busbw`` in bytes/s), as every CSV of the package is, so ``simcollective plot`` reads a
bench CSV and a sweep's results table alike.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import replace
from itertools import chain, tee

from . import __version__
from .arguments import add_engine_argument, add_plugin_argument, add_yes_argument, check_distinct_outputs, check_topology_conflicts, refuse_unused
from .algorithms.registry import COLLECTIVES
from .bench_flags import (AVERAGES, NCCL_TYPES, STAND_INS, add_nccl_flags, checks_off, combine_times, dtype_of,
                          nccl_settings)
from .errors import UserInputError
from .parsing import check_output_path, parse_int, parse_topology_opts, write_json, writing
from .run_config import SCHEMA_VERSION
from .units import format_bytes, parse_size

__all__ = ["add_parser", "cmd_bench", "bench_sizes", "run_bench", "check_bench_cost", "nccl_units", "format_table", "DEFAULT_ALGORITHM",
           "NCCL_TYPES"]

#: the algorithm ``bench`` runs when ``--algorithm`` is not given (NCCL's ring where it has
#: one; the binomial tree for reduce; pairwise exchange for alltoall; alltoallv: uniform
#: sizes of the size swept, all pairs at once)
DEFAULT_ALGORITHM = {
    "allreduce": "ring", "allgather": "ring", "reduce-scatter": "ring", "broadcast": "ring",
    "reduce": "binomial-tree", "alltoall": "pairwise", "alltoallv": "direct",
}

_HEADER = """\
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"""


def bench_sizes(minbytes: int, maxbytes: int, factor: int | None, step: int | None) -> list[int]:
    """The sizes nccl-tests visits: ``minbytes``, then times ``factor`` (or plus ``step``)
    while <= ``maxbytes``."""
    if minbytes < 0:
        raise UserInputError(f"-b {minbytes} must be >= 0")
    if maxbytes < minbytes:
        raise UserInputError(f"-e {maxbytes} is below -b {minbytes}; give -e >= -b")
    if factor is not None and step is not None:
        raise UserInputError("give -f (multiply) or -i (add), not both")
    if factor is not None and factor < 2:
        raise UserInputError(f"-f {factor} must be >= 2 (or use -i BYTES to add a fixed step)")
    if factor is None and step is not None and step < 1:
        raise UserInputError(f"-i {step} must be >= 1 (or use -f FACTOR >= 2)")
    if factor is None and step is None:
        step = 2**20                      # nccl-tests' default: -i 1M
    sizes = []
    size = minbytes
    while size <= maxbytes:
        sizes.append(size)
        if factor is not None:
            if size == 0:
                break
            size *= factor
        else:
            size += step
        if len(sizes) > 10_000:
            raise UserInputError("more than 10000 sizes; use a larger -f or -i")
    return sizes


def run_bench(base, sizes: list[int], progress=None, nccl: dict | None = None, graph=None) -> list[dict]:
    """One verified simulation per size; rows with nccl-tests' columns (plus the run's
    algorithm, ranks and verification) in SI units: ``time_s`` in seconds, ``algbw`` and
    ``busbw`` in bytes/s (:func:`nccl_units` gives the us and GB/s nccl-tests prints).
    ``base`` is a RunConfig (its ``bytes`` is set per size). ``nccl``: the nccl-tests
    settings (:func:`~simcollective.bench_flags.nccl_settings`): the type name printed, the
    processes' time combined by ``-a`` and ``#wrong`` ``N/A`` without a check (``-c 0``);
    by default one process per rank, ``-a 1``, checked. ``graph``: the machine, when the caller
    has built it (and checked the cost with :func:`check_bench_cost`)."""

    from .data.collectives import get_collective
    from .simulate import resolve, run

    if graph is None:
        graph = check_bench_cost(base, sizes)
    coll = get_collective(base.collective)
    # validate everything once before the long work (the size is filled in per row)
    plan = resolve(replace(base, bytes=None, elements=1), graph)
    P, itemsize = plan.P, plan.dtype.itemsize
    nccl = {"type": NCCL_TYPES[plan.dtype.name], "threads": 1, "gpus": 1, "average": 1, "check": 1, **(nccl or {})}
    wrong = 0 if nccl["check"] else "N/A"
    rows = []
    for size in sizes:
        count = coll.count_from_bytes(size, P, itemsize)
        row = {
            "size": coll.size_bytes(count, P, itemsize), "count": count, "type": nccl["type"],
            "redop": "sum" if coll.reduces else "none", "root": -1 if plan.root is None else plan.root,
            "collective": coll.name, "algorithm": plan.algo.name, "ranks": P, "requested_bytes": size,
        }
        if count == 0:
            row.update(time_s=0.0, algbw=0.0, busbw=0.0, wrong=wrong, verification="empty (count 0, not run)")
        else:
            rep = run(replace(base, bytes=None, elements=count), graph=graph)
            t = combine_times(rep.result.finish, nccl["threads"] * nccl["gpus"], nccl["average"])
            algbw = row["size"] / t if t > 0 else 0.0
            row.update(time_s=t, algbw=algbw, busbw=algbw * coll.busbw_factor(P) if P > 1 else 0.0, wrong=wrong,
                       verification=rep["verification"])
            f = rep.fields
            if "algorithm_chosen" in f:     # NCCL's algorithms: its pick at this size, its version and network
                row.update(nccl_algorithm=f["algorithm_chosen"], protocol=f["protocol"], channels=f["channels"],
                           nccl_version=f.get("nccl_version"), network=f.get("nccl_network"))
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def check_bench_cost(base, sizes: list[int], graph=None):
    """Refuse in one line, before anything is printed, sizes whose runs together are estimated
    beyond the wall limit (:func:`~simcollective.guard.check_plans_cost`); return the machine's
    graph (built here unless given)."""

    from .data.collectives import get_collective
    from .guard import check_plans_cost
    from .simulate import build_graph, resolve, tries_compiled

    graph = build_graph(base) if graph is None else graph
    coll = get_collective(base.collective)
    plan = resolve(replace(base, bytes=None, elements=1), graph)
    counts = sorted(filter(None, (coll.count_from_bytes(size, plan.P, plan.dtype.itemsize) for size in sizes)),
                    reverse=True)   # (largest first: read until past the limit)
    plans = (resolve(replace(base, bytes=None, elements=c), graph) for c in counts)
    plans, tried = tee(chain([next(plans)] if counts else [], plans))   # (the largest resolved even under --yes)
    check_plans_cost(plans, f"these {len(counts)} sizes", "a smaller -e", compiled=map(tries_compiled, tried))
    return graph


def nccl_units(row: dict) -> dict:
    """A row of :func:`run_bench` in nccl-tests' units: ``time_us`` in us, ``algbw`` and
    ``busbw`` in GB/s (1e9 bytes/s); the other fields as they are, in the same order."""
    out = {}
    for k, v in row.items():
        if k == "time_s":
            out["time_us"] = v * 1e6
        else:
            out[k] = v / 1e9 if k in ("algbw", "busbw") else v
    return out


def _time(us: float) -> str:
    if us >= 10000.0:
        return f"{us:7.0f}"
    if us >= 100.0:
        return f"{us:7.1f}"
    return f"{us:7.2f}"


def _row(r: dict, collective: str) -> str:
    head = f"{r['size']:12d}  {r['count']:12d}  {r['type']:>8}  {r['redop']:>6}  {r['root']:6d}"
    block = f"  {_time(r['time_us'])}  {r['algbw']:6.2f}  {r['busbw']:6.2f}  {r['wrong']:>6}"
    inplace = block if collective not in ("alltoall", "alltoallv") else block[:-6] + f"{'N/A':>6}"
    return head + block + inplace


def format_header(base, plan_info: dict, minbytes: int, maxbytes: int, factor, step, nccl: dict) -> str:
    """nccl-tests' header: the settings line with ``-t -g -n -w -m -c`` as given, one device
    line per rank (its process as ``Pid``, its GPU's index in its server as ``device``)."""
    from .data.collectives import get_collective

    coll = get_collective(base.collective)
    stepdesc = f"{factor}(factor)" if factor is not None else f"{step or 2**20}(bytes)"
    lines = [
        f"# simcollective {__version__} bench (simulated): {coll.name}, algorithm {plan_info['algorithm']}, "
        f"{plan_info['ranks']} ranks on {plan_info['where']}, profile {base.profile}",
        f"# {nccl['procs']} process(es) x {nccl['threads']} thread(s) x {nccl['gpus']} GPU(s); time: "
        f"{AVERAGES[nccl['average']]} over processes (-a {nccl['average']})",
    ]
    if nccl["type"] in STAND_INS:
        checked = f"; the values verified are {STAND_INS[nccl['type']]}'s" if nccl["check"] else ""
        lines.append(f"# {nccl['type']} runs with {STAND_INS[nccl['type']]} data (the same width: the times are "
                     f"{nccl['type']}'s{checked})")
    lines += [
        f"# Collective test starting: {coll.perf}",
        f"# nThread {nccl['threads']} nGpus {nccl['gpus']} minBytes {minbytes} maxBytes {maxbytes} step: {stepdesc} "
        f"warmup iters: {nccl['warmup']} iters: {nccl['iters']} agg iters: {nccl['agg']} "
        f"validation: {nccl['check']} graph: 0",
        "#",
        "# Using devices",
    ]
    per_proc, local = nccl["threads"] * nccl["gpus"], {}
    for r, (gpu, server, model) in enumerate(plan_info["devices"]):
        dev = local[server] = local.get(server, -1) + 1
        lines.append(f"#  Rank {r:2d} Group  0 Pid {r // per_proc:6d} on {('node' + str(server)):>10} "
                     f"device {dev:2d} [{gpu}] {model}")
    lines += ["#", _HEADER]
    return "\n".join(lines)


def format_table(rows: list[dict], collective: str) -> str:
    return "\n".join(_row(r, collective) for r in rows)


def format_footer(rows: list[dict], collective: str) -> str:
    from .data.collectives import get_collective

    avg = sum(r["busbw"] for r in rows) / len(rows) if rows else 0.0      # GB/s: rows in nccl_units
    return "\n".join(_nccl_lines(rows) + [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {avg:g} ",
        "#",
        f"# Collective test concluded: {get_collective(collective).perf}",
    ])


def _nccl_lines(rows: list[dict]) -> list[str]:
    """NCCL's algorithms: the tuner's version, the network at the largest size, and NCCL's pick
    (algorithm / protocol / channels) over the sizes, consecutive sizes of one pick joined."""
    runs = [r for r in rows if "nccl_algorithm" in r]
    if not runs:
        return []
    last, picks = runs[-1], []
    for r in runs:
        pick = f"{r['nccl_algorithm']}/{r['protocol']}/{r['channels']}ch"
        if picks and picks[-1][0] == pick:
            picks[-1][2] = r["size"]
        else:
            picks.append([pick, r["size"], r["size"]])
    spans = (f"{p} at {format_bytes(a)}" + (f" to {format_bytes(b)}" if b != a else "") for p, a, b in picks)
    network = f"; network at {format_bytes(last['size'])}: {last['network']}" if last.get("network") else ""
    return [f"# NCCL {last.get('nccl_version') or 'the newest modelled'}'s tuner (simulated){network}",
            f"# NCCL's pick: {', '.join(spans)}"]


def add_parser(subparsers) -> None:
    from .arguments import add_nccl_version_argument, add_topology_arguments

    p = subparsers.add_parser(
        "bench", help="nccl-tests for the simulator: its flags, every size in one command, the *_perf table",
        description="Simulate a collective at every size from -b to -e (x -f or + -i), verify every "
                    "rank's result at each, and print the nccl-tests table (same columns, units, layout). "
                    "Every nccl-tests flag is taken with its meaning there, or refused saying why.")
    add_topology_arguments(p)
    p.add_argument("--collective", default="allreduce", metavar="NAME",
                   help=f"{', '.join(COLLECTIVES)} (default: allreduce)")
    p.add_argument("--algorithm", metavar="NAME",
                   help="algorithm of the collective (default: " +
                        ", ".join(f"{c} {a}" for c, a in DEFAULT_ALGORITHM.items()) + ")")
    p.add_argument("-b", "--minbytes", default="32M", help="first size in bytes, K/M/G binary (default: 32M)")
    p.add_argument("-e", "--maxbytes", default="32M", help="last size in bytes (default: 32M)")
    p.add_argument("-f", "--stepfactor", help="multiply the size by this (>= 2) each step")
    p.add_argument("-i", "--stepbytes", help="add this many bytes each step (default without -f: 1M)")
    p.add_argument("-d", "--datatype", default="float",
                   help="float (default), half, double, int32, bfloat16, uint32, int64, uint64 (the simulator's "
                        "names float32, float16, float64 too; the 1-byte types and 'all' are refused)")
    p.add_argument("-o", "--op", default="sum", help="reduction: sum (the only one simulated)")
    p.add_argument("-r", "--root", help="root of broadcast/reduce (default 0)")
    add_nccl_flags(p)
    s = p.add_argument_group("simulation")
    s.add_argument("--placement", default="linear", metavar="linear|study|PATH")
    s.add_argument("--group-size", metavar="L", help="ranks per group for two-level algorithms")
    s.add_argument("--chunk-size", metavar="BYTES", help="pipelining chunk size of algorithms that take one")
    s.add_argument("--allgather", choices=("direct", "ring", "recursive-doubling"),
                   help="allgather variant of the sparse algorithms that take one")
    s.add_argument("--density", metavar="D", help="sparse algorithms: nonzeros per rank as a fraction")
    s.add_argument("--seed", default="1", help="seed of the inputs (default: 1)")
    s.add_argument("--verify", default="auto", choices=("auto", "full", "symbolic"),
                   help="full data, size-only, or auto by --memory-budget (default: auto; -c 0: symbolic)")
    s.add_argument("--memory-budget", default="1G", metavar="BYTES")
    s.add_argument("--json", metavar="PATH|-", help="write the rows as JSON (- for stdout; keys: docs/schema.md)")
    s.add_argument("--csv", metavar="PATH|-", help="write the rows as CSV in SI units (- for stdout)")
    add_nccl_version_argument(s)
    add_engine_argument(s)
    add_yes_argument(s)
    add_plugin_argument(p)
    p.set_defaults(func=cmd_bench)


def _check_args(args, coll) -> None:
    """The checks of ``bench``'s options that need no machine, before any work."""
    check_topology_conflicts(args)
    check_distinct_outputs(json=args.json, csv=args.csv)
    if args.json == "-" and args.csv == "-":
        raise UserInputError("--json - and --csv - would both write to stdout; give a file to one of them")
    if checks_off(args):
        refuse_unused(args, {dest: "with -c 0 (no check: size-only runs)" for dest in ("verify", "memory_budget",
                                                                                       "seed")})
    if args.verify != "auto":
        refuse_unused(args, {"memory_budget": f"with --verify {args.verify} (only --verify auto reads it)"})
    if args.verify == "symbolic":
        refuse_unused(args, {"seed": "with --verify symbolic (size-only runs have no input values)"})
    check_output_path(args.json, "--json")
    check_output_path(args.csv, "--csv")
    if args.op != "sum":
        raise UserInputError(f"-o {args.op!r}: only sum is simulated (nccl-tests' prod, max, min, avg, mulsum "
                             "and all are not)")
    if args.root is not None and not coll.rooted:
        raise UserInputError(f"-r/--root applies to broadcast and reduce, not to {coll.name}")
    if args.root is not None and args.root.strip() == "all":
        raise UserInputError("-r all: give one root per command (every root is one run of its own)")


def _base_config(args, coll, dtype: str):
    from .simulate import RunConfig
    from .units import parse_fraction

    options = {
        "group_size": parse_int(args.group_size, "--group-size", 1) if args.group_size is not None else None,
        "chunk_size": parse_size(args.chunk_size, "--chunk-size") if args.chunk_size is not None else None,
        "allgather": args.allgather,
    }
    return RunConfig(
        topology=args.topology, nodes=parse_int(args.nodes, "--nodes", 1), topology_opts=parse_topology_opts(args.topology_opt),
        topology_file=args.topology_file, algorithm=args.algorithm or DEFAULT_ALGORITHM[coll.name],
        dtype=dtype, profile=args.profile, placement=args.placement, routing=args.routing,
        seed=parse_int(args.seed, "--seed", 0), options={k: v for k, v in options.items() if v is not None},
        density=parse_fraction(args.density, "--density") if args.density is not None else None,
        verify="symbolic" if checks_off(args) else args.verify, memory_budget=parse_size(args.memory_budget, "--memory-budget"),
        collective=coll.name, root=parse_int(args.root, "-r", 0) if args.root is not None else None,
        nccl_version=args.nccl_version, engine=args.engine)


def cmd_bench(args) -> int:

    from .data.collectives import get_collective
    from .simulate import build_graph, resolve

    coll = get_collective(args.collective)
    _check_args(args, coll)
    factor = parse_int(args.stepfactor, "-f", 0) if args.stepfactor is not None else None
    step = parse_size(args.stepbytes, "-i") if args.stepbytes is not None else None
    minbytes, maxbytes = parse_size(args.minbytes, "-b"), parse_size(args.maxbytes, "-e")
    sizes = bench_sizes(minbytes, maxbytes, factor, step)
    type_name, dtype = dtype_of(args.datatype)
    base = _base_config(args, coll, dtype)
    graph = build_graph(base)
    machine = resolve(replace(base, bytes=None, elements=1), graph).P
    nccl = {**nccl_settings(args, machine), "type": type_name}
    base = replace(base, gpus=nccl["ranks"] if nccl["ranks"] != machine else None)
    plan = resolve(base, graph)     # every bad input fails here, before the first size
    nodes = graph.nodes
    info = {
        "algorithm": plan.algo.name, "ranks": plan.P,
        "where": base.topology_file or f"{base.topology} ({base.nodes} node{'s' if base.nodes != 1 else ''})",
        "devices": [(g, nodes[g].get("server", 0), nodes[g].get("model", "GPU")) for g in plan.placement],
    }
    check_bench_cost(base, sizes, graph)     # refused before a line of the table is printed
    quiet = args.json == "-" or args.csv == "-"
    if not quiet:
        print(format_header(base, info, minbytes, maxbytes, factor, step, nccl), flush=True)
    rows = run_bench(base, sizes, nccl=nccl, graph=graph, progress=None if quiet else
                     (lambda row: print(_row(nccl_units(row), coll.name), flush=True)))
    if not quiet:
        print(format_footer([nccl_units(r) for r in rows], coll.name))
    if args.json:
        write_json([{**nccl_units(r), "schema_version": SCHEMA_VERSION} for r in rows], args.json)
    if args.csv:
        _write_csv(rows, args.csv)
    return 0


#: the columns of ``--csv``, in SI units and named as a sweep's results table names them:
#: ``bytes`` (nccl-tests' size), ``time_s`` in seconds, ``algbw`` and ``busbw`` in bytes/s
CSV_COLUMNS = ("bytes", "count", "type", "redop", "root", "time_s", "algbw", "busbw", "wrong",
               "collective", "algorithm", "ranks", "requested_bytes", "verification")


def _write_csv(rows, dest) -> None:
    with writing(dest, "--csv"):
        fh = sys.stdout if dest == "-" else open(dest, "w", newline="")
        try:
            w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
            w.writeheader()
            for r in rows:
                w.writerow({k: r["size" if k == "bytes" else k] for k in CSV_COLUMNS})
        finally:
            if fh is not sys.stdout:
                fh.close()
