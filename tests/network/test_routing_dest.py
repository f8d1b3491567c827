"""``--routing dest`` (D-mod-k: equal-cost next hops chosen by the destination's number) and
``--routing auto`` (the machine's own policy: ``dest`` or ``hash`` on hardware fabrics of several scalable units)."""

import networkx as nx
import pytest
from hypothesis import given, settings, strategies as st

import topologies
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.network.dmodk import destination_numbers
from simcollective.network.routing import ROUTING_POLICIES, Router
from simcollective.run_config import ROUTINGS, RunConfig, routing_of
from tests.conftest import run_flows


def _two_leaves(bandwidth=1.0):
    """Hosts a0, a1 under leaf0 and b0, b1 under leaf1; both leaves on spine0 and spine1."""
    g = nx.DiGraph()
    for i, h in enumerate(("a0", "a1", "b0", "b1")):
        g.add_node(h, kind="gpu", server=i, local=0)
    g.add_nodes_from(("leaf0", "leaf1", "spine0", "spine1"), kind="switch")
    cables = [("a0", "leaf0"), ("a1", "leaf0"), ("b0", "leaf1"), ("b1", "leaf1")]
    cables += [(leaf, spine) for leaf in ("leaf0", "leaf1") for spine in ("spine0", "spine1")]
    for u, v in cables:
        for a, b in ((u, v), (v, u)):
            g.add_edge(a, b, bandwidth=bandwidth, latency=0.0, duplex="full", link_type="infiniband")
    return g


def test_dest_spreads_two_flows_over_two_spines_where_first_shares_one():
    # a0 -> b0 and a1 -> b1, 8 bytes each over 1 B/s links. first: both up leaf0 -> spine0,
    # 1/2 B/s each, 16 s. dest: the destinations are numbered 2 and 3 (leaf by leaf: a0 0,
    # a1 1, b0 2, b1 3), so b0 goes by spine 2 mod 2 = 0 and b1 by spine 3 mod 2 = 1: 8 s.
    g = _two_leaves()
    assert destination_numbers(g)["b0"] == 2 and destination_numbers(g)["b1"] == 3
    flows = [("a0", "b0", 8.0, 0.0), ("a1", "b1", 8.0, 0.0)]
    first, net = run_flows(g, flows, routing="first")
    assert first == [16.0, 16.0]
    assert [net.router.path(s, d)[2] for s, d, *_ in flows] == ["spine0", "spine0"]
    dest, net = run_flows(g, flows, routing="dest")
    assert dest == [8.0, 8.0]
    assert [net.router.path(s, d)[2] for s, d, *_ in flows] == ["spine0", "spine1"]


@st.composite
def _graphs(draw):
    n = draw(st.integers(2, 10))
    g = nx.DiGraph()
    g.add_nodes_from((i, {"kind": draw(st.sampled_from(["switch", "gpu", "nic"]))}) for i in range(n))
    for u in range(n):
        for v in range(u + 1, n):
            if draw(st.floats(0, 1)) < 0.4:
                for a, b in ((u, v), (v, u)):
                    g.add_edge(a, b, bandwidth=1.0, latency=0.0, duplex="full", link_type="link")
    return g


@settings(max_examples=80, deadline=None)
@given(g=_graphs())
def test_dest_is_a_destination_table_and_first_where_the_shortest_path_is_unique(g):
    # every dest route is a shortest path; the choice at a node depends on the destination only
    # (a forwarding table: the rest of the route from any node on it is that node's route);
    # where one shortest path exists, dest, first and hash agree
    routers = {p: Router(g, p) for p in ("first", "hash", "dest")}
    for s in g:
        for d in g:
            if s == d or not nx.has_path(g, s, d):
                continue
            path = routers["dest"].path(s, d)
            assert len(path) - 1 == nx.shortest_path_length(g, s, d)
            for i, u in enumerate(path[1:-1], start=1):
                assert routers["dest"].path(u, d) == path[i:]
            if len(list(nx.all_shortest_paths(g, s, d))) == 1:
                assert routers["first"].path(s, d) == path == routers["hash"].path(s, d)


