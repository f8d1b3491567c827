"""Multi-NIC GPUs and shared NICs: the channels' NICs (simcollective.nccl.nics), what NCCL's model
counts of them, and what the simulated NCCL ring gets from them."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topologies
from simcollective.nccl import model
from simcollective.nccl.nics import network_note, ring_vias, tree_vias
from simcollective.nccl.search import ring_orders, tree_links
from simcollective.simulate import RunConfig, run
from tests.conftest import machine, run_cli

MiB = 1 << 20
NIC = 5e9             # a NIC slow enough that it, not PCIe or NVLink, bounds every cross-node flow
IB = 0.982            # the nccl profile's usable share of an InfiniBand cable (link_efficiency)


def ring_phase(nics: int, nbytes: int = 16 * MiB, channels: int = 16) -> dict:
    """nccl-ring allreduce (Simple, ``channels`` channels) on 2 x dgx-h100 with ``nics`` NICs of
    NIC bytes/s per node: the run's result."""
    cfg = RunConfig(topology="dgx-h100", nodes=2, algorithm="nccl-ring", elements=nbytes // 4, dtype="float32",
                    profile="nccl", topology_opts={"nics_per_node": nics, "nic_bandwidth": NIC},
                    options={"protocol": "simple", "channels": channels})
    return run(cfg)


def per_channel_time(rate: float, nbytes: int = 16 * MiB, channels: int = 16, P: int = 16) -> float:
    """Reduce-scatter of a ring allreduce: P - 1 steps of a channel's range / P, each at ``rate``."""
    return (P - 1) / P * (nbytes / channels) / rate


def test_two_nics_per_gpu_give_a_ring_twice_the_cross_node_bandwidth_of_one():
    # 16 channels on 8 GPUs: each GPU carries 2 channels out of its node. With 1 NIC per GPU both
    # share it (NIC / 2 each); with 2 NICs per GPU each channel has its own (NIC each)
    one, two = ring_phase(8), ring_phase(16)
    assert one["phases"]["reduce-scatter"] == pytest.approx(per_channel_time(IB * NIC / 2), rel=1e-9)
    assert two["phases"]["reduce-scatter"] == pytest.approx(per_channel_time(IB * NIC), rel=1e-9)
    assert two["phases"]["allgather"] == pytest.approx(two["phases"]["reduce-scatter"], rel=1e-9)
    assert one["verified"] and two["verified"]


def test_a_nic_shared_by_two_gpus_halves_what_each_gets():
    # 4 NICs for 8 GPUs: GPUs 2j and 2j + 1 share NIC j, 4 channels on it (NIC / 4 each)
    shared = ring_phase(4)
    assert shared["phases"]["reduce-scatter"] == pytest.approx(per_channel_time(IB * NIC / 4), rel=1e-9)
    own = {d["link"]: d["bytes"] for d in shared["links"]}
    assert own["n0/nic0->su0/leaf0"] == own["n0/nic3->su0/leaf3"] > 0


@settings(max_examples=6, deadline=None)
@given(nics=st.sampled_from([1, 2, 4, 8, 16, 32]), channels=st.integers(1, 8))
def test_cross_node_busbw_never_exceeds_the_nodes_nic_bandwidth(nics, channels):
    res = ring_phase(nics, nbytes=2 * MiB, channels=channels)
    assert res["busbw"] <= nics * NIC * (1 + 1e-9)


def test_channels_spread_over_a_gpus_nics_round_robin_and_rail_aligned():
    G = topologies.build("dgx-h100", 2, {"nics_per_node": 32})
    m = machine("dgx-h100", 2, {"nics_per_node": 32})
    vias = ring_vias(G, m, ring_orders(m, 32))
    out = [v[0] for per in vias for v in per.values() if v[0].startswith("n0/")]
    # every NIC of node 0 carries exactly one of the 32 channels out, each to the same rail
    assert sorted(out) == sorted(f"n0/nic{j}" for j in range(32))
    assert all(a.split("/")[1] == b.split("/")[1] for per in vias for a, b in per.values())
    # one NIC per GPU (8): the channels of a GPU share its NIC; no NICs: no vias
    m8 = machine("dgx-h100", 2)
    vias8 = ring_vias(topologies.build("dgx-h100", 2), m8, ring_orders(m8, 16))
    assert {v[0] for per in vias8 for r, v in per.items() if r == 0} == {"n0/nic0"}


