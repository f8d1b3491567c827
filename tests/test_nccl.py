"""NCCL's model, search, algorithms and the compare command."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topologies
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.nccl import model, search
from simcollective.patterns.trees import btree, dtree
from simcollective.validation.nccltests import parse_log
from simcollective.profiles import load_profile
from simcollective.simulate import RunConfig, run_allreduce

REF = Path(__file__).parents[1] / "experiments" / "nccl-tests"
MiB = 1 << 20


def machine(name, nodes=1):
    g = topologies.build(name, nodes, {})
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    return model.machine_of(g, gpus)


# -- NCCL's search: channels as NCCL's topology search derives them ---------------------------
@pytest.mark.parametrize("name,nodes,ring,comm", [
    ("dgx1-v100", 1, (6, 20.0), 12),
    ("dgx-a100", 1, (12, 20.0), 24),
    ("dgx-h100", 1, (12, 30.0), 24),
    ("dgx-h100", 2, (8, 48.0), 16),
])
def test_channel_counts_as_nccl_derives_them(name, nodes, ring, comm):
    g = model.graphs_of(machine(name, nodes))["ring"]
    assert (g.nchannels, g.bw_intra) == ring
    assert g.comm_channels == comm


def test_nvls_graph_on_8xh100():
    m = machine("dgx-h100")
    assert m.nvls
    g = model.graphs_of(m)["nvls"]
    assert (g.nchannels, g.bw_intra, g.bw_inter, g.comm_channels) == (8, 40.0, 60.0, 16)
    assert not machine("dgx-a100").nvls and not machine("dgx1-v100").nvls


def test_dgx1_rings_are_nvlink_hamiltonian_cycles_within_capacity():
    m = machine("dgx1-v100")
    nrings, speed, rings = search.ring_search(m)
    assert (nrings, speed) == (6, 20.0)
    used: dict = {}
    for ring in rings:
        assert sorted(ring) == list(range(8))
        for a, b in zip(ring, ring[1:] + ring[:1]):
            assert (a, b) in m.direct          # every hop is a direct NVLink
            used[(a, b)] = used.get((a, b), 0) + speed
    assert all(used[e] <= m.direct[e] + 1e-9 for e in used)


def test_rings_are_rail_aligned_across_nodes():
    m = machine("dgx-h100", 4)
    g = topologies.build("dgx-h100", 4, {})
    for order in search.ring_orders(m, 16):
        assert sorted(order) == list(range(32))
        for a, b in zip(order, order[1:] + order[:1]):
            if a // 8 != b // 8:   # a network hop: same local GPU, hence the same NIC and rail
                assert g.nodes[m.gpus[a]]["local"] == g.nodes[m.gpus[b]]["local"]


@pytest.mark.parametrize("n", range(1, 18))
def test_double_binary_trees_are_trees(n):
    for make in (btree, dtree):
        roots = [v for v in range(n) if make(n, v)[0] is None]
        assert len(roots) == 1
        for v in range(n):
            p, kids = make(n, v)
            assert len(kids) <= 2
            for k in kids:
                assert make(n, k)[0] == v
            if p is not None:
                assert v in make(n, p)[1]
    if n % 2 == 0 and n > 2:  # the mirror: tree 1's leaves are tree 0's interior nodes
        leaves0 = {v for v in range(n) if not btree(n, v)[1]}
        leaves1 = {v for v in range(n) if not dtree(n, v)[1]}
        assert leaves0 == {n - 1 - v for v in leaves1}


# -- NCCL's cost model: the worked examples and NCCL's choices (NCCL 2.30 tuning model) -------------
def test_cost_model_8xh100_figures():
    m = machine("dgx-h100")
    gr = model.graphs_of(m)
    expect = {("ring", "ll"): (15.0, 80.6), ("ring", "ll128"): (40.6, 189.3), ("ring", "simple"): (56.0, 205.7),
              ("tree", "ll"): (15.2, 43.6), ("tree", "ll128"): (31.5, 128.8), ("tree", "simple"): (64.4, 165.6),
              ("nvls", "simple"): (25.0, 272.0)}
    for (a, p), (lat, bw) in expect.items():
        assert model.latency(m, gr, a, p) == pytest.approx(lat, abs=0.05)
        assert model.bandwidth(m, gr, a, p) == pytest.approx(bw, abs=0.05)


def test_nccl_picks_as_nccl_on_8xh100():
    # observed with NCCL_DEBUG_SUBSYS=TUNING (NVIDIA/nccl-tests#309): 8B~1MB RING/LL, 2MB~16GB NVLS/SIMPLE
    m = machine("dgx-h100")
    for e in range(3, 35):
        algo, proto, _, _ = model.choose(m, 1 << e)
        assert (algo, proto) == (("ring", "ll") if (1 << e) <= MiB else ("nvls", "simple")), e


def test_nccl_picks_as_nccl_on_8xa100():
    # NCCL's choices: Ring LL <= 2 MiB, Ring LL128 4-16 MiB, Ring Simple >= 32 MiB
    m = machine("dgx-a100")
    for e in range(3, 34):
        size = 1 << e
        want = "ll" if size <= 2 * MiB else "ll128" if size <= 16 * MiB else "simple"
        assert model.choose(m, size)[:2] == ("ring", want), e


def test_two_node_h100_small_messages_pick_the_tree():
    m = machine("dgx-h100", 2)
    algo, proto, ch, t = model.choose(m, 8)
    assert (algo, proto, ch) == ("tree", "ll", 1)
    assert t == pytest.approx(25.2, abs=0.01)   # NCCL's model: Tree LL L = 25.2 us


def test_channels_shrink_for_small_calls():
    m = machine("dgx-h100")
    gr = model.graphs_of(m)
    assert model.channels_for(m, gr, "ring", "simple", 768 * 1024) == 24   # 24 x 512 x 64 B
    assert model.channels_for(m, gr, "ring", "simple", 768 * 1024 - 1) == 23
    assert model.channels_for(m, gr, "ring", "ll", 8) == 1


# -- the algorithms on real data ------------------------------------------------------------------------
def run(algorithm, topology="dgx-h100", nodes=1, elements=1001, dtype="int32", profile="nccl", **options):
    cfg = RunConfig(topology=topology, nodes=nodes, algorithm=algorithm, elements=elements, dtype=dtype,
                    profile=profile, options=options)
    return run_allreduce(cfg)


@pytest.mark.parametrize("algorithm,protocol", [
    ("nccl-ring", "simple"), ("nccl-ring", "ll"), ("nccl-ring", "ll128"), ("nccl-tree", "simple"),
    ("nccl-tree", "ll"), ("nccl-nvls", "simple"), ("nccl", None)])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_every_nccl_run_verifies_on_one_node(algorithm, protocol, dtype):
    opts = {"protocol": protocol} if protocol else {}
    rep = run(algorithm, elements=12347, dtype=dtype, channels=5, **opts) if algorithm != "nccl" else \
        run(algorithm, elements=12347, dtype=dtype)
    assert rep["verified"]
    assert rep["mode"] == "full"
    if dtype == "int32":
        assert "exact" in rep["verification"]


@pytest.mark.parametrize("algorithm", ["nccl-ring", "nccl-tree", "nccl-nvls", "nccl"])
def test_nccl_runs_verify_across_nodes(algorithm):
    rep = run(algorithm, nodes=2, elements=4099)
    assert rep["verified"] and "exact" in rep["verification"]
    assert rep["ranks"] == 16


def test_nccl_ring_verifies_on_the_dgx1_mesh():
    rep = run("nccl-ring", topology="dgx1-v100", elements=3001, channels=12)
    assert rep["verified"] and "exact" in rep["verification"]
    assert set(rep["bytes_by_link_type"]) == {"nvlink"}   # the rings use NVLink only
    assert run("nccl-ring", topology="dgx1-v100", elements=2**22)["channels"] == 12


def test_nccl_reports_its_choice_in_json():
    rep = run("nccl", elements=2 * MiB // 4)
    f = rep.to_json()
    assert (f["algorithm_chosen"], f["protocol"], f["channels"]) == ("nccl-nvls", "simple", 16)
    assert f["nccl_model_choice"] == {"algorithm": "nvls", "protocol": "simple", "channels": 16}


def test_protocol_is_wire_inflation():
    n = 24 * 4096
    simple = run("nccl-ring", elements=n, protocol="simple", channels=4)
    ll = run("nccl-ring", elements=n, protocol="ll", channels=4)
    ll128 = run("nccl-ring", elements=n, protocol="ll128", channels=4)
    assert ll["message_bytes"] == 2 * simple["message_bytes"]
    assert ll128["message_bytes"] == pytest.approx(simple["message_bytes"] * 128 / 120, abs=simple["messages"])


def test_nvls_time_closed_form():
    # each GPU link carries (P+1)/P x S each way at 0.82 x nvls_efficiency of its line rate;
    # 25 us NVLS latency; plus one row of pipeline fill: 64 MiB < 1 GiB = 64 x 16 x 8 x 128 KiB, so
    # NCCL's chunk is 64 KiB and a row of all channels is 16 x 8 x 64 KiB = 8 MiB = 1/8 of the call
    g = topologies.build("dgx-h100", 1, {})
    cap = g.edges["n0/gpu0", next(v for v in g.successors("n0/gpu0")
                                  if g.nodes[v].get("kind") == "nvswitch")]["bandwidth"]
    n, P = 2**24, 8
    rep = run("nccl-nvls", elements=n, dtype="float32", channels=16)
    S = 4 * n
    eff = load_profile("nccl").nccl.nvls_efficiency
    expect = 25e-6 + S * (P + 1) / P / (cap * 0.82 * eff) * (1 + 1 / 8)
    assert rep["time_s"] == pytest.approx(expect, rel=1e-3)
    assert rep["phases"]["pipeline-fill"] == pytest.approx(S * (P + 1) / P / (cap * 0.82 * eff) / 8, rel=1e-3)


def test_ring_latency_is_nccls():
    rep = run("nccl-ring", elements=2, protocol="ll", channels=1)
    assert rep["phases"]["latency"] == pytest.approx(15.0e-6)   # 6.6 + 14 x 0.6 us



def test_multinode_ring_simple_latency_has_nccls_plateau_factor():
    # 2 x 8 H100, ring/Simple, 16 channels: NCCL's L = 8.4 + 28 x 3.4 (NVLink steps) + 2 x 14 (network
    # steps) = 131.6 us, counted 1.4 times on SM90 once every rank of every channel has >= 64 B
    # (tuning.cc "plateau effect of ring"); the simulated call spends the same latency
    m = machine("dgx-h100", 2)
    gr = model.graphs_of(m)
    assert model.latency(m, gr, "ring", "simple") == pytest.approx(131.6)
    assert model.ring_plateau_factor(m, gr, "ring", "simple", 16 * 16 * 64) == 1.4
    assert model.ring_plateau_factor(m, gr, "ring", "simple", 16 * 16 * 64 - 4) == 1.0
    assert model.ring_plateau_factor(m, gr, "ring", "ll128", 1 << 30) == 1.0
    assert model.ring_plateau_factor(machine("dgx-a100"), model.graphs_of(machine("dgx-a100")),
                                     "ring", "simple", 1 << 30) == 1.0    # one node: no factor
    big = run("nccl-ring", nodes=2, elements=16 * 16 * 16, protocol="simple", channels=16)
    small = run("nccl-ring", nodes=2, elements=16 * 16 * 16 - 1, protocol="simple", channels=16)
    assert big["phases"]["latency"] == pytest.approx(131.6e-6 * 1.4)
    assert small["phases"]["latency"] == pytest.approx(131.6e-6)



def test_dgx1_ring_moves_data_at_the_measured_nvlink2_rate():
    # 12 channels = 6 searched rings x 2 on the DGX-1V mesh; every ring edge is one 25 GB/s NVLink2
    # lane shared by the two channels of its ring, at the profile's 0.95 (23.75 GB/s, the V100 log's
    # slope); plus the ring's pipeline fill (fill.ring_fill): 6 MiB < the row 12 x 8 x 512 KiB,
    # so 4 of the 14 ring steps more
    n = 12 * 8 * 2**14
    rep = run("nccl-ring", topology="dgx1-v100", elements=n, dtype="float32", protocol="simple")
    assert rep["channels"] == 12 and rep["phases"]["latency"] == pytest.approx(56.0e-6)  # 8.4 + 14 x 3.4
    S = 4 * n
    flows = 2 * 7 / 8 * S / (12 * 0.95 * 25e9 / 2)
    assert rep["phases"]["pipeline-fill"] == pytest.approx(flows * 4 / 14, rel=1e-9)
    assert rep["time_s"] - 56.0e-6 == pytest.approx(flows * (1 + 4 / 14), rel=1e-9)


# -- bad input -------------------------------------------------------------------------------------------
def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("extra,needle", [
    (["--algorithm", "nccl-ring", "--protocol", "ll64"], "--protocol 'll64'"),
    (["--algorithm", "nccl-ring", "--channels", "0"], "--channels 0"),
    (["--algorithm", "nccl-ring", "--channels", "65"], "--channels 65"),
    (["--algorithm", "nccl-nvls", "--channels", "33"], "--channels 33"),
    (["--algorithm", "nccl-nvls", "--protocol", "ll"], "--protocol ll"),
    (["--algorithm", "ring", "--protocol", "ll"], "--protocol"),
])
def test_bad_protocol_and_channels_are_one_line_errors(capsys, extra, needle):
    code, _, err = cli(capsys, "run", "--topology", "dgx-h100", "--elements", "1024", "--profile", "nccl", *extra)
    assert code == 2
    assert needle in err and err.count("\n") == 1


@pytest.mark.parametrize("topology,nodes,needle", [("dgx-a100", "1", "NVLink SHARP"),
                                                   ("dgx-a100", "4", "NVLink SHARP")])
def test_nvls_where_there_is_none_is_an_error(capsys, topology, nodes, needle):
    code, _, err = cli(capsys, "run", "--topology", topology, "--nodes", nodes, "--algorithm", "nccl-nvls",
                       "--elements", "1024")
    assert code == 2 and needle in err and err.count("\n") == 1


def test_profile_nccl_table_is_validated(tmp_path):
    text = (Path(__file__).parents[1] / "simcollective/profiles/nccl.toml").read_text()
    for bad, needle in (("launch_us = 0.0", "launch_us = -1.0"), ("nvls_efficiency = 0.80", "nvls_efficiency = 1.5"),
                        ("ll = 2.0", "ll = 0.5"), ("nvlink = 0.95", "nvlink = nan")):
        p = tmp_path / "p.toml"
        p.write_text(text.replace(bad, needle, 1))
        with pytest.raises(UserInputError, match="must be a finite number"):
            load_profile(str(p))
    p.write_text(text.replace("\n[nccl]\n", "\n[nccl]\nfoo = 1\n", 1))
    with pytest.raises(UserInputError, match="unknown key 'nccl.foo'"):
        load_profile(str(p))


def test_study_profiles_keep_graph_as_is():
    g = topologies.build("dgx-h100", 1, {})
    for name in ("ideal", "cm02", "smpi"):
        assert load_profile(name).network.effective_graph(g) is g


# -- nccl-tests logs ------------------------------------------------------------------------------------
CURRENT = """# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on host device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  3 on host device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  4 on host device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    14.52    0.00    0.00      0    14.39    0.00    0.00      0
       65536         16384     float     sum      -1    16.01    4.09    6.14      0    15.90    4.12    6.18      0
     1048576        262144     float     sum      -1    27.76   37.78   56.67      0    27.49   38.15   57.22      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 20.1
