"""Issue 15, one cluster's logs (sections C-G of the H100 thread): the log's own NCCL settings,
the per-connection network cap, and rows where a log disagrees with itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.validation.settings import log_settings
from simcollective.validation.nccltests import parse_log, settings_of

REF = Path(__file__).parents[1] / "experiments" / "nccl-tests"
H100 = REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt"


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def row(size, t_us, t_ip_us=None, n=8):
    """One current-format allreduce row of ``n`` ranks (float) with consistent algbw/busbw."""
    t_ip_us = t_us if t_ip_us is None else t_ip_us
    cols = []
    for t in (t_us, t_ip_us):
        alg = size / (t * 1e3)
        cols += [f"{t:.2f}", f"{alg:.2f}", f"{alg * 2 * (n - 1) / n:.2f}", "0"]
    return f"{size:>12} {size // 4:>12} float sum -1 " + " ".join(cols)


# ------------------------------------------------------------------ 1. the log's own settings


def test_settings_are_read_per_section_and_prose_is_not():
    text = "\n".join([
        "# all_reduce_perf, two runs",
        "# NOTE: the second run sets NCCL_MIN_CTAS=32 (prose: not a setting of any run)",
        "# ---- Section A: default ----",
        "# command: mpirun -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 all_reduce_perf -b 1M",
        "# notes: with NCCL_NVLS_ENABLE=0 another run got less;",
        "#        NCCL_PROTO=LL was also tried",
        row(1 << 20, 50.0),
        "# ---- Section B: tuned, NCCL_MIN_CTAS=24, NCCL_PROTO=^LL128 ----",
        "host:1:1 [0] NCCL INFO NCCL_MAX_CTAS set by environment to 28",
        "# command: export NCCL_ALGO=<algo>; all_reduce_perf",
        row(1 << 20, 50.0),
    ])
    a, b = parse_log(text)
    assert a.settings == {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}
    assert b.settings == {"NCCL_MAX_CTAS": "28", "NCCL_MIN_CTAS": "24", "NCCL_PROTO": "^LL128"}
    assert a.forced_algorithm is None and b.forced_algorithm is None


def test_settings_without_section_titles_come_from_the_header():
    (t,) = parse_log("# all_reduce_perf\n# command: NCCL_MIN_NCHANNELS=32 NCCL_ALGO=Tree mpirun ...\n"
                     + row(1 << 20, 50.0))
    assert t.settings == {"NCCL_MIN_NCHANNELS": "32", "NCCL_ALGO": "Tree"} and t.forced_algorithm == "tree"
    assert settings_of(["#  NCCL_X=\"a b\""]) == {"NCCL_X": "a b"}


def test_the_published_h100_thread_settings_per_section():
    tables = parse_log(H100.read_text())
    mins = [t.settings.get("NCCL_MIN_CTAS") for t in tables]
    assert mins == [None, None, None, None, None, "24", "24"]          # F and G only, not C/D/E
    assert [t.forced_algorithm for t in tables] == [None] * 6 + ["ring"]
    assert "NCCL_NVLS_ENABLE" not in tables[0].settings                # section A's notes are prose
    assert tables[0].settings["NCCL_IB_HCA"] == "mlx5_0:1,...,mlx5_7:1"
    assert tables[6].settings["NCCL_IB_QPS_PER_CONNECTION"] == "2"


def test_log_settings_applied_overridden_and_not_modelled():
    s = {"NCCL_MIN_CTAS": "24", "NCCL_PROTO": "LL,Simple", "NCCL_NVLS_ENABLE": "0",
         "NCCL_IB_QPS_PER_CONNECTION": "2", "NCCL_DEBUG": "INFO"}
    ls = log_settings(s, "x", "allreduce", "auto")
    assert (ls["min_channels"], ls["protos"], ls["algos"]) == (24, ("ll", "simple"), ("tree", "ring"))
    assert ls["not_modelled"] == {"NCCL_IB_QPS_PER_CONNECTION": "2"} and ls["diagnostic"] == {"NCCL_DEBUG": "INFO"}
    ls = log_settings(s, "x", "allreduce", "nccl-ring", protocol="ll", channels=8)
    assert ls["overridden"] == {"NCCL_MIN_CTAS": "--channels 8", "NCCL_PROTO": "--protocol ll",
                                "NCCL_NVLS_ENABLE": "--algorithm nccl-ring"}
    assert (ls["min_channels"], ls["protos"], ls["algos"]) == (None, None, None)
    assert log_settings({"NCCL_PROTO": "^LL128"}, "x", "allreduce", "auto")["protos"] == ("ll", "simple")
    ls = log_settings({"NCCL_MIN_CTAS": "24"}, "x", "allreduce", "ring")   # not NCCL's algorithm
    assert ls["min_channels"] is None and "not NCCL's" in ls["not_modelled"]["NCCL_MIN_CTAS"]


@pytest.mark.parametrize("setting,needle", [
    ({"NCCL_MIN_CTAS": "abc"}, "NCCL_MIN_CTAS='abc' in the log: NCCL takes a channel count from 1 to 64"),
    ({"NCCL_MAX_CTAS": "0"}, "NCCL_MAX_CTAS='0'"),
    ({"NCCL_PROTO": "LL256"}, "NCCL_PROTO='LL256'"),
    ({"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": "8"}, "floor 32 is above its ceiling 8"),
])
def test_log_settings_bad_values(setting, needle):
    with pytest.raises(UserInputError, match=needle.replace("(", r"\(").replace("^", r"\^")):
        log_settings(setting, "x", "allreduce", "auto")


def _log(tmp_path, header, sizes=(1 << 20, 2 << 20)):
    p = tmp_path / "ar.txt"
    p.write_text("# all_reduce_perf\n" + header + "\n" + "\n".join(row(s, 40.0 + s / 1e5) for s in sizes) + "\n")
    return p


def test_compare_applies_min_ctas_on_one_h100_node(capsys, tmp_path):
    # 8 x H100, one node: ring LL at 1 MiB on 24 channels, NVLS at 2 MiB on 16 (NCCL's choices for these sizes).
    # NCCL_MIN_CTAS=32 lifts both communicators to 32 channels; 1 MiB still fills 32 ring LL
    # channels (1 MiB >= 32 x 512 threads x 8 B x 8 ranks) and 2 MiB 32 NVLS ones (>= 32 x 512 x 64 B).
    log = _log(tmp_path, "# command: mpirun -x NCCL_MIN_CTAS=32 -x NCCL_IB_QPS_PER_CONNECTION=4 all_reduce_perf")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert [(r["algorithm_chosen"], r["protocol"], r["channels"]) for r in res["rows"]] == [
        ("nccl-ring", "ll", 32), ("nccl-nvls", "simple", 32)]
    assert res["log_settings"]["applied"] == {"NCCL_MIN_CTAS": "32"}
    assert res["log_settings"]["not_modelled"] == {"NCCL_IB_QPS_PER_CONNECTION": "4"}
    assert res["settings_note"] == ("NCCL_MIN_CTAS=32 in the log: 32 channels; "
                                    "not modelled: NCCL_IB_QPS_PER_CONNECTION=4")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    assert "log settings: NCCL_MIN_CTAS=32 in the log: 32 channels; not modelled" in out
    # without the setting: NCCL's defaults (24 ring, 16 NVLS)
    plain = _log(tmp_path, "# command: all_reduce_perf")
    res = json.loads(cli(capsys, "compare", str(plain), "--topology", "dgx-h100", "--json", "-")[1])
    assert [r["channels"] for r in res["rows"]] == [24, 16] and res["settings_note"] is None


def test_compare_max_ctas_nvls_off_and_proto(capsys, tmp_path):
    log = _log(tmp_path, "# command: NCCL_MAX_CTAS=4 NCCL_NVLS_ENABLE=0 NCCL_PROTO=Simple all_reduce_perf")
    res = json.loads(cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")[1])
    assert {(r["algorithm_chosen"], r["protocol"], r["channels"]) for r in res["rows"]} == {("nccl-ring", "simple", 4)}
    assert "NCCL_NVLS_ENABLE=0 in the log: no NVLS/NVLSTree" in res["settings_note"]
    assert "NCCL_PROTO=Simple in the log: protocols simple" in res["settings_note"]
    # explicit flags win, and say so
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--channels", "2",
                         "--protocol", "ll", "--json", "-")
    res = json.loads(out)
    assert {(r["protocol"], r["channels"]) for r in res["rows"]} == {("ll", 2)}
    assert "NCCL_MAX_CTAS=4 in the log overridden by --channels 2" in res["settings_note"]
    assert "NCCL_PROTO=Simple in the log overridden by --protocol ll" in res["settings_note"]


def test_compare_bad_setting_in_the_log_is_a_one_line_error(capsys, tmp_path):
    log = _log(tmp_path, "# command: NCCL_MIN_CTAS=abc all_reduce_perf")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    assert code == 2 and "NCCL_MIN_CTAS='abc'" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ 3. per-connection network cap

import topologies  # noqa: E402
from simcollective.profiles import load_profile  # noqa: E402
from simcollective.runtime import run_ranks  # noqa: E402
from simcollective.simulate import RunConfig, expected_messages, resolve, run_allreduce  # noqa: E402


class Blob:
    def __init__(self, nbytes):
        self.nbytes = nbytes


def p2p(cap, k=1, size=10**9):
    """k messages of ``size`` bytes at once from n0/gpu0 to n1/gpu0 (rail 0), ideal profile."""
    g = topologies.build("dgx-h100", 2, {} if cap is None else {"net_conn_bandwidth": cap})

    def main(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.isend(1, Blob(size), tag=t) for t in range(k)])
        else:
            yield comm.waitall([comm.irecv(0, tag=t) for t in range(k)])

    return run_ranks(g, ["n0/gpu0", "n1/gpu0"], main, lambda r: (), load_profile("ideal")).makespan


def test_connection_cap_hand_computed_on_two_nodes():
    # route GPU -> PCIe (63 GB/s) -> NIC -> rail leaf -> NIC -> PCIe -> GPU: the 400G NIC
    # (50e9 bytes/s) is the bottleneck; latency 4 x 0.5 + 2 x 0.3 + 0.1 = 2.7 us
    lat = 2.7e-6
    assert p2p(None) == pytest.approx(lat + 1e9 / 50e9, rel=1e-12)
    assert p2p(10e9) == pytest.approx(lat + 1e9 / 10e9, rel=1e-12)          # binds: 10 < 50
    assert p2p(100e9) == p2p(None)                                          # does not bind
    # two connections on one NIC: 2 x 20 = 40 < 50 leaves the NIC partly idle; 2 x 30 > 50 fills it
    assert p2p(20e9, k=2) == pytest.approx(lat + 1e9 / 20e9, rel=1e-12)
    assert p2p(30e9, k=2) == pytest.approx(lat + 2e9 / 50e9, rel=1e-12)
    assert p2p(None, k=2) == p2p(30e9, k=2)


@pytest.mark.parametrize("name", ["dgx1-v100", "dgx2-v100", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72"])
def test_every_hardware_preset_takes_the_connection_cap_on_its_nic_cables(name):
    g = topologies.build(name, 2, {"net_conn_bandwidth": 2e10})
    capped = [(u, v) for u, v, d in g.edges(data=True) if "flow_bandwidth" in d]
    assert capped and g.graph["net_conn_bandwidth"] == 2e10
    for u, v in capped:
        assert "nic" in (g.nodes[u]["kind"], g.nodes[v]["kind"])
        assert g.edges[u, v]["link_type"] in ("infiniband", "ethernet")
    plain = topologies.build(name, 2)
    assert "net_conn_bandwidth" not in plain.graph
    assert not any("flow_bandwidth" in d for _, _, d in plain.edges(data=True))


@pytest.mark.parametrize("value,needle", [
    ("0", "net_conn_bandwidth must be a number from 1e8 to 1e12"),
    ("-1", "net_conn_bandwidth must be a number from 1e8 to 1e12"),
    ("abc", "bad value 'abc' for option 'net_conn_bandwidth'"),
])
def test_connection_cap_bad_values(capsys, value, needle):
    code, out, err = cli(capsys, "compare", str(H100), "--section", "4", "--topology", "dgx-h100", "--nodes", "2",
                         "--topology-opt", f"net_conn_bandwidth={value}")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""


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


# ------------------------------------------------------------------ 4. rows where a log disagrees with itself

from simcollective.validation.compare import band, disagrees, summarize  # noqa: E402


def test_band_and_disagreement_per_size():
    assert (band(8), band(64 << 10), band(1 << 20), band(63 << 20), band(64 << 20)) == (0.3, 0.3, 0.25, 0.25, 0.1)
    assert disagrees(8, 68.52, 24.70, 0.0, 0.0)                 # time, 2.8x: beyond 30 %
    assert not disagrees(8, 31.0, 24.0, 0.0, 0.0)               # 1.29x: within 30 %
    assert disagrees(1 << 20, 317.0, 93.26, 6.41, 21.78)        # E 1 MiB: busbw 0.29x
    assert not disagrees(1 << 20, 117.0, 115.7, 17.64, 17.84)
    assert disagrees(256 << 20, 0, 0, 234.0, 262.0) and not disagrees(256 << 20, 0, 0, 260.58, 270.31)
    assert not disagrees(1 << 20, None, None, 21.0, None)         # one column only (busbw-only logs)


def test_summary_over_all_rows_and_over_self_consistent_rows():
    rows = [{"size": 1 << 20, "busbw_ratio": 3.6, "time_ratio": 0.28, "log_disagrees": True},
            {"size": 2 << 20, "busbw_ratio": 1.1, "time_ratio": 0.9, "log_disagrees": False},
            {"size": 128 << 20, "busbw_ratio": 0.95, "time_ratio": 1.05, "log_disagrees": False}]
    s = summarize(rows)
    assert s["busbw_ratio_worst_1MiB_64MiB"] == 3.6 and s["busbw_ratio_worst_1MiB_64MiB_self_consistent"] == 1.1
    assert s["busbw_ratio_worst_ge_64MiB"] == s["busbw_ratio_worst_ge_64MiB_self_consistent"] == 0.95
    assert s["rows_log_disagrees"] == 1


def test_compare_marks_rows_where_the_log_disagrees_with_itself(capsys, tmp_path):
    log = tmp_path / "ar.txt"
    log.write_text("# all_reduce_perf\n" + "\n".join([
        row(8, 68.52, 24.70), row(1 << 20, 317.0, 93.26), row(2 << 20, 60.0, 61.0)]) + "\n")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert [r["log_disagrees"] for r in res["rows"]] == [True, True, False]
    assert [r["other_time_us"] for r in res["rows"]] == [24.70, 93.26, 61.0]
    assert res["rows"][0]["measured_time_us"] == 68.52               # the strict numbers stay
    s = res["summary"]
    assert s["rows_log_disagrees"] == 2 and s["time_ratio_worst_le_64KiB_self_consistent"] is None
    assert s["busbw_ratio_worst_1MiB_64MiB_self_consistent"] == res["rows"][2]["busbw_ratio"]
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    lines = out.splitlines()
    assert any(ln.strip().startswith("8 B") and "68.52!" in ln for ln in lines)
    assert "  ! 1.0 MiB: out-of-place 317.00 us (5.79 GB/s), in-place 93.26 us (19.68 GB/s)" in lines
    assert lines[-1].startswith("  where the log agrees with itself (1 sizes, without the 2 marked !): busbw 1-64 MiB")
    assert len([ln for ln in lines if ln.strip().startswith(("8 B", "1.0 MiB", "2.0 MiB"))]) == 3   # no row dropped
    # --in-place compares the other column: the marks name it the other way round
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--in-place")
    assert "  ! 8 B: in-place 24.70 us (0.00 GB/s), out-of-place 68.52 us (0.00 GB/s)" in out.splitlines()


def test_p2p_shows_the_connection_cap(capsys):
    code, out, err = cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9")
    assert code == 0, err
    assert "  flow cap     20.000 GB/s per flow (one network connection: net_conn_bandwidth)" in out.splitlines()
    res = json.loads(cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                         "--bytes", "1G", "--profile", "ideal", "--topology-opt", "net_conn_bandwidth=20e9",
                         "--json", "-")[1])
    assert res["flow_cap"] == 20e9 and res["time_s"] == pytest.approx(2.7e-6 + (1 << 30) / 20e9, rel=1e-12)
    plain = json.loads(cli(capsys, "p2p", "--topology", "dgx-h100", "--nodes", "2", "--src", "0", "--dst", "8",
                           "--json", "-")[1])
    assert "flow_cap" not in plain


def test_schema_checks_flow_bandwidth():
    from topologies.schema import TopologyError, validate

    g = topologies.build("dgx-h100", 2, {"net_conn_bandwidth": 2e10})
    u, v = next((u, v) for u, v, d in g.edges(data=True) if "flow_bandwidth" in d)
    for bad in (0.0, -1.0, "20e9", float("nan")):
        g.edges[u, v]["flow_bandwidth"] = bad
        with pytest.raises(TopologyError, match="flow_bandwidth"):
            validate(g)


def test_one_cluster_one_figure_at_8_GiB(capsys):
    # the fit (section E's 8 GiB ring busbw) and its validation on the same cluster's C, F, G:
    # default runs (16 channels, 2 per NIC) capped at 16 x 20.44; tuned runs (24 channels,
    # NCCL_MIN_CTAS=24 read from the log) at the NIC limit
    def at_8g(section, nodes, cap=True):
        argv = ["compare", str(H100), "--section", str(section), "--topology", "dgx-h100", "--nodes", str(nodes),
                "--min-size", "8G", "--json", "-"] + (["--topology-opt", "net_conn_bandwidth=20.44e9"] if cap else [])
        code, out, err = cli(capsys, *argv)
        assert code == 0, err
        (r,) = json.loads(out)["rows"]
        return r

    e = at_8g(5, 4)
    assert e["busbw_ratio"] == pytest.approx(1.0, abs=0.002) and e["channels"] == 16
    assert at_8g(5, 4, cap=False)["busbw_ratio"] == pytest.approx(1.20, abs=0.01)   # before: 389 GB/s
    c = at_8g(3, 8)
    assert c["busbw_ratio"] == pytest.approx(1.0, abs=0.01) and c["algorithm_chosen"] == "nccl-ring"
    f = at_8g(6, 8)
    assert f["channels"] == 24 and f["busbw_ratio"] == pytest.approx(0.985, abs=0.01)
    g = at_8g(7, 2)
    assert g["channels"] == 24 and g["busbw_ratio"] == pytest.approx(1.0, abs=0.01)
