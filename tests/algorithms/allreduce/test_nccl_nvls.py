"""NVLSTree beyond two nodes (``algorithms/allreduce/nccl_nvls.py``): NVLS inside every node,
NCCL's double binary tree across the nodes; verified runs, message counts, tree shapes, closed
forms, NCCL's pick, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

import topologies
from simcollective.nccl import hooks, model, plans, protocols, search
from simcollective.nccl.fill import nvls_fill
from simcollective.profiles import load_profile
from simcollective.simulate import expected_messages, resolve, run_allreduce, RunConfig
from tests.conftest import machine, run_cli


MiB = 1 << 20


def run(algorithm="nccl-nvls", topology="dgx-h100", nodes=4, elements=4099, dtype="int32", verify="full",
        topology_opts=None, **options):
    cfg = RunConfig(topology=topology, nodes=nodes, algorithm=algorithm, elements=elements, dtype=dtype,
                    profile="nccl", verify=verify, topology_opts=topology_opts or {},
                    options={k: v for k, v in options.items() if v is not None})
    return cfg, run_allreduce(cfg)


# -- real data, verified --------------------------------------------------------------------------
@pytest.mark.parametrize("nodes", [3, 4])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("elements,channels", [(100_003, None), (4099, 3), (37, 16), (1, 2)])
def test_nvlstree_verifies_on_3_and_4_nodes(nodes, dtype, elements, channels):
    # odd sizes, an odd channel count (trees of unequal share), empty ranges (n < C x ppn)
    cfg, rep = run(nodes=nodes, elements=elements, dtype=dtype, channels=channels)
    assert rep["verified"] and rep["mode"] == "full"
    if dtype == "int32":
        assert "exact" in rep["verification"]
    assert rep["ranks"] == 8 * nodes
    assert rep["algorithm_chosen"] == "nccl-nvls" and rep["nccl_algorithm"] == "NVLSTree"
    assert "nvlstree" in rep["phases"]
    # the registry's message count is exact
    assert expected_messages(resolve(cfg)) == rep["messages"]


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 5000), channels=st.integers(1, 17), nodes=st.integers(3, 6))
def test_any_size_channels_and_node_count_is_exact(n, channels, nodes):
    # odd node counts (shifted second tree), odd channel counts, empty blocks (n < C x ppn)
    cfg, rep = run(nodes=nodes, elements=n, channels=channels)
    assert rep["verified"] and "exact" in rep["verification"]
    assert expected_messages(resolve(cfg)) == rep["messages"]


@pytest.mark.parametrize("topology,nodes,opts", [
    ("dgx-b200", 3, {}),
    ("gb200-nvl72", 6, {"hosts_per_domain": 2}),   # 3 NVLink domains of 8 GPUs = 3 NCCL nodes
])
def test_nvlstree_verifies_on_the_other_nvswitch_presets(topology, nodes, opts):
    cfg, rep = run(topology=topology, nodes=nodes, elements=30011, topology_opts=opts)
    assert rep["verified"] and "exact" in rep["verification"]
    assert rep["nccl_algorithm"] == "NVLSTree"
    assert expected_messages(resolve(cfg)) == rep["messages"]


def test_messages_count_by_hand():
    # 4 nodes x 8, 16 channels, 1 GiB: chunks of 64 KiB per channel and head -> 128, merged to 16;
    # per tree and chunk: 32 GPUs x 2 x 7 NVLS messages + 3 tree edges x 8 heads x (up + down)
    # x the tree's 8 channels (one network connection each)
    m = machine("dgx-h100", 4)
    assert plans.wide_nvlstree_pieces(1 << 30, 16, 8, 4) == protocols.MAX_NVLSTREE_PIECES == 16
    assert hooks.nvlstree_messages(m, 1 << 30, 16) == 2 * 16 * (32 * 2 * 7 + 3 * 8 * 2 * 8)
    assert plans.wide_nvlstree_pieces(64 * MiB, 16, 8, 4) == 8      # 64 MiB / (16 x 8 x 64 KiB)
    assert plans.wide_nvlstree_pieces(64 * MiB, 16, 8, 3) == 4      # 128 KiB chunks below 4 nodes
    assert plans.wide_nvlstree_pieces(100, 16, 8, 8) == 1


# -- the trees: NCCL's double binary tree over nodes, head h to head h --------------------------
def test_tree_shape_on_4_nodes_is_nccls_double_binary_tree():
    # ncclGetBtree(4): 0 -> 2 -> {1, 3}; ncclGetDtree mirrors it (v -> 3 - v): 3 -> 1 -> {2, 0}
    m = machine("dgx-h100", 4)
    node_of = {r: v for v, ranks in enumerate(m.nodes) for r in ranks}
    want = {0: {0: (None, [2]), 2: (0, [1, 3]), 1: (2, []), 3: (2, [])},
            1: {3: (None, [1]), 1: (3, [2, 0]), 2: (1, []), 0: (1, [])}}
    for channel in range(4):
        links = search.nvlstree_links(m, channel)
        assert sorted(links) == list(range(32))
        for r, (parent, kids) in links.items():
            v, h = node_of[r], m.nodes[node_of[r]].index(r)
            wp, wk = want[channel % 2][v]
            assert parent == (None if wp is None else m.nodes[wp][h])     # same local GPU: same rail
            assert kids == [m.nodes[k][h] for k in wk]


def test_tree_shape_on_3_nodes_is_shifted_not_mirrored():
    # odd node count: tree 0 = ncclGetBtree(3) = 0 -> 2 -> 1; tree 1 shifts it by one: 1 -> 0 -> 2
    m = machine("dgx-h100", 3)
    t0, t1 = search.nvlstree_links(m, 0), search.nvlstree_links(m, 1)
    n = m.nodes
    for h in range(8):
        assert t0[n[0][h]] == (None, [n[2][h]]) and t0[n[2][h]] == (n[0][h], [n[1][h]])
        assert t0[n[1][h]] == (n[2][h], [])
        assert t1[n[1][h]] == (None, [n[0][h]]) and t1[n[0][h]] == (n[1][h], [n[2][h]])
        assert t1[n[2][h]] == (n[0][h], [])


def test_every_node_is_interior_in_at_most_one_tree_on_8_nodes():
    m = machine("dgx-h100", 8)
    interior = [{v for v in range(8) if search.nvlstree_links(m, c)[m.nodes[v][0]][1]} for c in (0, 1)]
    assert not interior[0] & interior[1]
    assert search.trees_of(5) == [(0, [0, 2, 4]), (1, [1, 3])] and search.trees_of(1) == [(0, [0])]


def test_plan_carries_one_tree_per_channel():
    g = topologies.build("dgx-h100", 4, {})
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    plan = plans.make_plan(g, gpus, load_profile("nccl"), "nvls", 64 * MiB)
    assert plan.algorithm == "nvlstree" and plan.channels == 16 and len(plan.trees) == 16
    m = plan.machine
    assert plan.trees[5] == search.nvlstree_links(m, 1) != plan.trees[4] == search.nvlstree_links(m, 0)
    # a tree's links are built once and shared by the channels that run it (16,384 ranks:
    # 16 sets of links would cost 0.4 s more)
    assert all(plan.trees[c] is plan.trees[c % 2] for c in range(16))


# -- time -------------------------------------------------------------------------------------------
R_NVL = 450e9 * 0.82        # an H100's NVSwitch link at the nccl profile's usable fraction

R_NET = 50e9 * 0.982        # a 400G NIC at the nccl profile's usable fraction (below PCIe: 63e9 x 0.81)

L_4 = (25.0 + 2 * 2 * 20.9) * 1e-6   # NCCL's NVLSTree latency on 4 nodes: intra 25 us + 2 log2(4) x 20.9 us


def test_one_channel_one_chunk_time_is_the_closed_form():
    # 4 x 8 H100, one channel (tree 0: 0 -> 2 -> {1, 3}), 512 KiB per rank: blocks of 64 KiB = one
    # chunk. Every GPU sends its 7 other blocks to their heads at once (7 equal flows on its
    # NVSwitch link, NVLS wire size 64 KiB x 9/14/0.8); node 2 receives from nodes 1 and 3 at
    # once (2 flows on its NIC), sends up, node 0 sends down, node 2 sends to 1 and 3 at once,
    # then nodes 1 and 3 multicast: 6 chunk times on the network, 2 NVLS stages.
    cfg, rep = run(elements=131072, channels=1)
    assert rep["channels"] == 1 and rep["messages"] == 32 * 14 + 3 * 8 * 2
    wire = math.ceil(65536 * 9 / 14 / 0.8)
    flows = 2 * 7 * wire / R_NVL + 6 * 65536 / R_NET
    # plus the rows of the two NVLS passes that the flows do not pipeline (nvls_fill):
    # 512 KiB per rank on 1 channel x 8 heads is NCCL's 32 KiB chunk, a 256 KiB row: 2 x 1/2 of the flows
    fill = nvls_fill(4 * 131072, 1, 8, 4, "nvlstree")
    assert fill == pytest.approx(1.0)
    assert rep["time_s"] == pytest.approx(L_4 + flows * (1 + fill), rel=1e-9)
    assert rep["phases"]["latency"] == pytest.approx(L_4, rel=1e-12)
    assert rep["phases"]["pipeline-fill"] == pytest.approx(flows * fill, rel=1e-9)


def test_lone_large_call_runs_at_the_busiest_nic_rate():
    # 1 GiB on 4 x 8 H100, 16 channels (8 per tree): node 2 is interior in tree 0 (parent and 2
    # children: 3 messages out per chunk) and a leaf in tree 1 (1 out): each NIC of it sends
    # (3 + 1) x S / (2 x 8) = 2 S / 8 bytes, which bounds the time from below; the pipeline of
    # K = 16 chunks per tree adds at most 2 chunk times on top.
    S = 1 << 30
    _, rep = run(elements=S // 4, dtype="float32", verify="symbolic")
    assert rep["verified"] and rep["channels"] == 16
    bound = L_4 + 2 * S / 8 / R_NET
    K = plans.wide_nvlstree_pieces(S, 16, 8, 4)
    assert bound < rep["time_s"] < L_4 + (2 * S / 8 / R_NET) * (1 + 2 / K)
    # on the network: 2 trees x 3 edges x 8 heads x (up + down) x S / 16, over 2 cables (NIC-leaf-NIC)
    by_link = rep.to_json()["bytes_by_link_type"]
    assert by_link["infiniband"] == 2 * (2 * 3 * 8 * 2) * (S // 16)


# -- nccl: NCCL's choice runs -------------------------------------------------------------------------
def test_nccl_runs_nvlstree_when_nccls_model_picks_it(capsys):
    # 4 x 8 H100 at 16 MiB: NCCL's model picks NVLSTree/Simple; nccl runs it
    cfg, rep = run(algorithm="nccl", elements=4 * MiB, dtype="float32", verify="symbolic")
    f = rep.to_json()
    assert f["nccl_model_choice"] == {"algorithm": "nvlstree", "protocol": "simple", "channels": 16}
    assert (f["algorithm_chosen"], f["nccl_algorithm"], f["protocol"], f["channels"]) == \
        ("nccl-nvls", "NVLSTree", "simple", 16)
    assert f["verified"] and "nvlstree" in f["phases"]
    m = machine("dgx-h100", 4)
    assert f["nccl_predicted_us"] == pytest.approx(model.predict(m, model.graphs_of(m), "nvlstree", "simple",
                                                                 16 * MiB))
    code, out, _ = run_cli(capsys, "run", "--topology", "dgx-h100", "--nodes", "8", "--algorithm", "nccl",
                       "--elements", "4M", "--profile", "nccl", "--verify", "symbolic")
    assert code == 0 and "nccl-nvls, protocol simple, 16 channel(s)" in out
    assert "NCCL's own pick here" not in out       # what NCCL picks is what ran


def test_nccl_keeps_ring_and_tree_where_nccl_does():
    # 4 x 8 H100: tree/LL128 at 1 MiB and ring/Simple at 4 GiB, as NCCL's model
    for elements, want in ((MiB // 4, "nccl-tree"), (1 << 30, "nccl-ring")):
        m = machine("dgx-h100", 4)
        algo = model.choose(m, elements * 4)[0]
        assert f"nccl-{algo}" == want
    _, rep = run(algorithm="nccl", elements=MiB // 4, dtype="float32")
    assert rep["algorithm_chosen"] == "nccl-tree" and rep["verified"]


# -- bad input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--topology", "dgx-h100", "--nodes", "4", "--algorithm", "nccl-nvls", "--protocol", "ll"], "--protocol ll"),
    (["--topology", "dgx-h100", "--nodes", "3", "--algorithm", "nccl-nvls", "--protocol", "ll128"],
     "--protocol ll128"),
    (["--topology", "dgx-h100", "--nodes", "4", "--algorithm", "nccl-nvls", "--channels", "33"], "--channels 33"),
    (["--topology", "dgx-h100", "--nodes", "4", "--algorithm", "nccl-nvls", "--channels", "0"], "--channels 0"),
    (["--topology", "dgx-a100", "--nodes", "4", "--algorithm", "nccl-nvls"], "NVLink SHARP"),
    (["--topology", "dgx-h100", "--nodes", "4", "--algorithm", "nccl", "--protocol", "ll256"], "--protocol 'll256'"),
])
def test_bad_input_is_a_one_line_error(capsys, argv, needle):
    code, _, err = run_cli(capsys, "run", *argv, "--elements", "1024", "--profile", "nccl")
    assert code == 2
    assert needle in err and err.count("\n") == 1
