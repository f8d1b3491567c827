"""``simcollective p2p``: time messages between two ranks and show their route.

One size (``--bytes``, default 1M): the route hop by hop, its latency, bottleneck and the
message's time. Several sizes (``-b MIN -e MAX [-f FACTOR]``, as nccl-tests' flags; the
sizes of OSU's osu_latency and osu_bw, 1 B to 4 MiB doubling, are ``-b 1 -e 4M``): an
OSU-style table, one line per size, with

* ``Latency (us)``: osu_latency's latency, the one-way time of one message (a simulated
  ping-pong's two directions take the same time, so half its round trip is this);
* ``Bandwidth (MB/s)``: osu_bw's bandwidth, ``--window`` messages (default 64, osu_bw's)
  posted at once from the source and one 4-byte reply, ``window x size / time``, in MB/s
  (10^6 bytes/s) as OSU prints it.

``--json`` and ``--csv`` write the table in SI units (``time_s`` in seconds, ``bandwidth``
in bytes/s).
"""

from __future__ import annotations

import csv
import sys

from .arguments import add_topology_arguments, check_distinct_outputs, check_topology_conflicts, refuse_unused
from .arguments import topology_config
from .errors import UserInputError
from .parsing import (check_output_path, format_bytes, format_rate, format_time, parse_int, parse_size, write_json,
                      writing)
from .run_config import SCHEMA_VERSION, routing_of

__all__ = ["add_parser", "cmd_p2p", "osu_sizes", "OSU_WINDOW"]

#: osu_bw's default window: messages in flight before the receiver's reply
OSU_WINDOW = 64
#: osu_bw's reply from the receiver after each window (bytes)
_ACK = 4


def add_parser(sub) -> None:
    p = sub.add_parser("p2p", help="time messages between two ranks (one size, or an OSU-style table) and show "
                                   "the route")
    add_topology_arguments(p)
    p.add_argument("--src", default="0", help="source rank (linear placement) (default: 0)")
    p.add_argument("--dst", default="1", help="destination rank (default: 1)")
    p.add_argument("--bytes", metavar="BYTES", help="one message size, e.g. 1G (default: 1M)")
    p.add_argument("-b", "--minbytes", metavar="BYTES", help="OSU-style table: first size (e.g. 1)")
    p.add_argument("-e", "--maxbytes", metavar="BYTES", help="OSU-style table: last size (e.g. 4M)")
    p.add_argument("-f", "--stepfactor", metavar="F", help="OSU-style table: multiply the size by F (default: 2)")
    p.add_argument("--window", metavar="W", help=f"OSU-style table: messages per osu_bw window (default: {OSU_WINDOW})")
    p.add_argument("--placement", default="linear", metavar="linear|study|PATH")
    p.add_argument("--json", metavar="PATH|-", help="write the result as JSON (- for stdout)")
    p.add_argument("--csv", metavar="PATH|-", help="OSU-style table: write it as CSV in SI units (- for stdout)")
    p.set_defaults(func=cmd_p2p)


def osu_sizes(minbytes: int, maxbytes: int, factor: int) -> list:
    """``minbytes``, times ``factor`` while <= ``maxbytes`` (0 is followed by 1, as OSU's
    tables start at 0 or 1)."""
    if minbytes < 0 or maxbytes < minbytes:
        raise UserInputError(f"-b {minbytes} -e {maxbytes}: give 0 <= -b <= -e")
    if factor < 2:
        raise UserInputError(f"-f {factor} must be >= 2")
    sizes, s = [], minbytes
    while s <= maxbytes:
        sizes.append(s)
        s = s * factor if s else 1
        if len(sizes) > 200:
            raise UserInputError("more than 200 sizes; use a larger -f")
    return sizes


def _table_mode(args) -> bool:
    table = any(v is not None for v in (args.minbytes, args.maxbytes, args.stepfactor, args.window))
    if table and args.bytes is not None:
        raise UserInputError("--bytes (one size) and -b/-e/-f/--window (a table) do not combine; give one form")
    if table and (args.minbytes is None or args.maxbytes is None):
        raise UserInputError("the OSU-style table needs both -b MIN and -e MAX (e.g. -b 1 -e 4M)")
    if not table:
        refuse_unused(args, {"csv": "with one size (--csv writes the table of -b/-e)"})
    return table


def cmd_p2p(args) -> int:
    from .placement import resolve_placement
    from .profiles import load_profile
    from .simulate import build_graph

    check_topology_conflicts(args)
    table = _table_mode(args)
    check_distinct_outputs(json=args.json, csv=args.csv)
    if args.json == "-" and args.csv == "-":
        raise UserInputError("--json - and --csv - would both write to stdout; give a file to one of them")
    check_output_path(args.json, "--json")
    check_output_path(args.csv, "--csv")
    if table:
        sizes = osu_sizes(parse_size(args.minbytes, "-b"), parse_size(args.maxbytes, "-e"),
                          parse_int(args.stepfactor, "-f", 2) if args.stepfactor is not None else 2)
        window = parse_int(args.window, "--window", 1) if args.window is not None else OSU_WINDOW
    size = parse_size(args.bytes, "--bytes") if args.bytes is not None else 2**20
    src, dst = parse_int(args.src, "--src", 0), parse_int(args.dst, "--dst", 0)
    graph = build_graph(topology_config(args))
    profile = load_profile(args.profile).with_graph_latencies()   # one message pays its route's latency
    order = resolve_placement(graph, args.placement)
    for name, r in (("--src", src), ("--dst", dst)):
        if r >= len(order):
            raise UserInputError(f"{name} {r} is out of range: the machine has ranks 0..{len(order) - 1}")
    if src == dst:
        raise UserInputError(f"--src and --dst are both {src}; give two different ranks")
    pair = (graph, profile, [order[src], order[dst]], routing_of(args.routing, graph))
    if table:
        return _cmd_table(args, pair, src, dst, sizes, window)
    time_s, net = _simulate(pair, size)
    out = {"schema_version": SCHEMA_VERSION, **_route(net, order[src], order[dst]), "src": src, "dst": dst,
           "bytes": size, "profile": profile.name, "time_s": time_s}
    if args.json:
        write_json(out, args.json)
    if args.json != "-":
        _print(out)
    return 0


