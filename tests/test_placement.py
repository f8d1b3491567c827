"""Placement of ranks: placements, auto order, default group size errors."""

import json
import re

import pytest

import topologies
from simcollective.errors import UserInputError
from simcollective.placement import resolve_placement
from simcollective.simulate import run, RunConfig
from tests.conftest import one_line_error, run_cli, two_level_mesh


def test_default_group_size_is_not_blamed_on_the_user():
    g = two_level_mesh(2, 4)          # default group size 4
    cfg = RunConfig(topology="t", collective="alltoall", algorithm="hierarchical", elements=3, gpus=6)
    with pytest.raises(UserInputError) as exc:
        run(cfg, graph=g)
    assert "the topology's group size 4 (GPUs per node) does not divide the 6 ranks" in str(exc.value)
    assert "--group-size 4" not in str(exc.value)


RING = ["run", "--algorithm", "ring", "--elements", "1M"]


def test_default_group_size_error_does_not_blame_an_option_never_given(capsys):
    line = one_line_error(capsys, ["run", "--algorithm", "ring-ring", "--elements", "1M", "--nodes", "2",
                                   "--gpus", "6"], "6 ranks", "the topology's group size 4", "give --group-size")
    assert "--group-size 4 does not divide" not in line


# -- placement auto, one source of defaults ----------------------------------------------------------

def test_placement_auto_uses_the_graphs_rank_order(capsys):
    times = {}
    for placement in ("auto", "study", "linear"):
        code, out, err = run_cli(capsys, "run", "--topology", "dgx1", "--algorithm", "ring", "--elements", "16M",
                                 "--placement", placement, "--json", "-")
        assert code == 0, err
        times[placement] = json.loads(out)["time_s"]
    assert times["auto"] == times["study"]
    assert times["linear"] == pytest.approx(2 * times["auto"], rel=1e-9)   # single NVLinks: half the speed
    code, out, err = run_cli(capsys, "run", "--topology", "dgx1", "--algorithm", "ring", "--elements", "16M")
    assert "placement    auto: the graph's rank order 0,3,2,1,5,6,7,4" in out
    assert times["auto"] == pytest.approx(float(re.search(r"\(([0-9.e-]+) s\)", out).group(1)), rel=1e-8)
    code, out, err = run_cli(capsys, *RING)
    assert "placement    auto: linear (the graph declares no rank order)" in out


def test_placements():
    g = topologies.build("dgx1", 2)
    study = resolve_placement(g, "study")
    assert study[:8] == [f"n0/gpu{i}" for i in (0, 3, 2, 1, 5, 6, 7, 4)]
    assert study[8] == "n1/gpu0"
    assert resolve_placement(g, [3, "n1/gpu2"]) == ["n0/gpu3", "n1/gpu2"]
    with pytest.raises(UserInputError, match="larger than the 16 GPUs"):
        resolve_placement(g, "linear", 17)
    with pytest.raises(UserInputError, match="appears twice"):
        resolve_placement(g, [1, 1])
    with pytest.raises(UserInputError, match="neither a GPU node id"):
        resolve_placement(g, ["n0/plx0"])
