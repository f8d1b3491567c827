"""``simcollective run --straggler RANK:DELAY``: a rank that starts late, in one run. On one
DGX H100 node (every hop NVLink) the ring's critical path goes through every rank: a
straggler of d delays the allreduce by exactly d. Bad values: one line, exit 2."""

import json

import pytest

import simcollective as sc
from tests.conftest import run_cli

RUN = ("run", "--topology", "dgx-h100", "--nodes", "1", "--algorithm", "ring", "--bytes", "16M")


@pytest.fixture(scope="module")
def clean():
    """The time of RUN without a straggler (one run, read by the tests that compare with it)."""
    return sc.run(topology="dgx-h100", nodes=1, algorithm="ring", bytes=2**24)["time_s"]


def test_a_straggler_of_d_delays_a_ring_inside_one_node_by_exactly_d(capsys, clean):
    d = 1e-3
    code, out, _ = run_cli(capsys, *RUN, "--straggler", f"3:{d}", "--json", "-")
    doc = json.loads(out)
    assert code == 0 and doc["verified"] and doc["stragglers"] == {"3": d}
    assert doc["time_s"] == pytest.approx(clean + d, rel=1e-12)


def test_two_stragglers_on_one_ring_cost_the_later_one(clean):
    late = sc.run(topology="dgx-h100", nodes=1, algorithm="ring", bytes=2**24, stragglers={2: 4e-4, 6: 1e-3})
    assert late["time_s"] == pytest.approx(clean + 1e-3, rel=1e-12)


def test_the_summary_says_the_straggler(capsys):
    code, out, _ = run_cli(capsys, *RUN, "--straggler", "5:2e-4")
    assert code == 0 and "stragglers   rank 5 200.000 us late (the time includes it)" in out


@pytest.mark.parametrize("value, message", [
    ("9:1e-3", "--straggler rank 9 is out of range: the run has ranks 0..7"),
    ("3", "--straggler '3' must be RANK:DELAY"),
    ("3:-1", "--straggler '3:-1' must be RANK:DELAY"),
    ("x:1", "--straggler 'x:1' must be RANK:DELAY"),
])
def test_bad_stragglers_are_one_line_errors(capsys, value, message):
    code, _, err = run_cli(capsys, *RUN, "--straggler", value)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
