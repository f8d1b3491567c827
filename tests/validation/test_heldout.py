"""Held-out validation: band hits judged by the better column, and a fold's refit never
reading the run it predicts."""

from __future__ import annotations

import math

import pytest

from simcollective.profiles import load_profile
from simcollective.validation.heldout import (BANDS, FIGURES, band_hits, fold_figures, fold_options, fold_profile,
                                              fold_values, row_hit)

MiB, GiB = 1 << 20, 1 << 30


def row(size, sim_bus, bus, other_bus=None, sim_t=10.0, t=10.0, other_t=None):
    return {"size": size, "simulated_busbw": sim_bus, "measured_busbw": bus, "other_busbw": other_bus,
            "simulated_time_us": sim_t, "measured_time_us": t, "other_time_us": other_t, "busbw_ratio": sim_bus / bus}


def test_a_row_is_judged_by_the_better_of_its_two_columns():
    big = BANDS[0]
    assert row_hit(row(GiB, 100.0, 120.0), big) is False            # 0.83: outside 10 %
    assert row_hit(row(GiB, 100.0, 120.0, other_bus=105.0), big)     # in-place 0.95: inside
    assert row_hit(row(GiB, 100.0, 111.2), big) is False             # 0.899
    assert row_hit(row(GiB, 100.0, 110.0), big)                      # 0.909
    assert row_hit(row(4 * MiB, 100.0, 120.0), big) is None          # the band does not apply
    small = BANDS[2]
    assert row_hit(row(1024, 1.0, 1.0, sim_t=14.0, t=10.0, other_t=11.0), small)   # 14/11 = 1.27
    assert row_hit(row(1024, 1.0, 1.0, sim_t=14.0, t=10.0, other_t=10.5), small) is False


def test_band_hits_count_rows_judged():
    rows = [row(GiB, 100.0, 100.0), row(2 * GiB, 100.0, 50.0), row(2 * MiB, 100.0, 90.0)]
    hits = band_hits(rows)
    assert hits[BANDS[0][0]] == [1, 2] and hits[BANDS[1][0]] == [1, 1] and hits[BANDS[2][0]] == [0, 0]


def comparison(ratio_at_8g):
    return {"rows": [row(8 * GiB, 100.0 * ratio_at_8g, 100.0)]}


class Poisoned(dict):
    """A comparison that fails the test when the fit reads it."""

    def __getitem__(self, key):
        raise AssertionError("the fit read the held-out log")

    get = __getitem__


def insample(**ratios):
    runs = {f: comparison(1.0) for fig in FIGURES for f in fig.fitted + fig.refit_from}
    runs.update({k.replace("_", "-"): comparison(v) for k, v in ratios.items()})
    return runs


def test_a_fold_never_reads_the_held_out_log():
    runs = insample()
    for name in list(runs):
        poisoned = {**runs, name: Poisoned()}
        values = fold_values(poisoned, name)               # raises if the held-out entry is read
        changed = {**runs, name: comparison(3.0)}          # whatever the held-out log says ...
        assert fold_values(changed, name) == values        # ... the fold's figures are the same


def test_a_fold_refits_the_figures_fitted_on_the_held_out_run():
    runs = {**insample(), "h100x64-C": comparison(1.25), "h100x64-F": comparison(0.8)}
    conn = next(f for f in FIGURES if f.name == "net_conn_bandwidth")
    ib = next(f for f in FIGURES if f.name == "network.link_efficiency.infiniband")
    without_e = fold_values(runs, "h100x32-E")
    assert without_e["net_conn_bandwidth"] == pytest.approx(conn.value / 1.25)   # refit on C alone
    assert fold_figures(runs)["net_conn_bandwidth"] == conn.value                # with E: E's own fit
    assert fold_values(runs, "h100x16-G-ring")[ib.name] == pytest.approx(ib.value / 0.8)
    without_v100 = fold_values(runs, "v100x8")
    assert without_v100["network.link_efficiency.nvlink"] == 0.80                # nothing else to fit on: prior
    assert without_v100["nccl.launch_us_per_extra_gpu.volta"] == pytest.approx((4.0 + 2.3) / 2)
    without_p4d = fold_values(runs, "a100x16-p4d")
    assert without_p4d["nic_bandwidth"] == 12.5e9                                # the preset's line rate
    assert "net_latency" not in without_p4d      # documented (aws-ofi-nccl's 75 us in the aws-p4d preset): not fitted
    assert math.isclose(fold_values(runs, "h100x16-A")["net_conn_bandwidth"], conn.value)


def test_fold_profile_and_options_carry_the_refitted_figures():
    values = {f.name: f.value for f in FIGURES}
    values.update({"network.link_efficiency.nvlink": 0.8, "nccl.nvls_efficiency": 0.85,
                   "nccl.launch_us_per_extra_gpu.volta": 3.0, "nic_bandwidth": 12.5e9})
    prof = fold_profile(load_profile("nccl"), values)
    assert dict(prof.network.link_efficiency)["nvlink"] == 0.8
    assert prof.nccl.nvls_efficiency == 0.85 and prof.nccl.launch_us_per_extra_gpu["volta"] == 3.0
    assert fold_options({"nic_bandwidth": "7.34e9", "nics_per_node": "4"}, "a100x16-p4d", values) == \
        {"nic_bandwidth": 12.5e9, "nics_per_node": "4"}
    assert fold_options({"nic_bandwidth": "50e9"}, "b200x16-allgather", values) == {"nic_bandwidth": "50e9"}


def test_the_nvls_efficiency_is_refitted_on_the_two_node_nvlstree_runs_of_the_same_switch():
    # fitted on the 1-node NVLS log, it acts unchanged on the NVLSTree runs: without the 1-node log
    # it is scaled by their 8 GiB busbw ratios (geometric mean of A's and D's), not NCCL's 0.85
    nvls = next(f for f in FIGURES if f.name == "nccl.nvls_efficiency")
    assert {"h100x16-A", "h100x16-D", "h100x64-C"} <= set(nvls.applies)
    runs = {**insample(), "h100x16-A": comparison(1.21), "h100x16-D": comparison(1.0)}
    assert fold_values(runs, "h100x8-nvls")[nvls.name] == pytest.approx(0.80 / 1.1)
    assert fold_values(runs, "h100x16-A")[nvls.name] == 0.80       # with the 1-node log: its own fit
    alone = {k: v for k, v in insample().items() if k not in ("h100x16-A", "h100x16-D")}
    assert fold_values(alone, "h100x8-nvls")[nvls.name] == 0.85    # nothing to fit on: NCCL's model
