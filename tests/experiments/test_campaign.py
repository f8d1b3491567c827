"""The attack campaign's fast subset: one or two inputs of each category, each run as a
subprocess, with no traceback, silent ignore, late error or multi-line error."""

from pathlib import Path

from experiments.campaign import BAD, classify, main, run_case
from experiments.campaign_inputs import Case, all_cases, fast_cases


def test_the_campaign_has_hundreds_of_inputs_of_every_category():
    cases = all_cases()
    assert len(cases) > 400
    assert {c.category for c in cases} >= {"repeated option", "option-use rule", "bad value", "hostile file",
                                           "output path", "sweep grid", "nccl-tests log", "guard"}
    assert len({c.name for c in cases}) == len(cases)


def test_classify():
    ok = {"expect": "error", "code": 2, "wall_s": 0.5, "cpu_s": 0.5, "rss": 2**27, "stderr": "x: error: y\n"}
    assert classify(ok) == "clean"
    assert classify({**ok, "stderr": "Traceback (most recent call last):\n"}) == "traceback"
    assert classify({**ok, "code": 1}) == "traceback"
    assert classify({**ok, "code": 0}) == "silent"
    assert classify({**ok, "cpu_s": 6.0}) == "late" and classify({**ok, "rss": 2**31}) == "late"
    assert classify({**ok, "stderr": "a\nb\n"}) == "multiline"
    assert classify({**ok, "wall_s": 6.0}) == "late" and classify({**ok, "wall_s": 6.0}, wall=False) == "clean"


def test_an_error_slow_in_wall_time_only_is_run_again_and_its_fastest_try_counts(monkeypatch, tmp_path):
    import experiments.campaign as campaign

    tries = iter([7.0, 1.5])
    monkeypatch.setattr(campaign, "run_case", lambda case, root: {"code": 2, "wall_s": next(tries), "cpu_s": 0.5})
    r = {"code": 2, "wall_s": 9.0, "cpu_s": 0.5}
    campaign._retry_if_slow(None, r, tmp_path)
    assert r["wall_tries"] == [9.0, 7.0, 1.5] and r["wall_s"] == 1.5
    late = {"code": 2, "wall_s": 9.0, "cpu_s": 6.0}           # late by CPU: not run again
    campaign._retry_if_slow(None, late, tmp_path)
    assert late["wall_tries"] == [9.0]


def test_a_case_runs_in_its_own_directory(tmp_path):
    r = run_case(Case("x", "control", ["topologies", "--nodes", "3"], files={"f": b"1"}), Path(tmp_path))
    assert r["code"] == 2 and "--nodes" in r["stderr"] and r["rss"] > 0 and r["cpu_s"] > 0


def test_fast_campaign(capsys):
    """Two inputs at a time (``--jobs 2``, the machine's two cores): the fast subset judges each
    child's own CPU time and peak memory, not wall time, so running two at once changes no
    verdict and halves the wait."""
    assert len(fast_cases()) >= 10
    code = main(["--fast", "--jobs", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert all(f"0 {c}" in out for c in BAD), out


def test_a_child_reports_its_own_peak_memory_not_its_parents(tmp_path):
    """ru_maxrss keeps the peak of the process a child was forked from across exec: a child of a
    large test process must still report its own peak (else every input of the fast campaign
    reads as late by memory)."""
    import os
    import subprocess
    import sys

    from experiments.campaign import MAIN

    big = bytearray(600 * 2**20)
    big[::4096] = b"\x01" * len(big[::4096])       # touched: resident in this process
    out = tmp_path / "rss"
    subprocess.run([sys.executable, "-c", MAIN, "algorithms"], env={**os.environ, "CAMPAIGN_RSS": str(out)},
                   stdout=subprocess.DEVNULL, check=True)
    rss, _cpu, _wait = out.read_text().split()
    assert int(rss) < 400 * 2**20 < len(big)
