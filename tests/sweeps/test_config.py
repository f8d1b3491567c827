"""Sweep inputs of alltoallv: a seeded MoE gate (``moe``) or a sizes file (``sizes``) in place
of a size; a bad gate is refused when the config is read, before any point runs."""

import numpy as np
import pytest

import simcollective as sc
from simcollective.errors import UserInputError
from simcollective.sweeps.config import load_config
from tests.conftest import run_cli

GATE = "tokens=8,hidden=64,topk=2"


def test_moe_gates_form_a_grid_without_a_size():
    cfg = load_config({"fixed": {"collective": "alltoallv", "algorithm": "direct"},
                       "grid": {"moe": [f"{GATE},skew=0", f"{GATE},skew=2"]}})
    assert cfg["grids"][0]["moe"] == [f"{GATE},skew=0", f"{GATE},skew=2"]


def test_a_bad_gate_is_refused_when_the_config_is_read():
    with pytest.raises(UserInputError, match="skew"):
        load_config({"fixed": {"collective": "alltoallv", "algorithm": "direct"}, "grid": {"moe": [f"{GATE},skew=-1"]}})


def test_a_sweep_over_skew_matches_single_runs_and_reports_the_gate():
    df = sc.sweep(topology="dgx-h100", nodes=1, collective="alltoallv", algorithm=["direct", "nccl"],
                  moe=[f"{GATE},skew=0", f"{GATE},skew=2"], verify="symbolic")
    assert df["ok"].all() and len(df) == 4
    for _, row in df.iterrows():
        alone = sc.run(topology="dgx-h100", nodes=1, collective="alltoallv", algorithm=row["algorithm"],
                       moe=row["moe"], verify="symbolic")
        assert row["time_s"] == alone["time_s"] and row["imbalance"] == alone["imbalance"]
    skewed = df[df["moe_skew"] == 2.0]["imbalance"]
    assert (skewed > df[df["moe_skew"] == 0.0]["imbalance"].max()).all()   # hot experts: a busier rank
    assert set(df["moe_topk"]) == {2}


def test_a_sizes_file_relative_to_the_config(tmp_path):
    m = np.full((8, 8), 4096, dtype=np.int64)
    np.save(tmp_path / "m.npy", m)
    (tmp_path / "s.toml").write_text('[fixed]\ntopology = "dgx-h100"\nnodes = 1\ncollective = "alltoallv"\n'
                                     'sizes = "m.npy"\n[grid]\nalgorithm = ["direct", "pairwise"]\n')
    df = sc.sweep(str(tmp_path / "s.toml"))
    assert df["ok"].all() and (df["total_bytes"] == m.sum()).all()


def test_cli_bad_gate_one_line_exit_2(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text('[fixed]\ntopology = "dgx-h100"\nnodes = 1\ncollective = "alltoallv"\n'
                                       'algorithm = "direct"\n[grid]\nmoe = ["tokens=8,hidden=64"]\n')
    code, out, err = run_cli(capsys, "sweep", tmp_path / "bad.toml", "--out", tmp_path / "r.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "topk" in err
    assert not (tmp_path / "r.csv").exists()
