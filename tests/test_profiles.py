"""Profiles: validation of every table, finite numbers in range, file copies equivalent."""

from __future__ import annotations

from pathlib import Path

import pytest

import topologies
from simcollective.errors import UserInputError
from simcollective.profiles import load_profile
from tests.conftest import one_line_error, run_cli


def test_profile_nccl_table_is_validated(tmp_path):
    text = (Path(__file__).resolve().parents[1] / "simcollective/profiles/nccl.toml").read_text()
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


@pytest.mark.parametrize("value", ["-1e-6", "2e-3", "nan"])
def test_net_latency_bad_values_are_one_line_errors(capsys, value):
    code, _, err = run_cli(capsys, "run", "--topology", "dgx-a100", "--nodes", "2", "--topology-opt",
                       f"net_latency={value}", "--elements", "1024", "--profile", "nccl", "--algorithm", "nccl")
    assert code == 2 and "net_latency" in err and err.count("\n") == 1


def test_profile_errors(tmp_path):
    from simcollective.errors import UserInputError

    with pytest.raises(UserInputError, match="neither a built-in"):
        load_profile("nope")
    bad = tmp_path / "p.toml"
    bad.write_text('[network]\nsharing = "equal"\nwindow = 3\n')
    with pytest.raises(UserInputError, match="unknown key 'network.window'"):
        load_profile(str(bad))
    bad.write_text("[network\n")
    with pytest.raises(UserInputError, match="not valid TOML"):
        load_profile(str(bad))


def test_profile_file_copy_is_equivalent(tmp_path):
    from importlib import resources

    text = resources.files("simcollective.profiles").joinpath("smpi.toml").read_text()
    p = tmp_path / "mine.toml"
    p.write_text(text)
    assert load_profile(str(p)) == load_profile("smpi")


SMPI = Path(__file__).resolve().parents[1] / "simcollective" / "profiles" / "smpi.toml"

RING = ["run", "--algorithm", "ring", "--elements", "1M"]


# -- files ------------------------------------------------------------------------------------

def _profile_with(tmp_path, old, new):
    text = SMPI.read_text()
    assert old in text
    path = tmp_path / "p.toml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("old, new, needles", [
    ("[15424, 0.697866]", "[15424, nan]", ["bandwidth_factors", "nan", "finite"]),
    ("[15424, 0.697866]", "[15424, inf]", ["bandwidth_factors", "inf", "finite"]),
    ("[15424, 0.697866]", "[inf, 0.697866]", ["bandwidth_factors", "threshold"]),
    ("cross_traffic = 0.05", "cross_traffic = inf", ["network.cross_traffic", "inf", "<= 1.0"]),
    ("cross_traffic = 0.05", "cross_traffic = 2", ["network.cross_traffic", "<= 1.0"]),
])
def test_profile_numbers_are_finite_and_in_range(capsys, tmp_path, old, new, needles):
    path = _profile_with(tmp_path, old, new)
    one_line_error(capsys, RING + ["--profile", path], str(path), *needles)


def test_profile_weight_inf(capsys, tmp_path):
    path = tmp_path / "w.toml"
    path.write_text('name = "w"\n[network]\nweight_s = inf\n')
    one_line_error(capsys, RING + ["--profile", path], "network.weight_s", "inf", ">= 0")
    path.write_text('name = "w"\n[compute]\ndense_bytes_per_second = nan\n')
    one_line_error(capsys, RING + ["--profile", path], "compute.dense_bytes_per_second", "nan")


def test_profile_nan_does_not_load(tmp_path):
    from simcollective.errors import UserInputError

    with pytest.raises(UserInputError, match="finite"):
        load_profile(_profile_with(tmp_path, "[15424, 0.697866]", "[15424, nan]"))