def test_tree_channels_take_one_nic_each_round_robin():
    G = topologies.build("dgx-h100", 4, {"nics_per_node": 16})
    m = machine("dgx-h100", 4, {"nics_per_node": 16})
    vias = tree_vias(G, m, [tree_links(m, c) for c in range(16)])
    # channel c's head on node 0 is GPU c % 8; it uses NIC c // 8 of its two for every edge out
    for c, per in enumerate(vias):
        head = c % 8
        assert {v[0] for v in per[head].values()} == {f"n0/nic{2 * head + c // 8}"}
        assert all(a.split("/")[1] == b.split("/")[1] for peers in per.values() for a, b in peers.values())


@pytest.mark.parametrize("opts, rings, speed, comm", [
    ({}, 8, 48, 16),                                                   # one 400G NIC per GPU
    ({"nics_per_node": 16}, 8, 48, 16),                                # two 400G behind one PCIe Gen5 link
    ({"nics_per_node": 16, "nic_bandwidth": 25e9}, 16, 24, 32),        # OCI BM.GPU.H100.8: 16 x 200G
    ({"nics_per_node": 32, "nic_bandwidth": 12.5e9}, 32, 12, 64),      # AWS p5: 32 x 100G
    ({"nics_per_node": 4}, 4, 24, 16),                                 # 2 GPUs per 400G NIC (dup to 8 x 24)
])
def test_nccl_model_counts_the_rings_nics_and_pcie_links_carry(opts, rings, speed, comm):
    m = machine("dgx-h100", 2, opts)
    assert m.nics == rings
    g = model.graphs_of(m)["ring"]
    assert (g.bw_inter, g.comm_channels) == (speed, comm)


def test_nvlstree_heads_sharing_nics_cross_the_network_at_their_share():
    own = model.graphs_of(machine("dgx-h100", 4))["nvlstree"]
    shared = model.graphs_of(machine("dgx-h100", 4, {"nics_per_node": 4}))["nvlstree"]
    assert own.bw_inter == 48            # one NIC per head: no faster than its 400G NIC path (48 GB/s)
    assert shared.bw_inter == 24         # 8 heads on 4 x 48 GB/s NIC rings: 24 each


