"""Fitting one topology option to a log (``validation/fit.py``)."""

from __future__ import annotations

import math

import pytest

import simcollective.validation.compare as compare_module
from simcollective.errors import TopologyError, UserInputError
from simcollective.validation.compare import compare
from simcollective.validation.fit import fit, option_range, RATIO_TOL
from tests.conftest import NET_LAT, NIC_BW, RING, SIZES


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
