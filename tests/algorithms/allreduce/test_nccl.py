"""NCCL's allreduce bodies (ring, tree, NVLS) as runs: verified results on one and several nodes,
the choice reported in JSON, closed-form NVLS times, NVLink2 rates, channels per NIC under the
connection cap, bad protocol/channel input as one-line errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import topologies
from simcollective.profiles import load_profile
from simcollective.simulate import expected_messages, resolve, run_allreduce, RunConfig
from tests.conftest import run_cli


MiB = 1 << 20


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


@pytest.mark.parametrize("nodes,channels,elements,time_s,messages", [
    (5, 3, 2**20, 0.0001876330873604428, 3936),      # trees of 2 and 1 channels
    (4, None, 2**22, 0.0003008033401221997, 3328)])
def test_wide_nvlstree_keeps_its_times_and_messages(nodes, channels, elements, time_s, messages):
    # the values of the reactor as it was written with one request per receive (waitall over
    # a tree message's channels): its receives through Completions.recv and recv_all, and its
    # int tags, give the same times to the last bit
    opts = {"channels": channels} if channels else {}
    rep = run("nccl-nvls", nodes=nodes, elements=elements, dtype="float32", **opts)
    assert rep["verified"]
    assert (rep["time_s"], rep["messages"]) == (time_s, messages)


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


@pytest.mark.parametrize("extra,needle", [
    (["--algorithm", "nccl-ring", "--protocol", "ll64"], "--protocol 'll64'"),
    (["--algorithm", "nccl-ring", "--channels", "0"], "--channels 0"),
    (["--algorithm", "nccl-ring", "--channels", "65"], "--channels 65"),
    (["--algorithm", "nccl-nvls", "--channels", "33"], "--channels 33"),
    (["--algorithm", "nccl-nvls", "--protocol", "ll"], "--protocol ll"),
    (["--algorithm", "ring", "--protocol", "ll"], "--protocol"),
])
def test_bad_protocol_and_channels_are_one_line_errors(capsys, extra, needle):
    code, _, err = run_cli(capsys, "run", "--topology", "dgx-h100", "--elements", "1024", "--profile", "nccl", *extra)
    assert code == 2
    assert needle in err and err.count("\n") == 1


@pytest.mark.parametrize("topology,nodes,needle", [("dgx-a100", "1", "NVLink SHARP"),
                                                   ("dgx-a100", "4", "NVLink SHARP")])
def test_nvls_where_there_is_none_is_an_error(capsys, topology, nodes, needle):
    code, _, err = run_cli(capsys, "run", "--topology", topology, "--nodes", nodes, "--algorithm", "nccl-nvls",
                       "--elements", "1024")
    assert code == 2 and needle in err and err.count("\n") == 1


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


def ring(channels, cap=None, elements=64 << 20):
    opts = {} if cap is None else {"net_conn_bandwidth": cap}
    cfg = RunConfig(topology="dgx-h100", nodes=2, algorithm="nccl-ring", elements=elements, dtype="float32",
                    profile="nccl", verify="symbolic", topology_opts=opts,
                    options={"protocol": "simple", "channels": channels})
    return run_allreduce(cfg)


def test_ring_channels_per_nic_against_the_cap():
    # 2 x 8 H100, NCCL's rings: channel c crosses the network on NIC c % 8. A 256 MiB ring
    # allreduce is network bound: after NCCL's latency (spent first), busbw = channels x the
    # per-channel network rate, min(cap, NIC / channels per NIC); NIC 50e9 x 0.982 (profile nccl)
    nbytes = 256 << 20

    def busbw(rep):   # GB/s of the bandwidth part
        return nbytes / (rep["time_s"] - rep["nccl_latency_us"] * 1e-6) * 2 * 15 / 16 / 1e9

    free16, free24 = ring(16), ring(24)
    assert busbw(free16) == pytest.approx(8 * 49.1, rel=1e-9)
    assert ring(16, cap=1e12)["time_s"] == free16["time_s"]        # the cap does not bind: same result
    # 16 channels = 2 per NIC at 10 GB/s each: 160 GB/s busbw, the NIC (49.1 usable) partly idle
    assert busbw(ring(16, cap=10e9)) == pytest.approx(160, rel=1e-9)
    assert busbw(ring(16, cap=20.44e9)) == pytest.approx(16 * 20.44, rel=1e-9)   # the fit to log E
    # 24 channels = 3 per NIC x 20 GB/s = 60 > 49.1: NIC bound, as without a cap
    assert ring(24, cap=20e9)["time_s"] == pytest.approx(free24["time_s"], rel=1e-5)
    assert busbw(ring(24, cap=20e9)) == pytest.approx(8 * 49.1, rel=1e-5)


def test_nvlstree_network_messages_are_per_channel_with_or_without_a_cap():
    # NVLSTree opens one network connection per channel and head (16 per NIC): its network
    # messages go one per channel always, so a per-connection cap changes no message count and,
    # when it does not bind, no time (the cap used to switch the split on: results then moved
    # with a cap that could not bind).
    for nodes in (2, 3):
        cfg0 = RunConfig(topology="dgx-h100", nodes=nodes, algorithm="nccl-nvls", elements=1 << 20,
                         dtype="int32", profile="nccl")
        cfg = RunConfig(topology="dgx-h100", nodes=nodes, algorithm="nccl-nvls", elements=1 << 20,
                        dtype="int32", profile="nccl", topology_opts={"net_conn_bandwidth": 20e9})
        a, b = run_allreduce(cfg0), run_allreduce(cfg)
        assert b["verified"] and "exact" in b["verification"]
        assert a["messages"] == b["messages"] == expected_messages(resolve(cfg))
        if nodes == 2:   # 2 nodes x 8 GPUs x 4 pieces x (7 reduce + 7 multicast + 16 channels' exchange)
            assert a["messages"] == 2 * 8 * 4 * (2 * 7 + 16)
    for nodes in (2, 4):
        kw = dict(topology="dgx-h100", nodes=nodes, algorithm="nccl-nvls", elements=64 << 20, dtype="float32",
                  profile="nccl", verify="symbolic")
        free = run_allreduce(RunConfig(**kw))["time_s"]
        assert run_allreduce(RunConfig(**kw, topology_opts={"net_conn_bandwidth": 1e12}))["time_s"] == \
            pytest.approx(free, rel=1e-12)