def test_dest_gives_every_host_of_a_leaf_its_own_spine_on_three_nvl72_racks():
    # 54 hosts: scalable units of 32 and 22 hosts, 32 spines; the routes from SU 0 into SU 1's
    # rail-0 leaf take one spine per destination (D-mod-k), first takes spine 0 for all
    G = topologies.build("gb300-nvl72", 54)
    assert G.graph["routing"] == "dest"
    targets = [f"n{h}/nic0" for h in range(32, 54)]
    dest, first = Router(G, "dest"), Router(G, "first")
    spines = [dest.path("n0/nic0", t)[2] for t in targets]
    assert all(s.startswith("spine") for s in spines) and len(set(spines)) == len(targets)
    assert {first.path("n0/nic0", t)[2] for t in targets} == {"spine0"}
    # a GPU is reached by its NIC's number: the same spine as its NIC
    assert dest.path("n0/gpu0", "n40/gpu0")[3] == dest.path("n0/nic0", "n40/nic0")[2]


def test_auto_spreads_on_multi_unit_hardware_fabrics_and_is_first_elsewhere():
    # the hardware presets spread once their servers span two scalable units (32 servers by
    # default): by destination on InfiniBand, by ECMP hash on Ethernet (RoCE, EFA, TCPX); on
    # one unit, and on the study's and parametric machines, first
    for name in topologies.PRESETS:
        one = topologies.build(name, 1)
        assert routing_of("auto", one) == "first", name
        if one.graph.get("platform") == "hardware":
            two = topologies.build(name, 2, {"nodes_per_su": 1})
            links = {d["link_type"] for u, v, d in two.edges(data=True) if two.nodes[u]["kind"] == "switch"}
            assert routing_of("auto", two) == {"infiniband": "dest", "ethernet": "hash"}[links.pop()], name
            assert routing_of("first", two) == "first" and not links, name
    assert routing_of("auto", topologies.build("dgx-h100", 32)) == "first"
    assert routing_of("auto", topologies.build("dgx-h100", 33)) == "dest"
    assert set(ROUTINGS) == {"auto", *ROUTING_POLICIES} and RunConfig().routing == "auto"


def test_one_scalable_unit_keeps_first():
    # one unit: auto is first, bit for bit (a route may have several shortest paths there:
    # GPU 7 of one server to GPU 0 of the next goes by NVLink to GPU 0's rail, or up its own
    # rail and over a spine; dest would take the other one)
    from simcollective.simulate import run_allreduce

    base = dict(topology="dgx-h100", nodes=2, algorithm="nccl", profile="nccl", bytes=1 << 20)
    first = run_allreduce(RunConfig(routing="first", **base)).fields
    auto = run_allreduce(RunConfig(**base)).fields
    assert auto["routing"] == "first" and auto["time_s"] == first["time_s"]
    G = topologies.build("dgx-h100", 2)
    assert Router(G, "first").path("n0/gpu7", "n1/gpu0")[1] == "n0/nvswitch"
    assert Router(G, "dest").path("n0/gpu7", "n1/gpu0")[1] == "n0/plx7"


def test_unknown_routing_is_one_line_listing_the_policies(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--topology", "dgx-h100", "--algorithm", "ring", "--elements", "1K", "--routing", "dmodk"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "'dmodk'" in err
    assert all(f"'{p}'" in err for p in ROUTINGS)
    with pytest.raises(UserInputError, match=r"'dmodk' is not one of: auto, first, hash, dest, study"):
        routing_of("dmodk", topologies.build("abci", 1))
    g = _two_leaves()
    g.graph["routing"] = "spray"
    with pytest.raises(UserInputError, match="graph attribute routing 'spray'"):
        routing_of("auto", g)


@pytest.mark.parametrize("algorithm", ["ring", "nccl-ring"])
def test_dest_is_bit_identical_on_the_compiled_path(algorithm):
    # two servers in two scalable units (auto: dest); the compiled path replays the same routes
    from tests.network.test_replay import assert_identical, both

    kw = dict(topology="dgx-h100", nodes=2, topology_opts={"nodes_per_su": 1}, algorithm=algorithm,
              elements=1 << 16, profile="nccl" if algorithm.startswith("nccl") else "cm02")
    a, b = both(**kw)
    assert a.fields["routing"] == b.fields["routing"] == "dest"
    assert_identical(a, b)


@pytest.mark.parametrize("routing, line", [
    ("dest", "  routing      dest: each destination its own path up the fabric (D-mod-k)"),
    ("hash", "  routing      hash: (source, destination) pairs spread over equal-cost paths (ECMP hash)"),
    ("first", None),
])
def test_the_summary_says_how_equal_cost_paths_were_chosen(capsys, routing, line):
    from tests.conftest import run_cli

    code, out, _ = run_cli(capsys, "run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring",
                           "--elements", "64K", "--routing", routing)
    assert code == 0
    got = [x for x in out.splitlines() if x.startswith("  routing")]
    assert got == ([line] if line else [])
