"""``simcollective p2p``: time one message between two ranks and show its route."""

from __future__ import annotations

from .arguments import add_topology_arguments, check_topology_conflicts, topology_config
from .errors import UserInputError
from .parsing import check_output_path, format_bytes, format_rate, format_time, parse_int, parse_size, write_json

__all__ = ["add_parser", "cmd_p2p"]


def add_parser(sub) -> None:
    p = sub.add_parser("p2p", help="time one message between two ranks and show its route")
    add_topology_arguments(p)
    p.add_argument("--src", default="0", help="source rank (linear placement) (default: 0)")
    p.add_argument("--dst", default="1", help="destination rank (default: 1)")
    p.add_argument("--bytes", default="1M", help="message size, e.g. 1G (default: 1M)")
    p.add_argument("--placement", default="linear", metavar="linear|study|PATH")
    p.add_argument("--json", metavar="PATH|-", help="write the result as JSON (- for stdout)")
    p.set_defaults(func=cmd_p2p)


def cmd_p2p(args) -> int:
    from .network.engine import Network, SimEnvironment
    from .placement import resolve_placement
    from .profiles import load_profile
    from .runtime import run_ranks
    from .simulate import build_graph

    check_topology_conflicts(args)
    check_output_path(args.json, "--json")
    size = parse_size(args.bytes, "--bytes")
    src, dst = parse_int(args.src, "--src", 0), parse_int(args.dst, "--dst", 0)
    graph = build_graph(topology_config(args))
    profile = load_profile(args.profile).with_graph_latencies()   # one message pays its route's latency
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
        _print(out)
    return 0


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
        print(f"  flow cap     {format_rate(out['flow_cap'])} per flow (one network connection: net_conn_bandwidth)")
    print(f"  time         {format_time(out['time_s'])} ({out['time_s']:.9g} s)")
