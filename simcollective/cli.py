"""The ``simcollective`` command line.

Subcommands: ``run`` (one collective, allreduce by default), ``p2p`` (one message),
``algorithms``, ``topologies``, and, from their own modules, ``sweep``, ``plot``,
``draw-topology``, ``bench``.
Every user error is one line on stderr (``simcollective: error: ...``) and a non-zero
exit status: 2 for bad input, 3 for a result that fails verification, 4 for a deadlock.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys

from . import __version__
from .errors import DeadlockError, SimCollectiveError, TopologyError, UserInputError, VerificationError
from .parsing import (check_output_path, format_bytes, format_rate, format_time, parse_fraction, parse_int,
                      parse_overlap, parse_seed, parse_size, parse_topology_opts, strict_json, write_json)

__all__ = ["main", "build_parser", "add_topology_arguments", "config_from_args"]

# optional subcommand modules, each with ``add_parser(subparsers)``
_EXTRA_COMMANDS = ("simcollective.sweep", "simcollective.plot", "simcollective.draw", "simcollective.bench",
                   "simcollective.validation.compare")


def add_topology_arguments(p: argparse.ArgumentParser, network: bool = True) -> None:
    """The hardware options shared by ``run``, ``p2p`` and ``draw-topology``.

    ``network=False`` (``draw-topology``): no ``--profile``/``--routing``, which would be ignored.
    """
    import topologies

    from .simulate import run_defaults

    D = run_defaults()
    g = p.add_argument_group("hardware")
    g.add_argument("--topology", default=D["topology"], metavar="NAME",
                   help=f"preset: {', '.join(topologies.PRESETS)} (default: {D['topology']})")
    g.add_argument("--nodes", default=str(D["nodes"]), metavar="N",
                   help=f"number of servers (for fat-tree: single-GPU hosts) (default: {D['nodes']})")
    g.add_argument("--topology-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="builder parameter, repeatable (e.g. oversubscription=3)")
    g.add_argument("--topology-file", metavar="PATH", help="a user graph (.graphml or node-link .json)")
    if not network:
        return
    g.add_argument("--profile", default=D["profile"], metavar="NAME|PATH",
                   help=f"network profile: ideal, cm02, smpi, nccl or a TOML file (default: {D['profile']})")
    g.add_argument("--routing", default=D["routing"], choices=("first", "hash", "study"),
                   help="equal-cost path choice: first (static) or hash (ECMP), or study: SimGrid's "
                        f"Floyd routes over the study's platform files (abci, dgx1, dgx2) (default: {D['routing']})")


def check_topology_conflicts(args) -> None:
    """``--topology-file`` replaces the preset: ``--topology/--nodes/--topology-opt`` with it are errors."""
    if getattr(args, "topology_file", None):
        for flag, value, default in (("--topology", args.topology, "abci"), ("--nodes", args.nodes, "1"),
                                     ("--topology-opt", args.topology_opt, [])):
            if value != default:
                raise UserInputError(f"{flag} and --topology-file do not combine: the file is the whole machine; "
                                     f"drop {flag}")


def build_parser() -> argparse.ArgumentParser:
    from .algorithms import load_all
    from .algorithms.registry import ALGORITHMS
    from .placement import PLACEMENTS
    from .simulate import VERIFY_MODES, run_defaults

    load_all()
    D = run_defaults()
    parser = argparse.ArgumentParser(
        prog="simcollective",
        description="Flow-level simulation of dense and sparse allreduce on GPU clusters, on real data.")
    parser.add_argument("--version", action="version", version=f"simcollective {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    # run ----------------------------------------------------------------------------------
    dense = sorted(a for a in ALGORITHMS if ALGORITHMS[a].kind == "dense")
    sparse = sorted(a for a in ALGORITHMS if ALGORITHMS[a].kind == "sparse")
    p = sub.add_parser("run", help="simulate one allreduce, verify it, print time and bandwidth",
                       description="Simulate one allreduce on real data, verify every rank's result "
                                   "against NumPy, and print time, algbw/busbw, phases and busiest links.")
    add_topology_arguments(p)
    p.add_argument("--collective", default="allreduce", metavar="NAME",
                   help="allreduce (default), allgather, reduce-scatter, broadcast, reduce, alltoall")
    p.add_argument("--algorithm", required=True, metavar="NAME",
                   help=f"allreduce dense: {', '.join(dense)}; sparse: {', '.join(sparse)}; "
                        "other collectives: see 'simcollective algorithms'")
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
    st = p.add_argument_group("the study's simulator (artefacts of its setup, not of the hardware)")
    st.add_argument("--timing", default=D["timing"], choices=("simultaneous", "study"),
                    help=f"study: ranks start at their barrier-exit offsets and the time is the "
                         f"largest (finish - own start) (default: {D['timing']})")
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
    o.add_argument("--trace", metavar="PATH", help="write a Chrome trace (Perfetto) of the run")
    o.add_argument("--quiet", action="store_true",
                   help="no progress bar (shown on stderr when it is a terminal, never with --json -: "
                        "messages sent of the run's exact total, with percentage and ETA; an algorithm "
                        "without a declared count shows the count only)")
    p.set_defaults(func=cmd_run)

    # p2p ----------------------------------------------------------------------------------
    p = sub.add_parser("p2p", help="time one message between two ranks and show its route")
    add_topology_arguments(p)
    p.add_argument("--src", default="0", help="source rank (linear placement) (default: 0)")
    p.add_argument("--dst", default="1", help="destination rank (default: 1)")
    p.add_argument("--bytes", default="1M", help="message size, e.g. 1G (default: 1M)")
    p.add_argument("--placement", default="linear", metavar="linear|study|PATH")
    p.add_argument("--json", metavar="PATH|-", help="write the result as JSON (- for stdout)")
    p.set_defaults(func=cmd_p2p)

    # listings -------------------------------------------------------------------------------
    p = sub.add_parser("algorithms", help="list the algorithms of every collective")
    p.add_argument("--collective", metavar="NAME", help="only this collective")
    p.set_defaults(func=cmd_algorithms)
    p = sub.add_parser("topologies", help="list the topology presets (or describe one)")
    p.add_argument("--show", metavar="NAME", help="describe this preset built with --nodes")
    p.add_argument("--nodes", default="2", metavar="N")
    p.set_defaults(func=cmd_topologies)

    for modname in _EXTRA_COMMANDS:
        importlib.import_module(modname).add_parser(sub)
    return parser


def config_from_args(args):
    """A :class:`~simcollective.simulate.RunConfig` from parsed ``run`` arguments."""
    from .simulate import RunConfig

    check_topology_conflicts(args)
    options = {
        "group_size": parse_int(args.group_size, "--group-size", 1) if args.group_size is not None else None,
        "chunk_size": parse_size(args.chunk_size, "--chunk-size") if args.chunk_size is not None else None,
        "allgather": args.allgather,
        "densify": args.densify,
        "resparsify": args.resparsify,
        "protocol": args.protocol,
        "channels": parse_int(args.channels, "--channels", 1) if args.channels is not None else None,
    }
    if options["chunk_size"] == 0:
        raise UserInputError("--chunk-size 0 must be > 0")
    if args.density is not None and args.k is not None:
        raise UserInputError("give either --density or --k, not both")
    if (args.elements is None) == (args.bytes is None):
        raise UserInputError("give the size as --elements N or --bytes B (one of them)")
    return RunConfig(
        topology=args.topology,
        nodes=parse_int(args.nodes, "--nodes", 1),
        topology_opts=parse_topology_opts(args.topology_opt),
        topology_file=args.topology_file,
        algorithm=args.algorithm,
        elements=parse_size(args.elements, "--elements") if args.elements is not None else 2**20,
        bytes=parse_size(args.bytes, "--bytes") if args.bytes is not None else None,
        collective=args.collective,
        root=parse_int(args.root, "--root", 0) if args.root is not None else None,
        gpus=parse_int(args.gpus, "--gpus", 1) if args.gpus is not None else None,
        dtype=args.dtype,
        profile=args.profile,
        placement=args.placement,
        routing=args.routing,
        seed=parse_seed(args.seed, "--seed"),
        options={k: v for k, v in options.items() if v is not None},
        density=parse_fraction(args.density, "--density") if args.density is not None else None,
        k=parse_size(args.k, "--k") if args.k is not None else None,
        workload=args.workload,
        overlap=parse_overlap(args.overlap, "--overlap"),
        inputs=args.inputs,
        verify=args.verify,
        memory_budget=parse_size(args.memory_budget, "--memory-budget"),
        trace=bool(args.trace),
        timing=args.timing,
        study=bool(args.study),
    )


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
    check_output_path(args.json, "--json")
    check_output_path(args.trace, "--trace")
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

        write_trace(report, args.trace)
    if args.json:
        write_json(report.to_json(), args.json)
    if args.json != "-":
        print(format_report(report))
        if args.trace:
            print(f"  trace        {args.trace} (open in https://ui.perfetto.dev)")
    return 0


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
    if f.get("placement_order"):
        lines.append(f"  placement    {f['placement_order']}")
    study = [f"{k} study" for k in ("routing", "timing") if f.get(k) == "study"]
    if f.get("options", {}).get("densify") == "study":
        study.append("densify study")
    if study:  # the study's simulator (issue 14): say which of its behaviours are on
        lines.append(f"  study        {'--study: ' if f.get('study') else ''}{', '.join(study)}")
    if f["kind"] == "sparse":
        lines.append(f"  workload     {f['workload']}, k = {f['k']} per rank (density {f['density']:.6g}); "
                     f"result density {f['result_density']:.4g}, {f['dense_parts']} of {f['result_parts']} parts dense")
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
                     + (f"; NCCL's model predicts {f['nccl_predicted_us']:.1f} us"
                        if f.get("nccl_predicted_us") is not None else ""))
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
    return "\n".join(lines)


def cmd_p2p(args) -> int:
    from .network.engine import Network, SimEnvironment
    from .placement import resolve_placement
    from .profiles import load_profile
    from .runtime import run_ranks
    from .simulate import RunConfig, build_graph

    check_topology_conflicts(args)
    check_output_path(args.json, "--json")
    size = parse_size(args.bytes, "--bytes")
    src, dst = parse_int(args.src, "--src", 0), parse_int(args.dst, "--dst", 0)
    config = RunConfig(topology=args.topology, nodes=parse_int(args.nodes, "--nodes", 1),
                       topology_opts=parse_topology_opts(args.topology_opt), topology_file=args.topology_file)
    graph = build_graph(config)
    profile = load_profile(args.profile)
    order = resolve_placement(graph, args.placement)
    for name, r in (("--src", src), ("--dst", dst)):
        if r >= len(order):
            raise UserInputError(f"{name} {r} is out of range: the machine has ranks 0..{len(order) - 1}")
    if src == dst:
        raise UserInputError(f"--src and --dst are both {src}; give two different ranks")

    class _Payload:
        nbytes = size

    def main(comm):
        if comm.rank == 0:
            yield comm.send(1, _Payload())
        else:
            yield comm.recv(0)

    env = SimEnvironment()
    net = Network(env, profile.network.effective_graph(graph), profile.network, args.routing)
    result = run_ranks(graph, [order[src], order[dst]], main, lambda r: (), profile, network=net)
    route = net.route(order[src], order[dst])
    hops = net.router.describe(route)
    crossings = [n for n in route.nodes[1:-1] if n in net.router.crossing_latency]
    out = {
        "src": src, "dst": dst, "src_gpu": order[src], "dst_gpu": order[dst], "bytes": size,
        "profile": profile.name, "hops": len(hops), "route": hops,
        "switch_crossings": crossings,
        "latency_s": route.latency,
        "bandwidth": route.capacity,
        "time_s": result.makespan,
    }
    caps = [net.router.flow_cap[r] for r in route.resources if r in net.router.flow_cap]
    if caps:   # a per-flow cap on the route (--topology-opt net_conn_bandwidth)
        out["flow_cap"] = min(caps)
    if args.json:
        write_json(out, args.json)
    if args.json != "-":
        print(f"p2p rank {src} ({order[src]}) -> rank {dst} ({order[dst]}): {format_bytes(size)}, profile {profile.name}")
        print(f"  route ({len(hops)} hops):")
        for h in hops:
            print(f"    {h['from']:>14} -> {h['to']:<14} {h['link_type']:<11} {h['bandwidth'] / 1e9:8.3f} GB/s  "
                  f"{format_time(h['latency']):>10}  {h['duplex']}")
        if crossings:
            print(f"  switch crossings: {', '.join(crossings)}")
        print(f"  latency      {format_time(route.latency)} ({route.latency:.9g} s)")
        print(f"  bandwidth    {format_rate(route.capacity)} (bottleneck)")
        if caps:
            print(f"  flow cap     {format_rate(min(caps))} per flow (one network connection: net_conn_bandwidth)")
        print(f"  time         {format_time(result.makespan)} ({result.makespan:.9g} s)")
    return 0


def cmd_algorithms(args) -> int:
    from .algorithms.registry import COLLECTIVES, OPTION_FLAGS, algorithms_for, check_collective

    wanted = [check_collective(args.collective)] if args.collective else COLLECTIVES
    for coll in wanted:
        algos = algorithms_for(coll)
        for kind in ("dense", "sparse"):
            names = sorted(a for a in algos if algos[a].kind == kind)
            if not names:
                continue
            print(f"{coll} ({kind}):")
            for name in names:
                a = algos[name]
                opts = " ".join(OPTION_FLAGS[o] for o in a.options)
                extra = "" if a.exact else " [approximate: verified against its own definition]"
                print(f"  {name:<24} {a.summary}{extra}" + (f"  (options: {opts})" if opts else ""))
    return 0


def cmd_topologies(args) -> int:
    import topologies

    if args.show:
        from .simulate import RunConfig, build_graph

        g = build_graph(RunConfig(topology=args.show, nodes=parse_int(args.nodes, "--nodes", 1)))   # guarded size
        d = topologies.describe(g)
        print(f"{args.show} with {args.nodes} nodes: {g.graph.get('description', '')}")
        for k, v in d.items():
            print(f"  {k:<20} {v}")
        return 0
    for name, preset in topologies.PRESETS.items():
        desc = preset[1]
        print(f"  {name:<10} {desc}")
    return 0


def main(argv=None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
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
