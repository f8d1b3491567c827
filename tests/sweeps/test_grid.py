"""Sweep grids: expansion of sizes, fractions and nodes, unions, unknown keys and bad values,
every algorithm option a sweep input, collectives, study keys."""

from pathlib import Path

import pandas as pd
import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.sweeps import expand_grid, load_config, run_sweep
from tests.conftest import cli, one_line_error


# -- sweeps ----------------------------------------------------------------------------------------
def test_sweep_ranges_and_collectives(tmp_path):
    from simcollective.sweeps import expand_grid, load_config, run_sweep

    cfg = {"fixed": {"topology": "abci", "collective": "allgather", "algorithm": "ring"},
           "grid": {"bytes": {"from": "1K", "to": "16K", "factor": 4}, "gpus": {"from": 2, "to": 4, "step": 2}}}
    points = expand_grid(cfg)
    assert [(p["bytes"], p["gpus"]) for p in points] == [(b, g) for b in (1024, 4096, 16384) for g in (2, 4)]
    df = run_sweep(cfg, tmp_path / "out.csv", workers=1, progress=False)
    assert df["ok"].all()
    assert sorted(df["bytes"]) == sorted([1024, 4096, 16384] * 2)
    assert set(df["count"]) == {128, 64, 512, 256, 2048, 1024}
    for bad, msg in [({"from": "8"}, "a range is"), ({"from": "8", "to": "4", "factor": 2}, "from <= to"),
                     ({"from": "8", "to": "64", "factor": 1}, "must be >= 2")]:
        with pytest.raises(UserInputError, match=msg):
            load_config({"fixed": {"algorithm": "ring"}, "grid": {"bytes": bad}})


def test_sweep_negative_seed(capsys, tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('[fixed]\nalgorithm = "ring"\nelements = "1K"\nseed = -1\n')
    one_line_error(capsys, ["sweep", cfg, "--out", tmp_path / "o.csv"], "seed", ">= 0")


def test_sweep_key_study(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('[fixed]\ntopology = "abci"\nnodes = 2\nelements = "64K"\ndtype = "int32"\n'
                   'profile = "cm02"\nalgorithm = "ring"\n[grid]\nstudy = [true, false]\n')
    out = cli("sweep", str(cfg), "--out", str(tmp_path / "s.csv"), "--quiet")
    assert out.returncode == 0, out.stderr
    import csv

    rows = {r["study"]: r for r in csv.DictReader(open(tmp_path / "s.csv"))}
    assert rows["True"]["out_routing"] == "study" and rows["True"]["out_timing"] == "study"
    assert rows["False"]["out_routing"] == "first"
    assert float(rows["True"]["time_s"]) > float(rows["False"]["time_s"])


def test_expand_grid_parses_sizes_fractions_and_auto_nodes():
    cfg = {"fixed": {"topology": "abci", "nodes": "auto", "density": "1/128"},
           "grid": {"gpus": [4, 8, 12], "algorithm": ["ring"], "elements": ["32M", 1024]}}
    pts = expand_grid(cfg)
    assert len(pts) == 6
    assert {p["elements"] for p in pts} == {32 * 2**20, 1024}
    assert {p["density"] for p in pts} == {1 / 128}
    assert [p["nodes"] for p in pts if p["elements"] == 1024] == [1, 2, 3]
    assert len({p["key"] for p in pts}) == 6
    # keys are stable and do not depend on how a value was written
    again = expand_grid({"fixed": {"topology": "abci", "nodes": "auto", "density": 0.0078125},
                         "grid": {"gpus": [4, 8, 12], "algorithm": ["ring"], "elements": [33554432, "1K"]}})
    assert sorted(p["key"] for p in pts) == sorted(p["key"] for p in again)


def test_union_of_grids_and_duplicates():
    cfg = {"fixed": {"elements": "1K"}, "grid": [{"algorithm": ["ring", "ring-ring"]}, {"algorithm": ["ring"]}]}
    assert [p["algorithm"] for p in expand_grid(cfg)] == ["ring", "ring-ring"]


@pytest.mark.parametrize("cfg, fragment", [
    ({"fixed": {"elemnts": "1K", "algorithm": "ring"}}, "'elemnts'"),
    ({"fixed": {"elements": "1K"}, "grid": {"algoritm": ["ring"]}}, "'algoritm'"),
    ({"fixed": {"elements": "1K", "algorithm": "ring"}, "grids": []}, "'grids'"),
])
def test_unknown_key_is_named(cfg, fragment):
    with pytest.raises(UserInputError) as exc:
        load_config(cfg)
    assert fragment in str(exc.value)
    assert "allowed:" in str(exc.value)


@pytest.mark.parametrize("cfg, fragment", [
    ({"fixed": {"elements": "32X", "algorithm": "ring"}}, "elements"),
    ({"fixed": {"elements": "1K"}, "grid": {"algorithm": "ring"}}, "must be a list"),
    ({"fixed": {"elements": "1K", "algorithm": "ring"}, "grid": {"algorithm": ["ring"]}}, "both"),
    ({"fixed": {"algorithm": "ring"}}, "sets no 'elements' or 'bytes'"),   # both ways to give the size
    ({"fixed": {"elements": "1K", "algorithm": "ring", "density": "1/0"}}, "density"),
])
def test_bad_values_are_errors(cfg, fragment):
    with pytest.raises(UserInputError) as exc:
        load_config(cfg)
    assert fragment in str(exc.value)


def test_smoke_config_expands():
    root = Path(__file__).resolve().parents[2]
    pts = expand_grid(root / "experiments" / "smoke.toml")
    assert 2 <= len(pts) <= 12


def test_every_registered_algorithm_option_is_a_sweep_input(tmp_path, capsys):
    """protocol and channels (options of the registry) sweep like group_size: passed to the
    algorithms that declare them, ignored (and said so) for the others."""
    import json

    cfg = {"fixed": {"topology": "abci", "nodes": 1, "elements": "64K"},
           "grid": {"algorithm": ["nccl-ring", "ring"], "protocol": ["simple"]}}
    df = run_sweep(cfg, tmp_path / "r.csv", workers=1, progress=False)
    assert len(df) == 2 and df["ok"].all()
    nccl = df[df["algorithm"] == "nccl-ring"].iloc[0]
    ring = df[df["algorithm"] == "ring"].iloc[0]
    assert pd.isna(nccl["ignored"]) and ring["ignored"] == "protocol"
    assert main(["run", "--topology", "abci", "--nodes", "1", "--algorithm", "nccl-ring", "--protocol", "simple",
                 "--elements", "64K", "--json", "-"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert nccl["time_s"] == cli["time_s"] and nccl["protocol"] == cli["protocol"] == "simple"
    assert json.loads(nccl["options"]) == cli["options"] == {"protocol": "simple"}
    import simcollective as sc

    df = sc.sweep(algorithm=["nccl-ring"], elements="64K", channels=[2])
    assert df["ok"].all() and int(df["channels"].iloc[0]) == 2
