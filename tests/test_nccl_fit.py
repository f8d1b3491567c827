"""``simcollective compare --fit KEY --fit-at SIZE``: calibrating one --topology-opt to a log."""

from __future__ import annotations

import json
import math
import re

import pytest

from simcollective.errors import TopologyError

import simcollective.validation.compare as compare_module
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.validation.compare import compare
from simcollective.validation.fit import RATIO_TOL, fit, option_range

#: the values the synthetic log was "measured" at (the simulator's own times with them)
NIC_BW = 2.5e10
NET_LAT = 2e-5
SIZES = (8, 1024, 1 << 20, 4 << 20)
RING = "nccl-ring"    # forced, so that NCCL's pick cannot change with the option


def _head(ranks=16):
    devices = "".join(f"#  Rank {r:2d} Group  0 Pid {r + 1} on host{r // 8} device  {r % 8} [0000:18:00] "
                      f"NVIDIA H100 80GB HBM3\n" for r in range(ranks))
    return ("# all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 4194304 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n" + devices
            + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
              "            (us)  (GB/s)  (GB/s)\n")


def _row(size, t_us, factor=2 * 15 / 16):
    algbw = size / t_us / 1e3
    return (f"{size:12d} {size // 4:13d}     float     sum      -1 {t_us:9.2f} {algbw:7.2f} {algbw * factor:7.2f}"
            f"      0 {t_us:9.2f} {algbw:7.2f} {algbw * factor:7.2f}      0")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A 2 x 8 H100 all_reduce_perf log whose times are the simulator's own (nccl-ring) with
    nic_bandwidth=2.5e10 and net_latency=2e-5; its 8 B row is 1 us (no value of a rate reaches it)."""
    d = tmp_path_factory.mktemp("fit")
    draft = d / "draft.txt"
    draft.write_text(_head() + "\n".join(_row(s, 100.0) for s in SIZES) + "\n")
    res = compare(str(draft), topology="dgx-h100", nodes=2, algorithm=RING,
                  topology_opts={"nic_bandwidth": NIC_BW, "net_latency": NET_LAT})
    times = {r["size"]: r["simulated_time_us"] for r in res["rows"]}
    log = d / "ar.txt"
    log.write_text(_head() + "\n".join(_row(s, times[s]) for s in SIZES) + "\n")
    tiny = d / "tiny.txt"
    tiny.write_text(_head() + "\n".join(_row(s, 1.0 if s == 8 else times[s]) for s in SIZES) + "\n")
    return log, tiny, times


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_option_ranges_are_the_ones_the_presets_check():
    import topologies

    assert option_range("nic_bandwidth") == (1e8, 1e12)
    assert option_range("net_conn_bandwidth") == (1e8, 1e12)
    assert option_range("net_latency") == (0.0, 1e-3)
    assert option_range("oversubscription") == (1.0, 64.0)
    assert option_range("nvlink_bandwidth") is None   # checked only as > 0
    # the same table bounds the presets: just inside builds, just outside is the one-line error
    for key in ("nic_bandwidth", "net_conn_bandwidth", "net_latency", "oversubscription"):
        lo, hi = option_range(key)
        topologies.build("dgx-h100", 2, {key: hi})
        with pytest.raises(TopologyError, match=rf"^{key} must be a number from \S+ to \S+ .*got"):
            topologies.build("dgx-h100", 2, {key: hi * 1.001})


def test_a_one_size_fit_recovers_the_rate_the_log_was_made_with(synthetic):
    log, _, times = synthetic
    res = fit(str(log), "nic_bandwidth", "4M", topology="dgx-h100", nodes=2, algorithm=RING,
              topology_opts={"net_latency": str(NET_LAT)})
    f = res["fit"]
    assert (f["key"], f["sizes"], f["scale"], f["bracket"], f["converged"]) == (
        "nic_bandwidth", [4 << 20], "geometric", [1e8, 1e12], True)
    assert abs(math.log(f["ratios"][0])) <= RATIO_TOL + 5e-4     # + the value's rounding to 4 digits
    assert f["value"] == pytest.approx(NIC_BW, rel=3e-3)
    assert 3 <= f["simulations"] <= 2 + 40
    # the whole table is simulated with the value as printed, which reproduces it exactly
    assert [r["size"] for r in res["rows"]] == list(SIZES)
    assert res["topology_opts"] == {"net_latency": str(NET_LAT), "nic_bandwidth": f"{f['value']:.4g}"}
    again = compare(str(log), topology="dgx-h100", nodes=2, algorithm=RING,
                    topology_opts={"net_latency": str(NET_LAT), "nic_bandwidth": f"{f['value']:.4g}"})
    assert again["rows"] == res["rows"]


def test_a_latency_fit_is_linear_and_recovers_the_value(synthetic):
    log, _, _ = synthetic
    f = fit(str(log), "net_latency", "8", topology="dgx-h100", nodes=2, algorithm=RING,
            topology_opts={"nic_bandwidth": str(NIC_BW)}, max_size=1024)["fit"]
    assert (f["scale"], f["bracket"], f["method"]) == ("linear", [0.0, 1e-3], "bisection for ratio 1")
    assert f["value"] == pytest.approx(NET_LAT, rel=2e-3)
    assert abs(math.log(f["ratios"][0])) <= RATIO_TOL + 5e-4


def test_a_multi_size_fit_minimises_the_largest_deviation(synthetic):
    log, _, _ = synthetic
    f = fit(str(log), "net_latency=1e-6:1e-4", "8,1K", topology="dgx-h100", nodes=2, algorithm=RING,
            topology_opts={"nic_bandwidth": str(NIC_BW)}, max_size=1024)["fit"]
    assert f["method"].startswith("golden-section") and f["bracket"] == [1e-6, 1e-4] and f["bracket_from"] == "--fit"
    assert f["sizes"] == [8, 1024] and f["converged"]
    assert f["value"] == pytest.approx(NET_LAT, abs=2e-8)         # golden tol: 1e-4 of the range, 1e-8 s
    assert max(abs(math.log(r)) for r in f["ratios"]) < 2e-3


def test_the_fit_is_deterministic(synthetic):
    log, _, _ = synthetic
    kw = dict(topology="dgx-h100", nodes=2, algorithm=RING, topology_opts={"nic_bandwidth": str(NIC_BW)},
              max_size=1024)
    a = fit(str(log), "net_latency", "8,1K", **kw)
    b = fit(str(log), "net_latency", "8,1K", **kw)
    assert a["fit"] == b["fit"] and a["rows"] == b["rows"]


def test_a_size_the_option_does_not_move_is_refused_after_two_simulations(synthetic, monkeypatch):
    _, tiny, _ = synthetic
    calls = []
    real = compare_module.compare
    monkeypatch.setattr(compare_module, "compare", lambda *a, **k: calls.append(k) or real(*a, **k))
    with pytest.raises(UserInputError, match=r"--fit nic_bandwidth: busbw sim/published at 8 B is 0\.0\d+ at "
                                             r"nic_bandwidth=1e\+08 and 0\.0\d+ at nic_bandwidth=1e\+12, both below 1"):
        fit(str(tiny), "nic_bandwidth", "8", topology="dgx-h100", nodes=2, algorithm=RING)
    assert len(calls) == 2 and all(k["sizes"] == {8} for k in calls)
    # several sizes: each must be bracketed; 8 B is not
    calls.clear()
    with pytest.raises(UserInputError, match="at 8 B is .* does not bracket"):
        fit(str(tiny), "nic_bandwidth", "8,4M", topology="dgx-h100", nodes=2, algorithm=RING)
    assert len(calls) == 2


def test_compare_fit_end_to_end_with_json(capsys, synthetic, tmp_path):
    log, _, _ = synthetic
    args = ["compare", str(log), "--topology", "dgx-h100", "--nodes", "2", "--algorithm", RING,
            "--topology-opt", f"nic_bandwidth={NIC_BW}", "--fit", "net_latency", "--fit-at", "8", "--max-size", "1K"]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    lines = out.splitlines()
    m = re.fullmatch(r"fit: net_latency = (2\.00\de-05) \(busbw sim/published at 8 B: (0\.999|1\.000|1\.001); "
                     r"(\d+) simulations\)", lines[0])
    assert m, lines[0]
    assert f"nic_bandwidth=25000000000.0, net_latency={m.group(1)}, profile nccl" in lines[2]
    assert sum(1 for ln in lines if "nccl-ring/" in ln) == 2                      # 8 B and 1 KiB
    code, out, err = cli(capsys, *args, "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    f = res["fit"]
    assert set(f) >= {"key", "value", "sizes", "ratios", "simulations", "bracket"}
    assert (f["key"], f["value"], f["sizes"], f["bracket"]) == ("net_latency", float(m.group(1)), [8], [0.0, 0.001])
    assert f["simulations"] == int(m.group(3))          # deterministic: the same search
    assert res["topology_opts"]["net_latency"] == m.group(1) and len(res["rows"]) == 2


@pytest.mark.parametrize("extra,needle", [
    (["--fit", "foo", "--fit-at", "8"], "--fit 'foo': unknown option of topology 'dgx-h100'; allowed: nic_bandwidth,"),
    (["--fit", "nics_per_node", "--fit-at", "8"], "not a real-valued option of topology 'dgx-h100'; allowed: "),
    (["--fit", "duplex", "--fit-at", "8"], "not a real-valued option"),
    (["--fit-at", "8"], "--fit-at 8 needs --fit KEY"),
    (["--fit", "nic_bandwidth"], "--fit nic_bandwidth needs --fit-at SIZE"),
    (["--fit", "nic_bandwidth", "--fit-at", "3M"],
     "--fit-at 3145728 (3.0 MiB) is not a size of "),
    (["--fit", "nic_bandwidth", "--fit-at", "3M"], "its sizes near it: 1024 (1.0 KiB), 1048576 (1.0 MiB), "
                                                  "4194304 (4.0 MiB)"),
    (["--fit", "nic_bandwidth", "--fit-at", "8,,1K"], "give sizes separated by commas"),
    (["--fit", "nic_bandwidth", "--fit-at", "lots"], "--fit-at 'lots' is not a size"),
    (["--fit", "nic_bandwidth", "--fit-at", "4M", "--max-size", "1M"], "outside --min-size/--max-size"),
    (["--fit", "nic_bandwidth", "--fit-at", "1M", "--topology-opt", "nic_bandwidth=5e10"],
     "nic_bandwidth is also given as --topology-opt nic_bandwidth=5e10"),
    (["--fit", "nic_bandwidth=5e10:1e9", "--fit-at", "1M"], "is empty or inverted; give LO < HI"),
    (["--fit", "nic_bandwidth=1e9:1e9", "--fit-at", "1M"], "is empty or inverted"),
    (["--fit", "nic_bandwidth=1e9", "--fit-at", "1M"], "the range must be LO:HI"),
    (["--fit", "nic_bandwidth=a:b", "--fit-at", "1M"], "the range must be LO:HI"),
    (["--fit", "nic_bandwidth=1e7:1e9", "--fit-at", "1M"], "nic_bandwidth must be a number from 1e8 to 1e12"),
    (["--fit", "nvlink_bandwidth", "--fit-at", "1M"], "checks only that nvlink_bandwidth is > 0; give the range"),
    (["--fit", "oversubscription=0.5:2", "--fit-at", "1M"], "oversubscription must be a number from 1 to 64"),
    (["--fit", "nic_bandwidth", "--fit-at", "1M", "--topology-opt", "nics_per_node=99"],
     "nics_per_node must be an int from 1 to 16"),
])
def test_fit_bad_input_is_one_line_before_any_simulation(capsys, synthetic, monkeypatch, extra, needle):
    log, _, _ = synthetic

    def boom(*a, **k):
        raise AssertionError("simulated before checking the input")
    monkeypatch.setattr(compare_module, "compare", boom)
    monkeypatch.setattr("simcollective.simulate.run_allreduce", boom)
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--nodes", "2", *extra)
    assert code == 2 and needle in err and err.count("\n") == 1 and out == "", err


def test_fit_refuses_a_topology_file(capsys, synthetic, tmp_path):
    log, _, _ = synthetic
    code, out, err = cli(capsys, "compare", str(log), "--topology-file", str(tmp_path / "x.json"),
                         "--fit", "nic_bandwidth", "--fit-at", "1M")
    assert code == 2 and out == "" and err.count("\n") == 1 and "not of --topology-file" in err