"""


def test_parser_current_format_with_devices():
    (t,) = parse_log("# Collective test starting: all_reduce_perf\n" + CURRENT)
    assert (t.collective, t.format, t.nranks, t.gpus_per_process, t.dtype) == ("all_reduce", "current", 4, 1, "float")
    assert [r.size for r in t.rows] == [8, 65536, 1048576]
    assert (t.rows[2].time_us, t.rows[2].busbw_ip) == (27.76, 57.22)


def test_parser_old_format():
    (t,) = parse_log((REF / "v100x8-dgx1like-1node_allreduce_konnase.txt").read_text())
    assert (t.collective, t.format, t.nranks, t.gpus_per_process) == ("all_reduce", "old", 8, 8)
    assert len(t.rows) == 25 and t.rows[-1].busbw == 129.14


def test_parser_busbw_only_and_sections_and_na():
    (t,) = parse_log((REF / "azure-ndh100v5-h100x8_allreduce_azurebench.txt").read_text())
    assert t.format == "busbw-only" and t.nranks is None and t.gpus_per_process == -1
    assert [r.size for r in t.rows[:8]] == [1024 << i for i in range(8)] and t.rows[-1].size == 8 << 30
    tables = parse_log((REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt").read_text())
    assert [x.nranks for x in tables] == [16, 32, 64, 16, 32, 64, 16]
    assert tables[0].title.startswith("Section A")
    (s,) = parse_log((REF / "a100x8-1node_sendrecv_liplus.txt").read_text())
    assert s.collective == "sendrecv" and s.rows[0].time_ip_us == 1211.8


def test_parser_rejects_non_logs():
    with pytest.raises(UserInputError, match="not nccl-tests output"):
        parse_log("hello\nworld 1 2 3\n")


def test_compare_end_to_end(capsys, tmp_path):
    log = tmp_path / "ar.txt"
    log.write_text("# all_reduce_perf\n" + CURRENT)
    png = tmp_path / "bw.png"
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--nodes", "1", "--plot", str(png))
    assert code == 0, err
    assert "4 ranks (from the log)" in out and png.stat().st_size > 1000
    rows = [ln for ln in out.splitlines() if "nccl-" in ln]
    assert len(rows) == 3
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")
    res = json.loads(out)
    assert [r["size"] for r in res["rows"]] == [8, 65536, 1048576]
    r = res["rows"][2]
    assert r["busbw_ratio"] == pytest.approx(r["simulated_busbw"] / 56.67)
    assert r["simulated_busbw"] == pytest.approx(1048576 / (r["simulated_time_us"] * 1e3) * 1.5)
    assert res["rows"][0]["algorithm_chosen"] == "nccl-ring" and res["rows"][0]["protocol"] == "ll"


@pytest.mark.parametrize("argv,needle", [
    (["h100x8-2to8node-ib400_allreduce_ncclt309.txt", "--topology", "dgx-h100", "--nodes", "2"], "--section"),
    (["h100x8-2to8node-ib400_allreduce_ncclt309.txt", "--topology", "dgx-h100", "--section", "1"], "16 ranks"),
    (["a100x8-1node_sendrecv_liplus.txt", "--topology", "dgx-a100"], "sendrecv_perf is not simulated"),
    (["gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt", "--topology", "dgx-b200", "--nodes", "1"],
     "the log has 16 ranks"),
    (["v100x8-dgx1like-1node_allreduce_konnase.txt", "--topology", "dgx1-v100", "--protocol", "ll9"],
     "--protocol 'll9'"),
])
def test_compare_bad_input(capsys, argv, needle):
    code, out, err = cli(capsys, "compare", str(REF / argv[0]), *argv[1:])
    assert code == 2 and needle in err and err.count("\n") == 1 and out == ""


def test_compare_not_a_log(capsys, tmp_path):
    p = tmp_path / "x.txt"
    p.write_text("just some text\n")
    code, out, err = cli(capsys, "compare", str(p), "--topology", "dgx-h100")
    assert code == 2 and "not nccl-tests output" in err and out == ""


def test_nvlink_domain_is_one_nccl_node():
    m = machine("gb200-nvl72", 18)           # 18 hosts of 4 GPUs on one NVLink domain
    assert (m.nnodes, m.ppn, m.nvls) == (1, 72, True)
    m = machine("dgx-h100", 2)
    assert (m.nnodes, m.ppn, m.nic_bw, m.nics) == (2, 8, 48.0, 8)


def test_study_presets_have_network_ports_for_the_model():
    m = machine("abci", 2)                   # PLX switches with InfiniBand cables, no NIC nodes
    assert m.nnodes == 2 and m.nic_bw > 0


def test_compare_checks_output_paths_before_simulating(capsys):
    code, out, err = cli(capsys, "compare", str(REF / "v100x8-dgx1like-1node_allreduce_konnase.txt"),
                         "--topology", "dgx1-v100", "--plot", "/nonexistent-dir/x.png")
    assert code == 2 and "does not exist" in err and out == ""


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3000), channels=st.integers(1, 9), nodes=st.sampled_from([1, 2]),
       algorithm=st.sampled_from(["nccl-ring", "nccl-tree", "nccl-nvls"]),
       protocol=st.sampled_from(["simple", "ll", "ll128"]))
def test_any_size_and_channel_count_is_exact(n, channels, nodes, algorithm, protocol):
    # empty channel ranges and blocks (n < channels x ranks) included
    if algorithm == "nccl-nvls":
        protocol = "simple"
    rep = run(algorithm, nodes=nodes, elements=n, channels=channels, protocol=protocol)
    assert rep["verified"] and "exact" in rep["verification"]


def test_nccl_model_check_script_puts_nccls_model_against_the_logs(experiment):
    mod = experiment("nccl_model_check")
    lines = dict(line.split(": ", 1) for line in mod.check())
    # NCCL 2.30.7 on 8 x A100 at 64 MiB: ring/Simple, L = 56 us + 28 us of launches, busbw 240
    assert "64 MiB ring/simple 204.8 / 166.6 (1.23)" in lines["a100x8"]
    assert "64 MiB nvlstree/simple 370.7 / 270.0 (1.37)" in lines["h100x16-A"]
    assert lines["h100x16-G-ring"].startswith("1 MiB ring/ll128")   # NCCL_ALGO=Ring in the log
    # allgather: NCCL's model for allgather (bytes = the output buffer, busbw factor (n - 1)/n)
    assert "64 MiB ring/simple 269.0 / 276.4 (0.97)" in lines["b200x16-allgather"]
    assert len(lines) == 12   # every compared table, section F (8 nodes, tuned) included


# -- the network transport's advertised latency (NCCL's graph.latencyInter) -----------------------------
def test_net_latency_is_added_per_network_hop_and_twice_for_simple():
    # 2 x p4d-like (dgx-a100, 4 NICs): ring allreduce has 2 (nNodes - 1) = 2 network steps; NCCL adds the
    # transport's advertised latency to each (NCCL's latency model), again for Simple (the flush)
    def m_of(opts):
        g = topologies.build("dgx-a100", 2, {"nics_per_node": 4, **opts})
        gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                      key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
        return model.machine_of(g, gpus)

    base, efa = m_of({}), m_of({"net_latency": 60e-6})
    assert base.net_latency_us == 0.0 and efa.net_latency_us == pytest.approx(60.0)
    gb, ge = model.graphs_of(base), model.graphs_of(efa)
    assert model.latency(efa, ge, "ring", "ll") - model.latency(base, gb, "ring", "ll") == pytest.approx(2 * 60)
    assert model.latency(efa, ge, "ring", "simple") - model.latency(base, gb, "ring", "simple") == \
        pytest.approx(2 * 2 * 60)
    assert model.latency(efa, ge, "tree", "ll128") - model.latency(base, gb, "tree", "ll128") == \
        pytest.approx(2 * 1 * 60)     # tree: 2 x log2(nNodes) network hops
    # the simulated call spends it: phase 'latency' grows by exactly 2 x 60 us (ring, LL)
    opts = {"nics_per_node": 4}
    cfg = dict(topology="dgx-a100", nodes=2, algorithm="nccl-ring", elements=1024, dtype="int32",
               profile="nccl", options={"protocol": "ll", "channels": 2})
    a = run_allreduce(RunConfig(topology_opts=dict(opts), **cfg))
    b = run_allreduce(RunConfig(topology_opts={**opts, "net_latency": 60e-6}, **cfg))
    assert b["phases"]["latency"] - a["phases"]["latency"] == pytest.approx(120e-6)
    assert b["verified"]
    # one node: no network hop, nothing added
    one = topologies.build("dgx-a100", 1, {"net_latency": 60e-6})
    assert model.machine_of(one, [f"n0/gpu{i}" for i in range(8)]).net_latency_us == 0.0


@pytest.mark.parametrize("value", ["-1e-6", "2e-3", "nan"])
def test_net_latency_bad_values_are_one_line_errors(capsys, value):
    code, _, err = cli(capsys, "run", "--topology", "dgx-a100", "--nodes", "2", "--topology-opt",
                       f"net_latency={value}", "--elements", "1024", "--profile", "nccl", "--algorithm", "nccl")
    assert code == 2 and "net_latency" in err and err.count("\n") == 1


# -- NVLS pipeline fill in rows of NCCL's chunk ---------------------------------------------------------
def test_nvls_chunk_follows_nccls_reduction_for_small_calls():
    from simcollective.nccl.protocols import nvls_chunk_bytes

    K = 1024
    # 16 channels x 8 heads = 128 concurrent chunks: < 1 GiB -> 64 KiB, < 64 MiB -> 32 KiB, < 8 MiB -> 16 KiB
    assert [nvls_chunk_bytes(s, 16, 8) for s in (1 << 30, (1 << 30) - 4, 64 * MiB, 64 * MiB - 4, 8 * MiB,
                                                 8 * MiB - 4, 1024)] == \
        [128 * K, 64 * K, 64 * K, 32 * K, 32 * K, 16 * K, 16 * K]
    assert nvls_chunk_bytes(1 << 34, 16, 8, nnodes=4) == 64 * K      # NVLSTree on >= 4 nodes


def test_nvls_fill_rows():
    from simcollective.nccl.fill import nvls_fill

    assert nvls_fill(8 << 30, 16, 8, 1, "nvls") == pytest.approx(16 * MiB / (8 << 30))   # one 16 MiB row
    assert nvls_fill(64 * MiB, 16, 8, 2, "nvlstree") == pytest.approx(4 / 8)             # 4 rows of 8 MiB
    assert nvls_fill(1 * MiB, 16, 8, 1, "nvls") == 1.0       # smaller than a row: a full bandwidth time
    # beyond 2 nodes (nccl-nvls's wide NVLSTree pipelines the network passes in its flows): the 2 NVLS rows only;
    # 64 MiB on 16 x 8 with NCCL's >= 4-node chunk of 64 KiB: rows of 8 MiB
    assert nvls_fill(64 * MiB, 16, 8, 4, "nvlstree") == pytest.approx(2 / 8)
    # a 2-node NVLSTree call spends its fill after the flows: phase 'pipeline-fill' = 4/8 of the rest
    rep = run("nccl-nvls", nodes=2, elements=16 * MiB, dtype="float32", channels=16)
    ph = rep["phases"]
    assert ph["pipeline-fill"] == pytest.approx(0.5 * (rep["time_s"] - ph["latency"] - ph["pipeline-fill"]),
                                                rel=1e-6)
    assert rep["verified"]


def test_compare_p4d_with_the_fitted_efa_figures_meets_the_small_size_target():
    # the README's p4d command: EFA goodput and transport latency fitted to this log; <= 64 KiB within 30 %
    from simcollective.validation.compare import compare

    res = compare(str(REF / "p4d-a100x8-2node-efa_allreduce_awsdlami.txt"), topology="dgx-a100", nodes=2,
                  topology_opts={"nics_per_node": 4, "nic_bandwidth": 7.34e9, "net_latency": 70e-6},
                  max_size=64 << 10)
    ratios = [r["time_ratio"] for r in res["rows"]]
    assert len(ratios) == 14 and all(0.7 <= t <= 1.3 for t in ratios)
    plain = compare(str(REF / "p4d-a100x8-2node-efa_allreduce_awsdlami.txt"), topology="dgx-a100", nodes=2,
                    topology_opts={"nics_per_node": 4}, max_size=64)
    assert all(r["time_ratio"] < 0.3 for r in plain["rows"])    # without them: NCCL's IB latencies


def test_compare_two_node_nvlstree_mid_size_meets_the_target_with_the_fill():
    from simcollective.validation.compare import compare

    res = compare(str(REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt"), section=1, topology="dgx-h100",
                  nodes=2, min_size=64 * MiB, max_size=64 * MiB)
    (row,) = res["rows"]
    assert row["algorithm_chosen"] == "nccl-nvls" and 0.9 <= row["busbw_ratio"] <= 1.1
