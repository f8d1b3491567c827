"""``simcollective compare LOG --topology T --nodes N``: a published nccl-tests run beside
the simulation of the same collective, sizes, dtype and rank count.

Each size of the log is simulated (``nccl`` with the ``nccl`` profile by default, or the
algorithm given); the table shows measured and simulated time and busbw and their ratios
(simulated / measured). nccl-tests run as one process driving N GPUs (``-g N``) pay N
serialised kernel launches per call: the simulated time then includes ``(N - 1) x
launch_us_per_extra_gpu`` of the profile (shown in the header).
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import UserInputError
from .nccltests import BUS_FACTOR, DTYPES, parse_log

__all__ = ["add_parser", "compare", "format_table"]

SUPPORTED = ("all_reduce",)


def add_parser(sub) -> None:
    from ..cli import add_topology_arguments

    p = sub.add_parser("compare", help="compare a published nccl-tests run with the simulation",
                       description="Parse an nccl-tests output file (all_reduce_perf; current and old column "
                                   "formats, busbw-only summaries), simulate every size on the given machine, "
                                   "and print measured and simulated time and busbw side by side.")
    p.add_argument("log", metavar="LOG", help="nccl-tests output file")
    add_topology_arguments(p)
    p.set_defaults(profile="nccl")
    p.add_argument("--algorithm", default="auto", metavar="NAME",
                   help="simulated algorithm (default: nccl-X when the log says NCCL_ALGO=X, else nccl, "
                        "NCCL's own choice per size)")
    p.add_argument("--protocol", metavar="simple|ll|ll128", help="force NCCL's protocol")
    p.add_argument("--channels", metavar="N", help="force the channel count")
    p.add_argument("--section", metavar="K", help="which result table of a file with several (1, 2, ...)")
    p.add_argument("--in-place", action="store_true", help="compare the in-place columns (default: out-of-place)")
    p.add_argument("--min-size", metavar="BYTES", help="skip smaller sizes of the log")
    p.add_argument("--max-size", metavar="BYTES", help="skip larger sizes of the log")
    p.add_argument("--json", metavar="PATH|-", help="write the comparison as JSON (- for stdout)")
    p.add_argument("--plot", metavar="PNG", help="plot busbw against size (log-log), measured and simulated")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from ..parsing import check_output_path, parse_int, parse_topology_opts, write_json
    from ..units import parse_size

    if args.plot and not args.plot.lower().endswith(".png"):
        raise UserInputError(f"--plot {args.plot!r} must be a .png file name")
    check_output_path(args.plot, "--plot", (".png",))   # checked before any simulation
    check_output_path(args.json, "--json")
    result = compare(
        args.log, topology=args.topology, nodes=parse_int(args.nodes, "--nodes", 1),
        topology_opts=parse_topology_opts(args.topology_opt), algorithm=args.algorithm, profile=args.profile,
        protocol=args.protocol, channels=parse_int(args.channels, "--channels", 1) if args.channels else None,
        section=parse_int(args.section, "--section", 1) if args.section else None, in_place=args.in_place,
        min_size=parse_size(args.min_size, "--min-size") if args.min_size else None,
        max_size=parse_size(args.max_size, "--max-size") if args.max_size else None,
        routing=args.routing, topology_file=args.topology_file,
    )
    if args.plot:
        plot(result, args.plot)
    if args.json:
        write_json(result, args.json)
    if args.json != "-":
        print(format_table(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


def _pick_table(tables, section, where):
    if section is not None:
        if section > len(tables):
            raise UserInputError(f"--section {section}: {where} has {len(tables)} result table(s)")
        return tables[section - 1]
    if len(tables) > 1:
        names = "; ".join(f"{i + 1}: {t.title or 'untitled'} ({t.nranks or '?'} ranks, {len(t.rows)} sizes)"
                          for i, t in enumerate(tables))
        raise UserInputError(f"{where} has {len(tables)} result tables; pick one with --section ({names})")
    return tables[0]


def compare(log, topology="dgx-h100", nodes=1, topology_opts=None, algorithm="auto", profile="nccl",
            protocol=None, channels=None, section=None, in_place=False, min_size=None, max_size=None,
            routing="first", topology_file=None) -> dict:
    """Simulate every size of ``log`` (path) and return the comparison (JSON-ready dict)."""
    from ..algorithms import get_algorithm
    from ..profile import load_profile
    from ..simulate import RunConfig, build_graph, run_allreduce

    path = Path(log)
    if not path.is_file():
        raise UserInputError(f"LOG {log!r} is not a file")
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise UserInputError(f"{log}: not nccl-tests output (not a text file)") from None
    table = _pick_table(parse_log(text, str(log)), section, str(log))
    if table.collective not in SUPPORTED:
        raise UserInputError(f"{log}: {table.collective}_perf is not simulated yet; compare supports "
                             f"{', '.join(c + '_perf' for c in SUPPORTED)}")
    forced_note = ""
    if algorithm == "auto":
        algorithm = "nccl"
        if table.forced_algorithm in ("ring", "tree", "nvls"):
            algorithm = f"nccl-{table.forced_algorithm}"
            forced_note = f"NCCL_ALGO={table.forced_algorithm} in the log"
    algo = get_algorithm(algorithm)
    if algo.kind != "dense":
        raise UserInputError(f"--algorithm {algorithm}: compare simulates dense collectives, not '{algorithm}'")
    prof = load_profile(profile)
    config0 = RunConfig(topology=topology, nodes=nodes, topology_opts=dict(topology_opts or {}),
                        topology_file=topology_file, routing=routing)
    graph = build_graph(config0)
    gpus_available = sum(1 for _, d in graph.nodes(data=True) if d.get("kind") == "gpu")
    where = f"{topology}" + ("" if topology_file else f" with --nodes {nodes}")
    n = table.nranks
    if n is None:
        n = gpus_available
        ranks_note = f"rank count not in the log: all {n} GPUs of {where}"
    else:
        ranks_note = f"{n} ranks (from the log)"
        if n > gpus_available:
            raise UserInputError(f"{log}: the log has {n} ranks; {where} holds {gpus_available} GPUs "
                                 f"(use --nodes {math.ceil(n / max(1, gpus_available // max(1, nodes)))})")
    dtype_name = table.dtype or "float"
    if dtype_name not in DTYPES:
        raise UserInputError(f"{log}: data type {dtype_name!r} is not simulated; allowed: "
                             f"{', '.join(sorted(set(DTYPES)))}")
    dtype = DTYPES[dtype_name]
    import numpy as np

    item = np.dtype(dtype).itemsize
    gpp = table.gpus_per_process
    gpp = n if gpp == -1 else gpp
    extra_us = 0.0
    if gpp and gpp > 1 and prof.nccl is not None:
        from .model import arch_of, compute_capability

        gpu = next(v for v, d in graph.nodes(data=True) if d.get("kind") == "gpu")
        arch = arch_of(compute_capability(graph.nodes[gpu].get("model", "GPU")))
        extra_us = (min(gpp, n) - 1) * prof.nccl["launch_us_per_extra_gpu"][arch]
    use_ip = in_place or table.format == "busbw-only"
    factor = BUS_FACTOR(table.collective, n)
    options = {k: v for k, v in (("protocol", protocol), ("channels", channels)) if v is not None}
    rows = []
    for row in table.rows:
        if (min_size is not None and row.size < min_size) or (max_size is not None and row.size > max_size):
            continue
        if row.size % item:
            raise UserInputError(f"{log}: size {row.size} is not a multiple of the {dtype} element size")
        m_time = row.time_ip_us if use_ip else row.time_us
        m_bus = row.busbw_ip if use_ip else row.busbw
        derived = False
        if m_time is None and m_bus:
            m_time = row.size * factor / (m_bus * 1e3)  # us, from busbw (busbw-only logs)
            derived = True
        config = RunConfig(topology=topology, nodes=nodes, topology_opts=dict(topology_opts or {}),
                           topology_file=topology_file, algorithm=algorithm, elements=row.size // item,
                           gpus=n, dtype=dtype, profile=profile, routing=routing, options=dict(options))
        rep = run_allreduce(config, graph=graph)
        t_us = rep["time_s"] * 1e6 + extra_us
        s_bus = row.size / (t_us * 1e3) * factor
        rows.append({
            "size": row.size, "elements": row.size // item,
            "measured_time_us": m_time, "measured_time_derived": derived, "simulated_time_us": t_us,
            "time_ratio": t_us / m_time if m_time else None,
            "measured_busbw": m_bus, "simulated_busbw": s_bus,
            "busbw_ratio": s_bus / m_bus if m_bus else None,
            "algorithm_chosen": rep.fields.get("algorithm_chosen", rep["algorithm"]),
            "protocol": rep.fields.get("protocol"), "channels": rep.fields.get("channels"),
            "verified": rep["verified"],
        })
    if not rows:
        raise UserInputError(f"{log}: no size of the log is within --min-size/--max-size")
    return {
        "log": str(log), "collective": table.collective, "format": table.format, "section": table.title or None,
        "ranks": n, "ranks_note": ranks_note, "dtype": dtype, "measured": "in-place" if use_ip else "out-of-place",
        "topology": topology_file or topology, "nodes": None if topology_file else nodes, "algorithm": algorithm,
        "profile": prof.name, "options": options, "gpus_per_process": gpp, "launch_overhead_us": extra_us,
        "forced": forced_note or None, "rows": rows, "summary": summarize(rows),
    }


def summarize(rows) -> dict:
    """Worst ratios per target band (issue 15): busbw >= 64 MiB, busbw 1-64 MiB, time <= 64 KiB."""
    def worst(sel, key):
        vals = [r[key] for r in rows if sel(r["size"]) and r[key]]
        return max(vals, key=lambda v: abs(v - 1)) if vals else None

    return {
        "busbw_ratio_worst_ge_64MiB": worst(lambda s: s >= 64 << 20, "busbw_ratio"),
        "busbw_ratio_worst_1MiB_64MiB": worst(lambda s: (1 << 20) <= s < (64 << 20), "busbw_ratio"),
        "time_ratio_worst_le_64KiB": worst(lambda s: s <= 64 << 10, "time_ratio"),
    }


def _fmt(v, spec="8.2f"):
    return f"{v:{spec}}" if v is not None else " " * (int(spec.split(".")[0]) - 1) + "-"


def format_table(res: dict) -> str:
    from ..units import format_bytes

    head = (f"{res['log']}: {res['collective']}_perf, {res['format']} format"
            + (f", section '{res['section']}'" if res["section"] else "")
            + f", {res['ranks_note']}, {res['dtype']}, {res['measured']}")
    sim = (f"simulated: {res['algorithm']}" + (f" ({res['forced']})" if res.get("forced") else "")
           + f" on {res['topology']}"
           + (f" (--nodes {res['nodes']})" if res["nodes"] else "") + f", profile {res['profile']}")
    if res["launch_overhead_us"]:
        sim += (f"; single process driving {res['gpus_per_process']} GPUs: "
                f"+{res['launch_overhead_us']:.1f} us of serialised launches per call")
    lines = [head, sim,
             f"{'size':>10} {'meas us':>10} {'sim us':>10} {'t ratio':>8} {'meas busbw':>11} {'sim busbw':>10} "
             f"{'bw ratio':>8}  chosen"]
    derived = False
    for r in res["rows"]:
        mark = "*" if r["measured_time_derived"] else " "
        derived |= r["measured_time_derived"]
        chosen = f"{r['algorithm_chosen']}/{r['protocol']}/{r['channels']}ch" if r["protocol"] else r["algorithm_chosen"]
        lines.append(f"{format_bytes(r['size']):>10} {_fmt(r['measured_time_us'], '9.2f')}{mark}"
                     f"{_fmt(r['simulated_time_us'], '10.2f')} {_fmt(r['time_ratio'], '8.2f')} "
                     f"{_fmt(r['measured_busbw'], '11.2f')} {_fmt(r['simulated_busbw'], '10.2f')} "
                     f"{_fmt(r['busbw_ratio'], '8.2f')}  {chosen}")
    if derived:
        lines.append("* measured time derived from the published busbw (the log has no time column)")
    s = res["summary"]
    parts = []
    for key, label in (("busbw_ratio_worst_ge_64MiB", "busbw >= 64 MiB"),
                       ("busbw_ratio_worst_1MiB_64MiB", "busbw 1-64 MiB"),
                       ("time_ratio_worst_le_64KiB", "time <= 64 KiB")):
        if s[key] is not None:
            parts.append(f"{label}: worst ratio {s[key]:.2f}")
    lines.append("sim/measured, " + "; ".join(parts) + f"  ({len(res['rows'])} sizes, all verified)")
    return "\n".join(lines)


def plot(res: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["size"] for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    meas = [(s, r["measured_busbw"]) for s, r in zip(sizes, res["rows"]) if r["measured_busbw"]]
    ax.plot([s for s, _ in meas], [b for _, b in meas], "o-", label=f"measured ({res['measured']})")
    ax.plot(sizes, [r["simulated_busbw"] for r in res["rows"]], "s--", label=f"simulated ({res['algorithm']})")
    ax.set_xscale("log", base=2)
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
