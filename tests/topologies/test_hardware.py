"""The hardware presets as built: counts, datasheet bandwidths measured with the flow model,
latencies, rails, nearest NICs, NVLS marks, options and their errors, and that the study's
presets and the DGX H100 figures give fixed graphs."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import networkx as nx
import pytest

import topologies
from simcollective.cli import main as cli_main
from simcollective.network.engine import Network, SimEnvironment
from simcollective.network.routing import Router
from simcollective.profiles import load_profile
from tests.conftest import HARDWARE, kinds, leaf_ratio, levels
from topologies import abci, build, describe, dgx1_cluster, dgx1_v100, dgx2_v100, dgx_a100, dgx_h100, dgx_h100_cluster, gb200_nvl72, gpus, load, preset_label, PRESETS, save, TopologyError
from topologies.hardware.cloud import SHAPES


STUDY = ["abci", "dgx1", "dgx2"]


def kind_counts(G):
    return Counter(d["kind"] for _, d in G.nodes(data=True))


def finish_times(G, flows):
    """Flows (src, dst, bytes) all started at t = 0 under `ideal`; their finish times."""
    env = SimEnvironment()
    net = Network(env, G, load_profile("ideal").network, "first")
    done = [None] * len(flows)
    for i, (s, d, size) in enumerate(flows):
        net.transfer(s, d, size, lambda f, i=i: done.__setitem__(i, env.now))
    env.run()
    return done


def rate(G, flows, size=10**9):
    """The rate (bytes/s) each flow gets: size / (finish - route latency)."""
    router = Router(G)
    done = finish_times(G, [(s, d, size) for s, d in flows])
    return [size / (t - router.route(s, d).latency) for t, (s, d) in zip(done, flows)]


# ------------------------------------------------------------------------ counts
@pytest.mark.parametrize("name,nodes,expect", [
    # gpus, nics, nvswitch nodes, pcie switches, leaves, spines, cables by type
    ("dgx1-v100", 2, (16, 8, 0, 8, 4, 2, {"nvlink": 32, "pcie": 24, "infiniband": 8 + 8})),
    ("dgx2-v100", 2, (32, 16, 4, 16, 8, 2, {"nvswitch": 32 + 2, "pcie": 48,
                                              "infiniband": 16 + 16})),
    ("dgx-a100", 2, (16, 16, 2, 16, 8, 2, {"nvswitch": 16, "pcie": 40,
                                            "infiniband": 16 + 16})),
    ("dgx-h100", 2, (16, 16, 2, 16, 8, 2, {"nvswitch": 16, "pcie": 32, "infiniband": 16 + 16})),
    ("dgx-b200", 2, (16, 16, 2, 16, 8, 2, {"nvswitch": 16, "pcie": 32, "infiniband": 16 + 16})),
    ("gb200-nvl72", 18, (72, 72, 1, 0, 4, 18, {"nvswitch": 72, "pcie": 72,
                                                "infiniband": 72 + 4 * 18})),
])
def test_counts(name, nodes, expect):
    n_gpu, n_nic, n_nvs, n_plx, n_leaf, n_spine, links = expect
    G = build(name, nodes)
    k = kind_counts(G)
    assert (k["gpu"], k["nic"], k["nvswitch"], k["pcie_switch"]) == (n_gpu, n_nic, n_nvs, n_plx)
    assert describe(G)["switch_levels"] == {"leaf": n_leaf, "spine": n_spine}
    assert describe(G)["links"] == links
    assert describe(G)["duplex"] == {"full": sum(links.values())}
    assert G.graph["platform"] == "hardware" and len(gpus(G)) == n_gpu


def test_dgx1_v100_cube_mesh_is_the_published_one():
    """nvidia-smi topo -m of a DGX-1: double and single pairs, 6 links per GPU."""
    G = dgx1_v100(1)
    double = {(0, 3), (0, 4), (1, 2), (1, 5), (2, 3), (4, 7), (5, 6), (6, 7)}
    single = {(0, 1), (0, 2), (1, 3), (2, 6), (3, 7), (4, 5), (4, 6), (5, 7)}
    for a in range(8):
        for b in range(8):
            if a == b:
                continue
            pair = (min(a, b), max(a, b))
            e = G.edges.get((f"n0/gpu{a}", f"n0/gpu{b}"))
            if pair in double:
                assert e["bandwidth"] == 50e9 and e["duplex"] == "full"
            elif pair in single:
                assert e["bandwidth"] == 25e9 and e["link_type"] == "nvlink"
            else:
                assert e is None
    links = [sum(G.edges[u, v]["bandwidth"] for v in G.successors(u)
                 if G.nodes[v]["kind"] == "gpu") / 25e9 for u in gpus(G)]
    assert links == [6] * 8
    # the ring order is a cycle over double links
    order = [int(x) for x in G.graph["rank_order"].split(",")]
    for a, b in zip(order, order[1:] + order[:1]):
        assert (min(a, b), max(a, b)) in double
    # PCIe switches shared by a GPU pair and a NIC
    for k in range(4):
        assert sorted(G.successors(f"n0/plx{k}")) == [f"n0/gpu{2 * k}", f"n0/gpu{2 * k + 1}",
                                                      f"n0/nic{k}"]


# ------------------------------------------------- bandwidth measured by the flow model
@pytest.mark.parametrize("name,per_gpu", [
    ("dgx-h100", 450e9), ("dgx-a100", 300e9), ("dgx-b200", 900e9), ("gb200-nvl72", 900e9),
    ("dgx2-v100", 150e9),
])
def test_nvswitch_bandwidth_per_gpu_and_direction(name, per_gpu):
    """A GPU sends at its datasheet rate per direction and receives at the same time at the
    same rate (full duplex); two GPUs sending to one share its inbound rate."""
    G = build(name, 2)
    g = gpus(G)
    assert rate(G, [(g[0], g[1])]) == [pytest.approx(per_gpu, rel=1e-9)]
    both = rate(G, [(g[0], g[1]), (g[1], g[0])])
    assert both == [pytest.approx(per_gpu, rel=1e-9)] * 2
    incast = rate(G, [(g[0], g[2]), (g[1], g[2])])
    assert incast == [pytest.approx(per_gpu / 2, rel=1e-9)] * 2


def test_dgx2_crosses_baseboards_at_full_rate():
    G = dgx2_v100(1)
    # 8 GPUs of board 0 each send to a GPU of board 1: 8 x 150e9 < 48 x 25e9
    flows = [(f"n0/gpu{i}", f"n0/gpu{i + 8}") for i in range(8)]
    assert rate(G, flows) == [pytest.approx(150e9, rel=1e-9)] * 8
    assert nx.shortest_path(G, "n0/gpu0", "n0/gpu9") == [
        "n0/gpu0", "n0/nvswitch0", "n0/nvswitch1", "n0/gpu9"]


def test_dgx1_v100_link_rates():
    """V100 DGX-1: 25 GB/s per link and direction, 50 on double pairs, full duplex."""
    G = dgx1_v100(1)
    assert rate(G, [("n0/gpu0", "n0/gpu1")]) == [pytest.approx(25e9)]
    assert rate(G, [("n0/gpu0", "n0/gpu3")]) == [pytest.approx(50e9)]
    assert rate(G, [("n0/gpu0", "n0/gpu3"), ("n0/gpu3", "n0/gpu0")]) == [pytest.approx(50e9)] * 2


@pytest.mark.parametrize("name,nic", [
    ("dgx1-v100", 12.5e9), ("dgx2-v100", 12.5e9), ("dgx-a100", 25e9), ("dgx-h100", 50e9),
    ("dgx-b200", 50e9), ("gb200-nvl72", 50e9),
])
def test_rails_carry_every_nic_at_line_rate(name, nic):
    """GPU i of node 0 -> GPU i of node 1 for every i at once: each pair on its own rail
    (own NIC, own leaf, no spine), every NIC at its line rate."""
    opts = {"hosts_per_domain": 1} if name == "gb200-nvl72" else {}
    G = build(name, 2, opts)
    per = G.graph["gpus_per_node"]
    nics = sum(1 for n in G if n.startswith("n0/nic"))
    # one GPU per NIC: the first GPU whose nearest NIC is NIC j
    senders = {}
    for i in range(per):
        senders.setdefault(G.nodes[f"n0/gpu{i}"]["nic"], i)
    assert len(senders) == nics
    flows = [(f"n0/gpu{i}", f"n1/gpu{i}") for i in senders.values()]
    for (s, d), r in zip(flows, rate(G, flows)):
        assert r == pytest.approx(nic, rel=1e-9)
        path = nx.shortest_path(G, s, d)
        j = G.nodes[s]["nic"].split("nic")[1]
        assert G.nodes[d]["nic"] == f"n1/nic{j}"
        assert f"su0/leaf{j}" in path and G.nodes[s]["nic"] in path
        assert not any("spine" in n for n in path)


# ----------------------------------------------------------------- latencies
@pytest.mark.parametrize("name", ["dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72",
                                  "dgx2-v100"])
def test_latencies_are_nccl_ll_hops(name):
    """NVLink hop 0.6 us (through the switch), network hop on one rail 2.7 us."""
    G = build(name, 2, {"hosts_per_domain": 1} if name == "gb200-nvl72" else {})
    router = Router(G)
    assert router.route("n0/gpu0", "n0/gpu1").latency == pytest.approx(0.6e-6, abs=1e-15)
    cross = router.route("n0/gpu1", "n1/gpu1").latency
    # GB200 has no PCIe switch: GPU - NIC is one 0.5 us PCIe cable on each side
    expect = 1.7e-6 if name == "gb200-nvl72" else 2.7e-6
    assert cross == pytest.approx(expect, abs=1e-15)


def test_dgx1_v100_latencies_and_cross_rail_route():
    G = dgx1_v100(2)
    router = Router(G)
    assert router.route("n0/gpu0", "n0/gpu3").latency == pytest.approx(0.6e-6, abs=1e-15)
    assert router.route("n0/gpu2", "n1/gpu2").latency == pytest.approx(2.7e-6, abs=1e-15)
    # different rails: over NVLink to a GPU of the destination's rail first (as NCCL's PXN),
    # one hop shorter than up to a spine and down
    r = router.route("n0/gpu0", "n1/gpu2")
    assert r.nodes == ("n0/gpu0", "n0/gpu2", "n0/plx1", "n0/nic1", "su0/leaf1", "n1/nic1",
                       "n1/plx1", "n1/gpu2")
    assert r.latency == pytest.approx(0.6e-6 + 2.7e-6, abs=1e-15)
    # with a single NIC per node every GPU shares its PCIe switch (every complex needs a NIC):
    # every route out goes over PCIe to NIC 0 and its leaf
    H = dgx1_v100(2, nics_per_node=1)
    assert Router(H).route("n0/gpu7", "n1/gpu7").nodes[1:6] == ("n0/plx0", "n0/nic0", "su0/leaf0",
                                                                "n1/nic0", "n1/plx0")


# ----------------------------------------------------------- attributes for NCCL
def test_nvls_marks():
    for name, nvls in [("dgx-h100", True), ("dgx-b200", True), ("gb200-nvl72", True),
                       ("dgx-a100", False), ("dgx2-v100", False), ("dgx1-v100", False)]:
        G = build(name, 1)
        assert G.graph["nvls"] is nvls
        switches = [d for _, d in G.nodes(data=True) if d["kind"] == "nvswitch"]
        assert all(d["nvls"] is nvls for d in switches)
    for name in STUDY:
        assert "nvls" not in build(name, 1).graph


@pytest.mark.parametrize("name", HARDWARE)
def test_every_gpu_names_its_nearest_nic(name):
    G = build(name, 2)
    for g in gpus(G):
        nic = G.nodes[g]["nic"]
        assert G.nodes[nic]["kind"] == "nic" and nic.split("/")[0] == g.split("/")[0]
        # nearest: reached over PCIe only (at most one PCIe switch between)
        path = nx.shortest_path(G, g, nic)
        assert len(path) <= 3
        assert all(G.edges[a, b]["link_type"] == "pcie" for a, b in zip(path, path[1:]))


def test_nics_per_node_changes_rails_and_nearest_nics():
    G = dgx_h100(2, nics_per_node=4)
    assert kind_counts(G)["nic"] == 8 and describe(G)["switch_levels"]["leaf"] == 4
    assert [G.nodes[f"n1/gpu{i}"]["nic"] for i in range(8)] == [
        f"n1/nic{i // 2}" for i in range(8)]
    # 4 NICs: 4 PCIe complexes of 2 GPUs + 1 NIC (p4d's layout), so GPUs 2j and 2j+1 both
    # reach NIC j over PCIe and share it; routes out never detour through another GPU
    assert sorted(G.successors("n0/plx1")) == ["n0/gpu2", "n0/gpu3", "n0/nic1"]
    assert [G.nodes[f"n0/gpu{i}"]["nics"] for i in (2, 3)] == ["n0/nic1", "n0/nic1"]
    router = Router(G)
    for i in range(8):
        assert router.route(f"n0/gpu{i}", f"n1/gpu{i}").nodes == (
            f"n0/gpu{i}", f"n0/plx{i // 2}", f"n0/nic{i // 2}", f"su0/leaf{i // 2}",
            f"n1/nic{i // 2}", f"n1/plx{i // 2}", f"n1/gpu{i}")
    H = dgx_a100(2, nics_per_node=16, nic_bandwidth=12.5e9)
    assert H.nodes["n0/gpu3"]["nic"] == "n0/nic6"
    assert H.edges["n1/nic15", "su0/leaf15"]["bandwidth"] == 12.5e9
    assert sorted(H.successors("n0/plx3")) == ["n0/gpu3", "n0/nic6", "n0/nic7", "n0/plx2"]
    # with 4 NICs the complexes of 2 GPUs and 1 NIC stay single switches
    F = dgx_a100(1, nics_per_node=4)
    assert sorted(F.successors("n0/plx1")) == ["n0/gpu2", "n0/gpu3", "n0/nic1"]


def test_oversubscription_measured_at_the_leaves():
    G = dgx_h100(8, oversubscription=2.0, nodes_per_su=8)
    for i in range(8):
        leaf = f"su0/leaf{i}"
        down = sum(G.edges[leaf, v]["bandwidth"] for v in G.successors(leaf)
                   if G.nodes[v]["kind"] == "nic")
        up = sum(G.edges[leaf, v]["bandwidth"] for v in G.successors(leaf)
                 if G.nodes[v]["kind"] == "switch")
        assert (down, up) == (8 * 50e9, 4 * 50e9)
    # 2 scalable units: NIC 3 of node 8 is on the second unit's rail-3 leaf
    H = dgx_h100(9, nodes_per_su=8)
    assert H.has_edge("n8/nic3", "su1/leaf3") and H.has_edge("n7/nic3", "su0/leaf3")


def test_gb200_nvlink_domains():
    G = gb200_nvl72(20)
    assert G.graph["gpus_per_node"] == 4 and G.graph["hosts_per_domain"] == 18
    assert G.in_degree("nvl0/nvswitch") == 72 and G.in_degree("nvl1/nvswitch") == 8
    # within a domain: through the switch; across domains: over the rails
    assert nx.shortest_path(G, "n0/gpu0", "n17/gpu3") == ["n0/gpu0", "nvl0/nvswitch",
                                                          "n17/gpu3"]
    assert nx.shortest_path(G, "n0/gpu2", "n18/gpu2") == [
        "n0/gpu2", "n0/nic2", "su0/leaf2", "n18/nic2", "n18/gpu2"]
    assert G.nodes["nvl1/nvswitch"]["chips"] == 18


@pytest.mark.parametrize("name", HARDWARE)
def test_intra_node_routes_use_nvlink(name):
    G = build(name, 1)
    router = Router(G)
    for g in gpus(G)[1:]:
        path = router.route(gpus(G)[0], g).nodes
        assert all(G.nodes[n]["kind"] in ("gpu", "nvswitch") for n in path), path


@pytest.mark.parametrize("name", HARDWARE)
@pytest.mark.parametrize("ext", [".graphml", ".json"])
def test_round_trip(tmp_path, name, ext):
    G = build(name, 2)
    save(G, tmp_path / f"g{ext}")
    H = load(tmp_path / f"g{ext}")
    assert dict(H.graph) == dict(G.graph)
    assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))
    assert sorted(H.edges(data=True)) == sorted(G.edges(data=True))


# ------------------------------------------------------------------ options and errors
@pytest.mark.parametrize("name,opts,fragments", [
    ("dgx-h100", {"nics_per_node": "0"}, ["nics_per_node", "from 1 to 32", "0"]),
    ("dgx-h100", {"nics_per_node": "33"}, ["nics_per_node", "from 1 to 32", "at most 4 per GPU", "33"]),
    ("gb200-nvl72", {"nics_per_node": "17"}, ["nics_per_node", "from 1 to 16", "17"]),
    ("dgx-a100", {"nic_bandwidth": "200"}, ["nic_bandwidth", "1e8 to 1e12", "200"]),
    ("dgx-b200", {"nic_bandwidth": "inf"}, ["nic_bandwidth", "inf"]),
    ("dgx1-v100", {"oversubscription": "0.5"}, ["oversubscription", "from 1 to 64", "0.5"]),
    ("dgx1-v100", {"oversubscription": "nan"}, ["'nan'", "oversubscription"]),
    ("dgx2-v100", {"nodes_per_su": "0"}, ["nodes_per_su", ">= 1", "0"]),
    ("dgx-h100", {"spines": "-1"}, ["spines", ">= 0"]),
    ("dgx-h100", {"duplex": "half"}, ["duplex", "'half'"]),
    ("gb200-nvl72", {"hosts_per_domain": "19"}, ["hosts_per_domain", "from 1 to 18", "19"]),
    ("dgx-h100", {"nvlink_bandwidth": "-1"}, ["bandwidth", "-1"]),
    ("dgx-h100", {"nic_speed": "1"}, ["unknown option 'nic_speed'", "nic_bandwidth",
                                      "nics_per_node", "oversubscription"]),
])
def test_option_errors(name, opts, fragments):
    with pytest.raises(TopologyError) as info:
        build(name, 2, opts)
    msg = str(info.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, msg


def test_options_reach_the_graph():
    G = build("dgx-b200", 2, {"nic_bandwidth": "25e9", "nics_per_node": "8",
                              "nvlink_bandwidth": "40.1e9"})
    assert G.edges["n0/nic0", "su0/leaf0"]["bandwidth"] == 25e9
    assert G.edges["n0/gpu0", "n0/nvswitch"]["bandwidth"] == pytest.approx(18 * 40.1e9)
    S = build("dgx-a100", 1, {"duplex": "shared"})
    assert describe(S)["duplex"] == {"shared": describe(S)["cables"]}


# ------------------------------------------------------------------- listings
def test_labels_and_listing(capsys):
    assert [preset_label(n) for n in PRESETS] == [
        "study", "study", "study", "parametric"] + ["hardware"] * (6 + len(SHAPES))
    assert set(HARDWARE) <= set(PRESETS)
    assert cli_main(["topologies"]) == 0
    out = capsys.readouterr().out.splitlines()
    for name in STUDY:
        (line,) = [ln for ln in out if ln.split()[0] == name]
        assert "[the study's platform model]" in line
    for name in HARDWARE:
        (line,) = [ln for ln in out if ln.split()[0] == name]
        assert "[hardware, as built]" in line
    with pytest.raises(TopologyError, match="unknown topology 'dgx-z'"):
        preset_label("dgx-z")


def test_dgx1_v100_ring_closed_form(capsys):
    """8 ranks on the double-link ring (placement study): 14 steps of 512 KiB at 50e9, each
    after the 0.6 us NVLink latency. Linear placement: 3 -> 4 and 7 -> 0 have no NVLink
    (two hops, 1.2 us) and 0 -> 1 is a single link: steps of 1.2 us + 512 KiB / 25e9."""
    for placement, lat, bw in (("study", 0.6e-6, 50e9), ("linear", 1.2e-6, 25e9)):
        code = cli_main(["run", "--topology", "dgx1-v100", "--nodes", "1", "--placement",
                         placement, "--algorithm", "ring", "--elements", "1M", "--dtype",
                         "int32", "--json", "-"])
        out = json.loads(capsys.readouterr().out)
        assert code == 0 and out["verified"] is True
        assert out["time_s"] == pytest.approx(14 * (lat + (1 << 19) / bw), rel=1e-12)


# ------------------------------------------------------ fixed graphs of the presets
def fingerprint(G):
    data = [sorted(G.graph.items()), [(n, sorted(d.items())) for n, d in G.nodes(data=True)],
            [(u, v, sorted(d.items())) for u, v, d in G.edges(data=True)]]
    return hashlib.sha256(json.dumps(data, default=str).encode()).hexdigest()[:16]


@pytest.mark.parametrize("make,digest", [
    # fixed digests of each preset's graph (nodes, edges, attributes in order)
    (lambda: topologies.abci(3), "36ccd837701de334"),
    (lambda: topologies.dgx1_cluster(7), "17ed8b26a62017dd"),
    (lambda: topologies.dgx2_cluster(4), "c5be261bade2c06b"),
    (lambda: topologies.fat_tree(40, hosts_per_leaf=8, oversubscription=2.0), "6ab43a271d658762"),
    (lambda: topologies.fat_tree(40, hosts_per_leaf=4, levels=3, leaves_per_pod=3),
     "31c982825cb7a20d"),
    (lambda: topologies.fat_tree(5, hosts_per_leaf=2, host="dgx-h100"), "a3014ea7ad4c4e0d"),
    (lambda: topologies.dgx_h100_cluster(33), "e4403a8f081c9d16"),
    (lambda: build("dgx1", 2), "088ce32255435d36"),
    (lambda: build("abci", 2), "d32e57872853450b"),
    (lambda: build("dgx2", 2), "7ad343bef18a9589"),
    (lambda: build("fat-tree", 16), "f6d94f6eddab0904"),
])
def test_study_presets_unchanged(make, digest):
    assert fingerprint(make()) == digest


OLD_H100 = {"nvswitch_latency": 5e-6, "pcie_bandwidth": 64e9, "pcie_latency": 7.5e-6,
            "nic_latency": 2.6e-8, "uplink_latency": 2.6e-8, "switch_latency": 9e-8}


def test_old_dgx_h100_figures_reachable_edge_for_edge():
    """The dgx-h100 figures pinned in experiments/configs/fig_e_dgx_h100.toml give the graph of
    ``topologies.dgx_h100_cluster``: same nodes and edges in the same order, same edge attributes."""
    from simcollective.sweeps import load_config

    fixed = load_config("experiments/configs/fig_e_dgx_h100.toml")["fixed"]
    opts = dict(kv.split("=") for kv in fixed["topology_opts"].split(","))
    assert {k: float(v) for k, v in opts.items()} == OLD_H100
    for nodes in (1, 2, 33):
        old, new = topologies.dgx_h100_cluster(nodes), build("dgx-h100", nodes, opts)
        assert list(old.nodes) == list(new.nodes)
        assert list(old.edges(data=True)) == list(new.edges(data=True))
    assert build("dgx-h100", 2).edges["n0/gpu0", "n0/nvswitch"]["latency"] == 0.3e-6


def test_old_dgx_h100_simulated_time_unchanged(capsys):
    from simcollective.simulate import RunConfig, run_allreduce

    base = dict(algorithm="ring-ring", elements=1 << 16, nodes=2, profile="smpi",
                dtype="int32", placement="study")
    old = run_allreduce(RunConfig(**base), graph=topologies.dgx_h100_cluster(2))
    new = run_allreduce(RunConfig(topology="dgx-h100", topology_opts=OLD_H100, **base))
    assert new.fields["time_s"] == old.fields["time_s"]


def test_dgx_h100_counts_and_rails():
    G = dgx_h100_cluster(2)
    assert kinds(G) == {"gpu": 16, "pcie_switch": 16, "nic": 16, "nvswitch": 2, "switch": 10}
    assert levels(G) == {"leaf": 8, "spine": 2}
    for n in range(2):
        for i in range(8):
            assert G.has_edge(f"n{n}/nic{i}", f"su0/leaf{i}")
            assert sorted(G.successors(f"n{n}/plx{i}")) == [f"n{n}/gpu{i}", f"n{n}/nic{i}"]
    assert G.graph["default_group_size"] == 8 and G.graph["gpus_per_node"] == 8
    big = dgx_h100_cluster(33)
    assert levels(big) == {"leaf": 16, "spine": 32}
    assert big.has_edge("n32/nic5", "su1/leaf5") and big.has_edge("n31/nic5", "su0/leaf5")
    leaves = [f"su0/leaf{i}" for i in range(8)]
    assert leaf_ratio(big, leaves) == 1.0


def test_overrides_reach_the_graph():
    G = abci(2, nvlink_bandwidth=25e9, ib_bandwidth=25e9, leaf_latency=1.3e-7, duplex="full")
    assert G.edges["n0/gpu0", "n0/gpu1"]["bandwidth"] == 5e10
    assert G.edges["n0/plx0", "r0/leaf0"] == {"bandwidth": 25e9, "latency": 2.6e-8,
                                              "link_type": "infiniband", "duplex": "full"}
    assert G.nodes["r0/leaf3"]["latency"] == 1.3e-7
    D = dgx1_cluster(13, nodes_per_leaf=4, uplink_bandwidth=3e11)
    assert levels(D) == {"leaf": 4, "root": 1}
    assert D.edges["leaf3", "root"]["bandwidth"] == 3e11


def test_h100_gpu_reaches_nic_through_its_pcie_switch():
    G = dgx_h100_cluster(2)
    assert nx.shortest_path(G, "n0/gpu2", "n0/nic2") == ["n0/gpu2", "n0/plx2", "n0/nic2"]
    assert nx.shortest_path_length(G, "n0/gpu2", "n1/gpu2") == 6  # same rail: one leaf


def test_gpus_record_every_nic_they_drive_up_to_four():
    # AWS p5: 32 EFA for 8 GPUs, 4 per GPU on its own PCIe switch; OCI BM.GPU.H100.8: 16, 2 per GPU
    G = dgx_h100(2, nics_per_node=32)
    assert G.nodes["n1/gpu3"]["nics"] == "n1/nic12,n1/nic13,n1/nic14,n1/nic15"
    assert G.nodes["n1/gpu3"]["nic"] == "n1/nic12"
    assert sorted(G.successors("n0/plx3")) == ["n0/gpu3", "n0/nic12", "n0/nic13", "n0/nic14", "n0/nic15"]
    H = dgx_a100(1, nics_per_node=16)       # 2 GPUs per complex, each its own switch with its 2 NICs
    assert H.nodes["n0/gpu3"]["nics"] == "n0/nic6,n0/nic7"
    # a GPU's NICs are reached over its own PCIe switch only
    for g in gpus(G):
        for nic in G.nodes[g]["nics"].split(","):
            path = nx.shortest_path(G, g, nic)
            assert len(path) == 3 and G.nodes[path[1]]["kind"] == "pcie_switch"
    with pytest.raises(TopologyError, match="from 1 to 32 .*at most 4 per GPU.*got 33"):
        dgx_h100(1, nics_per_node=33)
