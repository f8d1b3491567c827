"""``--study`` resolution: every part set, contradictions refused, end to end."""

import json

import pytest

from simcollective.errors import UserInputError
from simcollective.simulate import run_allreduce, RunConfig
from tests.conftest import cli


M = 2**20


def run(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def test_study_sets_every_part():
    f = run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, dtype="int32", density=1 / 128,
            profile="cm02", study=True)
    assert (f["routing"], f["timing"], f["study"], f["options"]["densify"]) == ("study", "study", True, "study")
    # dense algorithms: no sizing rule needed, routing and timing still set
    f = run(topology="abci", nodes=2, algorithm="ring", elements=M, dtype="int32", profile="cm02", study=True)
    assert (f["routing"], f["timing"]) == ("study", "study") and "densify" not in f["options"]


def test_study_contradictions_are_errors():
    with pytest.raises(UserInputError, match="--routing hash contradicts"):
        run(topology="abci", nodes=2, algorithm="ring", elements=M, routing="hash", study=True)
    with pytest.raises(UserInputError, match="--densify exact contradicts"):
        run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, density=1 / 128, study=True,
            options={"densify": "exact"})


def test_cli_study_end_to_end():
    out = cli("run", "--topology", "dgx2", "--nodes", "1", "--algorithm", "ring", "--elements", "32M",
              "--dtype", "int32", "--profile", "cm02", "--study", "--json", "-", "--quiet")
    assert out.returncode == 0, out.stderr
    f = json.loads(out.stdout)
    assert f["time_s"] == pytest.approx(80.8e-3, rel=2e-3)
    out = cli("run", "--topology", "abci", "--nodes", "2", "--algorithm", "sparse-ring", "--elements", "64K",
              "--density", "1/128", "--study", "--quiet")
    assert out.returncode == 0 and "study        --study: routing study, timing study, densify study" in out.stdout
    out = cli("run", "--topology", "abci", "--algorithm", "ssar-recursive-doubling", "--elements", "1M",
              "--density", "1/128", "--densify", "study", "--quiet")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "has no study sizing rule" in out.stderr
    out = cli("run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring", "--elements", "1M",
              "--study", "--quiet")
    assert out.returncode == 2 and "--routing study" in out.stderr
