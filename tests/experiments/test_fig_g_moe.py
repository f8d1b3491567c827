"""The MoE experiment: its committed table is what the script computes (the 8- and 16-GPU points)."""

import csv

import pytest

from tests.conftest import EXPERIMENTS


@pytest.mark.parametrize("algorithm,nodes,skew", [("nccl", 1, 1.0), ("hierarchical", 2, 1.0), ("nccl", 2, 0.0)])
def test_committed_points_rerun_identically(experiment, algorithm, nodes, skew):
    fig = experiment("fig_g_moe")
    with open(EXPERIMENTS / "results" / "fig_g_moe.csv") as fh:
        rows = {(r["algorithm"], int(r["gpus"]), float(r["skew"])): r for r in csv.DictReader(fh)}
    got = fig.point(algorithm, nodes, skew)
    row = rows[(algorithm, 8 * nodes, skew)]
    assert f"{got['time_s']:.9g}" == row["time_s"] and str(got["messages"]) == row["messages"]
    assert got["dispatch_s"] + got["combine_s"] == pytest.approx(got["time_s"], rel=1e-12)
