"""The listing commands: ``simcollective algorithms`` and ``simcollective topologies``."""

from __future__ import annotations

from .arguments import refuse_unused

__all__ = ["cmd_algorithms", "cmd_topologies", "algorithm_help"]


def cmd_algorithms(args) -> int:
    from .algorithms.registry import COLLECTIVES, OPTION_FLAGS, algorithms_for, check_collective

    wanted = [check_collective(args.collective)] if args.collective is not None else COLLECTIVES
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

    refuse_unused(args, {} if args.show is not None else
                  {"nodes": "without --show NAME (the list of presets takes no size; --show describes one built "
                            "with --nodes)"})
    if args.show is not None:
        from .simulate import RunConfig, build_graph

        g = build_graph(RunConfig(topology=args.show, nodes=args.nodes))   # guarded size
        d = topologies.describe(g)
        print(f"{args.show} with {args.nodes} nodes: {g.graph.get('description', '')}")
        for k, v in d.items():
            print(f"  {k:<20} {v}")
        _print_figures(topologies, args.show)
        return 0
    width = max(map(len, topologies.PRESETS))
    for name, preset in topologies.PRESETS.items():
        desc = preset[1]
        print(f"  {name:<{width}} {desc}")
    return 0


def _print_figures(topologies, name: str) -> None:
    """The figures of preset `name`, each with its source, and its --topology-opt keys."""
    rows = topologies.summary.figures(name)
    print("figures (default, source):")
    for key, value, source in rows:
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        print(f"  {key:<28} {shown:<14} {source}")
    keys = [k for k, _, _ in rows if "." not in k and k != "gpu_model"]
    print(f"--topology-opt keys: {', '.join(keys)}")


def algorithm_help() -> str:
    """``run --algorithm``'s help: every algorithm of every collective (every module loaded)."""
    from .algorithms.registry import COLLECTIVES, algorithms_for

    allreduce = algorithms_for("allreduce")
    dense = sorted(a for a in allreduce if allreduce[a].kind == "dense")
    sparse = sorted(a for a in allreduce if allreduce[a].kind == "sparse")
    return (f"required; allreduce dense: {', '.join(dense)}; allreduce sparse: {', '.join(sparse)}; "
            + "; ".join(f"{c}: {', '.join(sorted(algorithms_for(c)))}" for c in COLLECTIVES[1:])
            + " ('simcollective algorithms' describes them)")