def _simulate(pair, size: int, window: int = 1, reply: bool = False):
    """``(time, network)`` of ``window`` messages of ``size`` bytes posted at once from the
    first GPU of ``pair`` to the second (``reply``: and osu_bw's reply after them)."""
    from .network.engine import Network, SimEnvironment
    from .runtime import run_ranks

    graph, profile, gpus, routing = pair

    class _Payload:
        nbytes = size

    class _Ack:
        nbytes = _ACK

    def main(comm):
        if comm.rank == 0:
            for j in range(window):
                req = comm.send(1, _Payload(), tag=j)
            yield comm.recv(1, tag=window) if reply else req
        else:
            reqs = [comm.recv(0, tag=j) for j in range(window)]
            yield comm.waitall(reqs)
            if reply:
                yield comm.send(0, _Ack(), tag=window)

    env = SimEnvironment()
    net = Network(env, profile.network.effective_graph(graph), profile.network, routing)
    result = run_ranks(graph, gpus, main, lambda r: (), profile, network=net)
    return result.makespan, net


def _route(net, a, b) -> dict:
    """The route from GPU ``a`` to GPU ``b``: hops, crossings, latency, bottleneck, flow cap."""
    route = net.route(a, b)
    hops = net.router.describe(route)
    out = {"src_gpu": a, "dst_gpu": b, "hops": len(hops), "route": hops,
           "switch_crossings": [n for n in route.nodes[1:-1] if n in net.router.crossing_latency],
           "latency_s": route.latency, "bandwidth": route.capacity}
    caps = [net.router.flow_cap[r] for r in route.resources if r in net.router.flow_cap]
    if caps:   # a per-flow cap on the route (--topology-opt net_conn_bandwidth x net_connections)
        out["flow_cap"] = min(caps)
    return out


def _cmd_table(args, pair, src: int, dst: int, sizes: list, window: int) -> int:
    """The OSU-style table: per size the one-way latency of one message and osu_bw's bandwidth."""
    rows = []
    for size in sizes:
        latency, net = _simulate(pair, size)
        elapsed, _ = _simulate(pair, size, window, reply=True)
        rows.append({"bytes": size, "time_s": latency, "bandwidth": window * size / elapsed if elapsed > 0 else 0.0})
    where = _route(net, pair[2][0], pair[2][1])
    out = {"schema_version": SCHEMA_VERSION, "src": src, "dst": dst, "src_gpu": where["src_gpu"],
           "dst_gpu": where["dst_gpu"], "profile": pair[1].name, "window": window, "rows": rows}
    if args.json:
        write_json(out, args.json)
    if args.csv:
        _write_csv(rows, args.csv)
    if args.json != "-" and args.csv != "-":
        print(f"# OSU-style latency and bandwidth (simulated): rank {src} ({out['src_gpu']}) -> rank {dst} "
              f"({out['dst_gpu']}), {where['hops']} hops, profile {out['profile']}, osu_bw window {window}")
        print(f"# {'Size':<10}{'Latency (us)':>18}{'Bandwidth (MB/s)':>20}")
        for r in rows:
            print(f"{r['bytes']:<12d}{r['time_s'] * 1e6:>18.2f}{r['bandwidth'] / 1e6:>20.2f}")
    return 0


def _write_csv(rows, dest) -> None:
    with writing(dest, "--csv"):
        fh = sys.stdout if dest == "-" else open(dest, "w", newline="")
        try:
            w = csv.DictWriter(fh, fieldnames=("bytes", "time_s", "bandwidth"))
            w.writeheader()
            w.writerows(rows)
        finally:
            if fh is not sys.stdout:
                fh.close()


def _print(out: dict) -> None:
    """The human summary of one message: its route hop by hop, latency, bandwidth, time."""
    print(f"p2p rank {out['src']} ({out['src_gpu']}) -> rank {out['dst']} ({out['dst_gpu']}): "
          f"{format_bytes(out['bytes'])}, profile {out['profile']}")
    print(f"  route ({out['hops']} hops):")
    for h in out["route"]:
        print(f"    {h['from']:>14} -> {h['to']:<14} {h['link_type']:<11} {h['bandwidth'] / 1e9:8.3f} GB/s  "
              f"{format_time(h['latency']):>10}  {h['duplex']}")
    if out["switch_crossings"]:
        print(f"  switch crossings: {', '.join(out['switch_crossings'])}")
    print(f"  latency      {format_time(out['latency_s'])} ({out['latency_s']:.9g} s)")
    print(f"  bandwidth    {format_rate(out['bandwidth'])} (bottleneck)")
    if "flow_cap" in out:
        print(f"  flow cap     {format_rate(out['flow_cap'])} per flow (one network connection: net_conn_bandwidth x net_connections)")
    print(f"  time         {format_time(out['time_s'])} ({out['time_s']:.9g} s)")