def test_cli_run_with_16_nics_uses_both_nics_of_every_gpu(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, text, err = run_cli(capsys, "run", "--topology", "dgx-h100", "--nodes", "2", "--topology-opt",
                              "nics_per_node=16", "--algorithm", "nccl-ring", "--bytes", "4M", "--profile", "nccl",
                              "--json", out)
    assert code == 0, err
    assert "network      16 NICs per node, 2 NICs per GPU; NCCL's model: 8 network rings at 48 GB/s " \
           "(a GPU's PCIe link, not its NICs, bounds its rings)" in text
    links = {d["link"]: d["bytes"] for d in json.loads(out.read_text())["links"]}
    sent = [links[f"n0/nic{j}->su0/leaf{j}"] for j in range(16)]
    assert min(sent) == max(sent) > 0     # 16 channels: one per NIC, all equal


def _note(name: str, nodes: int, algorithm: str, opts=None) -> str:
    g = topologies.build(name, nodes, dict(opts or {}))
    m = machine(name, nodes, opts)
    return network_note(g, m, model.graphs_of(m), algorithm)


@pytest.mark.parametrize("name, nodes, algorithm, opts, line", [
    ("aws-p5", 2, "nvlstree", None, "32 efa-v2 NICs per node, 4 NICs per GPU, 75 us advertised per network hop; "
                                    "NCCL's model: NVLSTree: 8 heads cross the network at 48 GB/s each"),
    ("aws-p3dn", 2, "ring", None, "1 efa-v1 NIC per node, 8 GPUs per NIC, 150 us advertised per network hop; "
                                  "NCCL's model: 1 network ring at 12 GB/s"),
    # another transport brings its line rate: HDR's 200 Gb/s NICs, rings at 24 GB/s
    ("aws-p4d", 2, "ring", {"transport": "ib-hdr"}, "4 ib-hdr NICs per node, 2 GPUs per NIC; "
                                                    "NCCL's model: 4 network rings at 24 GB/s"),
    ("gb300-nvl72", 36, "nvlstree", None, "72 ib-xdr NICs per NVLink domain (18 hosts), 1 NIC per GPU; "
                                          "NCCL's model: NVLSTree: 32 heads cross the network at 30 GB/s each"),
    ("dgx-h100", 2, "ring", {"nics_per_node": 16}, "16 NICs per node, 2 NICs per GPU; NCCL's model: 8 network "
                                                   "rings at 48 GB/s (a GPU's PCIe link, not its NICs, bounds its rings)"),
])
def test_the_network_line_names_the_transport_its_latency_and_the_nic_layout(name, nodes, algorithm, opts, line):
    """A multi-node NCCL run's ``network`` line names the NICs' transport (a rented machine's),
    its advertised latency when it has one, and counts NICs per NCCL node: a server, or an NVLink
    domain of several hosts (an NVL72 rack)."""
    assert _note(name, nodes, algorithm, opts) == line


@functools.cache
def nvls_run(nics: int, nodes: int = 2, nic_bandwidth: float = NIC, nbytes: int = 16 * MiB) -> tuple:
    """nccl-nvls allreduce (NVLSTree, 16 channels) on ``nodes`` x dgx-h100 with ``nics`` NICs of
    ``nic_bandwidth`` bytes/s per node: the run's result and, per node, the bytes out of each NIC
    (one run per set of arguments, read by every test that asks for it: the tests only read it)."""
    cfg = RunConfig(topology="dgx-h100", nodes=nodes, algorithm="nccl-nvls", elements=nbytes // 4, dtype="float32",
                    profile="nccl", topology_opts={"nics_per_node": nics, "nic_bandwidth": nic_bandwidth},
                    options={"channels": 16})
    res = run(cfg)
    links = {d["link"]: d["bytes"] for d in res["links"]}
    return res, [[links.get(f"n{s}/nic{j}->su0/leaf{j}", 0) for j in range(nics)] for s in range(nodes)]


def test_nvlstree_heads_spread_their_channels_over_both_nics():
    # 2 nodes: head h sends its block (S / 8) to head h of the other node. One NIC per GPU:
    # all of it on that NIC; two: 8 of the 16 channels on each, S / 16 per NIC
    S = 16 * MiB
    (one, out_one), (two, out_two) = nvls_run(8), nvls_run(16)
    assert one["verified"] and two["verified"]
    assert all(b == S // 8 for per in out_one for b in per)
    assert all(b == S // 16 for per in out_two for b in per)
    # the network stage bounds every tick: the same NVLink ends, the network time halved
    net_one, net_two = (S / 8) / (IB * NIC), (S / 8) / (2 * IB * NIC)
    ends = one["phases"]["nvlstree"] - net_one
    assert 0 < ends < 0.02 * net_one
    assert two["phases"]["nvlstree"] == pytest.approx(net_two + ends, rel=1e-9)


def test_wide_nvlstree_spreads_both_trees_over_every_nic():
    # 3 nodes, two trees (channel c on tree c % 2): counted tree by tree, each tree's channels
    # alternate between a head's two NICs, so every NIC of a node carries the same bytes, half
    # of what the one NIC of a GPU carries, and the network stage takes about half the time
    (one, out_one), (two, out_two) = nvls_run(8, nodes=3), nvls_run(16, nodes=3)
    assert one["verified"] and two["verified"]
    for per_one, per_two in zip(out_one, out_two):
        assert len(set(per_one)) == 1 and set(per_two) == {per_one[0] // 2}
    assert two["phases"]["nvlstree"] < 0.55 * one["phases"]["nvlstree"]


def test_nccl_model_and_simulation_count_a_heads_nics_together():
    # a head with two NICs of B / 2 crosses the network as one with a NIC of B, in NCCL's
    # model (the same NVLSTree figures and prediction) and in the simulation (the same time)
    whole, halves = machine("dgx-h100", 2, {"nic_bandwidth": NIC}), \
        machine("dgx-h100", 2, {"nics_per_node": 16, "nic_bandwidth": NIC / 2})
    g_whole, g_halves = model.graphs_of(whole)["nvlstree"], model.graphs_of(halves)["nvlstree"]
    assert g_whole == g_halves
    assert model.predict(whole, model.graphs_of(whole), "nvlstree", "simple", 16 * MiB) == \
        model.predict(halves, model.graphs_of(halves), "nvlstree", "simple", 16 * MiB)
    (one, _), (two, _) = nvls_run(8), nvls_run(16, nic_bandwidth=NIC / 2)
    assert two["phases"]["nvlstree"] == pytest.approx(one["phases"]["nvlstree"], rel=1e-9)
