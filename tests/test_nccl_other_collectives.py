"""NCCL's algorithms for allgather, reduce-scatter, broadcast and reduce, and compare on
every *_perf log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topologies
from simcollective.cli import main
from simcollective.nccl import model
from simcollective.validation.nccltests import parse_log
from simcollective.nccl.coll_model import coll_bandwidth, coll_choose, coll_latency
from simcollective.profiles import load_profile
from simcollective.simulate import RunConfig, run_collective

REF = Path(__file__).parents[1] / "experiments" / "nccl-tests"
AG_LOG = REF / "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt"
MiB = 1 << 20


def machine(name, nodes=1):
    g = topologies.build(name, nodes, {})
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    return model.machine_of(g, gpus)


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run(collective, algorithm, topology="dgx-h100", nodes=1, **kw):
    kw.setdefault("profile", "nccl")
    return run_collective(RunConfig(topology=topology, nodes=nodes, collective=collective, algorithm=algorithm,
                                    **kw))


# -- NCCL's cost model for these collectives --------------------------------------------------------
def test_model_bandwidth_and_latency_of_ring_allgather_on_8_h100():
    m = machine("dgx-h100")
    graphs = model.graphs_of(m)   # ring: 12 searched channels x 30 GB/s
    # busBw = 12 x 30 = 360; ring ratio nRanks / nsteps = 8 / 7
    assert coll_bandwidth(m, graphs, "allgather", "ring", "simple") == pytest.approx(360 * 8 / 7)
    assert coll_bandwidth(m, graphs, "allgather", "ring", "ll") == pytest.approx(141.0 * 8 / 7)  # llMaxBw
    assert coll_bandwidth(m, graphs, "broadcast", "ring", "simple") == pytest.approx(360.0)     # ratio 8 / 8
    # NVLS (no bus -> algorithm ratio): 8 heads x min(40 x 0.85 x 7/8 x 7/8, 60)
    assert coll_bandwidth(m, graphs, "allgather", "nvls", "simple") == pytest.approx(8 * 40 * 0.85 * 49 / 64)
    assert coll_bandwidth(m, graphs, "broadcast", "nvls", "simple") == 0.0   # NCCL has no NVLS broadcast
    assert coll_latency(m, "allgather", "ring", "simple") == pytest.approx(8.4 + 7 * 3.4)
    assert coll_latency(m, "allgather", "ring", "ll") == pytest.approx(6.6 + 7 * 0.6)
    assert coll_latency(m, "broadcast", "ring", "simple") == pytest.approx(8.4 + 8 * 4.0)  # Tree's hop for Simple
    assert coll_latency(m, "reduce-scatter", "nvls", "simple") == pytest.approx(25.0)


def test_model_choice_small_ll_large_simple_ring():
    m = machine("dgx-h100")
    assert coll_choose(m, "allgather", 4096)[:2] == ("ring", "ll")
    assert coll_choose(m, "allgather", 1 << 30)[:3] == ("ring", "simple", 24)
    assert coll_choose(m, "reduce-scatter", 1 << 30)[:2] == ("ring", "simple")


def test_model_two_nodes_allgather_latency_counts_one_network_hop():
    m = machine("dgx-h100", 2)
    # nsteps = 15, one inter-node hop (nNodes - 1), intra hop max(3.4, 3 x 1.0 net overhead)
    assert coll_latency(m, "allgather", "ring", "simple") == pytest.approx(8.4 + 14 * 3.4 + 14.0)


# -- closed form on a contention-free machine --------------------------------------------------------
@pytest.mark.parametrize("protocol,channels", [("simple", 1), ("simple", 24), ("ll", 3), ("ll128", 8)])
def test_ring_allgather_closed_form_on_an_nvswitch(protocol, channels):
    """On one NVSwitch (each GPU one link up and one down, every ring step one message per
    link) nccl-ring allgather takes L + (P - 1) x wire x S / (P B): L NCCL's latency of the call,
    S the output size, B the usable link rate; channels and loops do not change it."""
    P, count = 8, 3 * 2**16
    rep = run("allgather", "nccl-ring", elements=count, dtype="int32",
              options={"protocol": protocol, "channels": channels})
    prof = load_profile("nccl")
    eff = dict(prof.network.link_efficiency)["nvswitch"]
    B = 450e9 * eff
    m = machine("dgx-h100")
    lat = (prof.nccl.launch_us + coll_latency(m, "allgather", "ring", protocol,
                                                 prof.nccl.latency_table())) * 1e-6
    wire = prof.nccl.wire_factor[protocol]
    S = P * count * 4
    # wire sizes are whole bytes: each of the (P - 1) x C x (<= 2 loops) messages a link
    # carries in turn is rounded up by less than one byte
    rounding = (P - 1) * channels * 2 / B
    assert rep["time_s"] == pytest.approx(lat + (P - 1) * wire * (S / P) / B, rel=1e-9, abs=rounding)
    assert rep.fields["algorithm_chosen"] == "nccl-ring" and rep.fields["channels"] == channels
    assert rep["verified"] and "exact" in rep["verification"]


# -- every new algorithm x protocol, verified on real data ---------------------------------------
CASES = [(c, a, p) for c in ("allgather", "reduce-scatter", "broadcast", "reduce")
         for a in ("nccl-ring", "nccl") for p in ("simple", "ll", "ll128")]
CASES += [(c, "nccl-nvls", "simple") for c in ("allgather", "reduce-scatter")]


@pytest.mark.parametrize("collective,algorithm,protocol", CASES)
def test_every_algorithm_and_protocol_is_exact_on_int32(collective, algorithm, protocol):
    kw = {"root": 5} if collective in ("broadcast", "reduce") else {}
    rep = run(collective, algorithm, elements=1003, dtype="int32", options={"protocol": protocol, "channels": 3},
              **kw)
    assert rep["verified"] and "exact" in rep["verification"]
    assert rep.fields["protocol"] == protocol and rep.fields["channels"] == 3


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "broadcast", "reduce"])
@pytest.mark.parametrize("gpus", [2, 3, 16])
def test_two_nodes_and_odd_rank_counts_float_and_int(collective, gpus):
    kw = {"root": gpus - 1} if collective in ("broadcast", "reduce") else {}
    for dtype in ("int32", "float32"):
        if gpus == 16:   # 2 nodes of 8: NCCL's choice, rings across the rails
            rep = run(collective, "nccl", nodes=2, elements=517, dtype=dtype, **kw)
        else:
            rep = run(collective, "nccl-ring", elements=517, dtype=dtype, gpus=gpus, **kw)
        assert rep["verified"]


def test_auto_choice_is_reported_in_json(capsys):
    code, out, _ = cli(capsys, "run", "--topology", "dgx-h100", "--profile", "nccl", "--collective",
                       "reduce-scatter", "--algorithm", "nccl", "--bytes", "256M", "--json", "-")
    assert code == 0
    rep = json.loads(out)
    assert rep["algorithm_chosen"] == "nccl-ring" and rep["protocol"] == "simple" and rep["channels"] == 24
    assert rep["nccl_predicted_us"] > 0


# -- nccl-tests logs of every *_perf ---------------------------------------------------------------
def _log(binary, rows, current=True, devices=0):
    head = [f"# Collective test starting: {binary}"] if current else [f"# {binary} -b 8 -e 1M -f 2 -g 8"]
    head += ["# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20"]
    head += [f"#  Rank {i} Group 0 Pid 1 on host device {i} [0x00] NVIDIA H100" for i in range(devices)]
    return "\n".join(head + rows) + "\n"


def _row(size, count, root=-1, redop="sum", current=True):
    t = 10.0
    a = size / t / 1e3
    mid = f"float {redop} {root}" if current else "float sum"
    return f"{size} {count} {mid} {t} {a:.2f} {a:.2f} 0 {t} {a:.2f} {a:.2f} 0"


@pytest.mark.parametrize("binary,collective,per_rank", [
    ("all_gather_perf", "all_gather", True), ("reduce_scatter_perf", "reduce_scatter", True),
    ("alltoall_perf", "alltoall", True), ("broadcast_perf", "broadcast", False), ("reduce_perf", "reduce", False),
])
@pytest.mark.parametrize("current", [True, False])
def test_parser_reads_every_perf_header(binary, collective, per_rank, current):
    n = 8
    rows = [_row(s, s // (4 * n) if per_rank else s // 4, root=0 if not per_rank else -1, current=current)
            for s in (4096, 8192, 65536)]
    tables = parse_log(_log(binary, rows, current, devices=0 if per_rank else n), "x.txt")
    assert len(tables) == 1
    t = tables[0]
    assert t.collective == collective and t.format == ("current" if current else "old")
    assert t.nranks == n                                 # per-rank: size / (count x 4); else the Rank lines
    assert [r.size for r in t.rows] == [4096, 8192, 65536]


@pytest.mark.parametrize("binary,expect", [
    ("reduce_scatter_perf", "nccl"), ("broadcast_perf", "nccl"), ("reduce_perf", "nccl"),
    ("alltoall_perf", "best of"),
])
def test_compare_end_to_end_on_each_collective(capsys, tmp_path, binary, expect):
    per_rank = binary in ("reduce_scatter_perf", "alltoall_perf")
    rows = [_row(s, s // 32 if per_rank else s // 4, root=0) for s in (4096, 1 << 20)]
    log = tmp_path / f"{binary}.txt"
    log.write_text(_log(binary, rows, devices=8))
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert res["ranks"] == 8 and res["algorithm"].startswith(expect) and len(res["rows"]) == 2
    assert all(r["verified"] for r in res["rows"])
    if expect == "best of":
        assert "alltoall" in res["forced"] and all(r["algorithm_chosen"] in res["algorithm"] for r in res["rows"])


def test_compare_end_to_end_on_the_b200_allgather_log(capsys):
    code, out, err = cli(capsys, "compare", str(AG_LOG), "--topology", "dgx-b200", "--nodes", "2",
                         "--min-size", "1M", "--max-size", "64M", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert res["collective"] == "all_gather" and res["ranks"] == 16 and res["algorithm"] == "nccl"
    rows = {r["size"]: r for r in res["rows"]}
    assert sorted(rows) == [1 << k for k in range(20, 27)]
    assert rows[64 * MiB]["elements"] == 1048576                 # per-rank count, as the log prints it
    assert rows[64 * MiB]["algorithm_chosen"] == "nccl-ring"     # NCCL has no multi-node NVLS allgather
    assert 0.8 < rows[64 * MiB]["busbw_ratio"] < 1.2
    code, out, _ = cli(capsys, "compare", str(AG_LOG), "--topology", "dgx-b200", "--nodes", "2",
                       "--max-size", "8K")
    assert code == 0 and "all_gather_perf" in out and "nccl-ring/ll" in out


# -- bad input -------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv,needle", [
    (["--topology", "dgx-a100", "--collective", "allgather", "--algorithm", "nccl-nvls"], "NVLink SHARP"),
    (["--topology", "dgx-h100", "--nodes", "2", "--collective", "reduce-scatter", "--algorithm", "nccl-nvls"],
     "inside one node"),
    (["--topology", "dgx-h100", "--collective", "allgather", "--algorithm", "nccl-nvls", "--protocol", "ll"],
     "only simple"),
    (["--topology", "dgx-h100", "--collective", "broadcast", "--algorithm", "nccl-nvls"], "broadcast algorithms"),
    (["--topology", "dgx-h100", "--collective", "alltoall", "--algorithm", "nccl"], "alltoall algorithms"),
    (["--topology", "dgx-h100", "--collective", "allgather", "--algorithm", "nccl-ring", "--channels", "65"],
     "1 to 64"),
    (["--topology", "dgx-h100", "--collective", "allgather", "--algorithm", "nccl", "--protocol", "fast"],
     "allowed: simple, ll, ll128"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = cli(capsys, "run", "--profile", "nccl", "--elements", "1024", *argv)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_compare_refuses_what_it_cannot_simulate(capsys, tmp_path):
    code, _, err = cli(capsys, "compare", str(REF / "a100x8-1node_sendrecv_liplus.txt"), "--topology", "dgx-a100")
    assert code == 2 and "sendrecv_perf is not simulated" in err and len(err.strip().splitlines()) == 1
    log = tmp_path / "h.txt"
    log.write_text(_log("hypercube_perf", [_row(4096, 1024)], devices=8))
    code, _, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    assert code == 2 and "hypercube_perf is not simulated" in err and "all_gather_perf" in err
    log = tmp_path / "a.txt"
    log.write_text(_log("alltoall_perf", [_row(4096, 128)], devices=8))
    code, _, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--protocol", "ll")
    assert code == 2 and "--protocol/--channels apply to NCCL's algorithms" in err


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_chains_of_many_channels_across_nodes_do_not_wait_on_each_other(collective):
    """Regression: with 16 channels on 2 nodes a rank sits at different places of different
    channels' chains; ticks local to each rank deadlocked (chunk t of one chain waited for
    chunk t of another that was posted a tick later)."""
    rep = run(collective, "nccl-ring", nodes=2, elements=1 << 16, dtype="int32", root=3,
              options={"protocol": "simple", "channels": 16})
    assert rep["verified"] and rep.fields["channels"] == 16


def test_broadcast_chain_pipelines_in_nccl_steps():
    """A 1-channel Simple chain over 8 ranks on one NVSwitch, k = 16 steps of 512 KiB: the
    chain fills in P - 1 = 7 step times, so the time is L + (k + P - 2) x step / B."""
    P, step = 8, 512 * 1024
    rep = run("broadcast", "nccl-ring", bytes=16 * step, dtype="int32",
              options={"protocol": "simple", "channels": 1})
    prof = load_profile("nccl")
    B = 450e9 * dict(prof.network.link_efficiency)["nvswitch"]
    lat = rep["phases"]["latency"]
    assert lat == pytest.approx((prof.nccl.launch_us + coll_latency(
        machine("dgx-h100"), "broadcast", "ring", "simple", prof.nccl.latency_table()))
        * 1e-6)
    assert rep["time_s"] == pytest.approx(lat + (16 + P - 2) * step / B, rel=1e-9)


@pytest.mark.parametrize("collective", ["allgather", "reduce-scatter", "broadcast", "reduce"])
def test_one_rank_is_a_copy_not_an_error(collective):
    rep = run(collective, "nccl", gpus=1, elements=100, dtype="int32")
    assert rep["verified"] and rep["time_s"] == 0.0 and rep.fields["algorithm_chosen"] == "nccl-ring"
