"""The ``[[stragglers]]``, ``[[faults]]`` and ``[[background]]`` tables: every bad value is
one line naming it and what is allowed, before any simulation (exit 2 from the command
line); the background schedule's message count and destinations; the CLI end to end."""

import json
from pathlib import Path

import pytest

from simcollective.errors import UserInputError
from simcollective.jobs import job_from_dict, prepare
from simcollective.jobs.traffic import destinations
from tests.conftest import run_cli

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
FAT = {"topology": "fat-tree", "nodes": 4, "topology_opts": {"hosts_per_leaf": 2, "oversubscription": 2}}
BASE = {**FAT, "communicators": {"all": {"rule": "tp", "size": 4}},
        "steps": [{"name": "ar", "communicator": "all", "algorithm": "ring", "bytes": 4096}]}


def check(**extra):
    return prepare(job_from_dict({**BASE, **extra}))


@pytest.mark.parametrize("extra, message", [
    ({"stragglers": [{"rank": 4, "delay": 1e-3}]}, r"straggler rank 4 is out of range: the job has ranks 0\.\.3"),
    ({"stragglers": [{"rank": 0, "delay": -1.0}]}, r"stragglers\[0\]: delay -1\.0 must be a number in \[0, inf\)"),
    ({"stragglers": [{"rank": 0, "slow": 0.5}]}, r"slow 0\.5 must be a number in \[1, inf\)"),
    ({"stragglers": [{"rank": 0, "delay": {"distribution": "normal"}}]},
     r"delay distribution 'normal' is not one of: exponential, uniform"),
    ({"stragglers": [{"rank": 0, "late": 1}]}, r"unknown key 'late'; allowed: rank, delay, slow"),
    ({"faults": [{"link": "leaf0->spine7", "capacity": 0.5}]},
     r"link leaf0->spine7 is not in the machine; list the links with `simcollective job JOB.toml --links`"),
    ({"faults": [{"nic": "n9/nic0"}]}, r"nic 'n9/nic0' is not a node of the machine"),
    ({"faults": [{"link": "leaf0->spine0", "capacity": 1.5}]}, r"capacity 1\.5 must be a number in \[0, 1\]"),
    ({"faults": [{"link": "leaf0->spine0", "capacity": 1.0}]}, r"capacity 1 changes nothing"),
    ({"faults": [{"link": "leaf0", "capacity": 0.5}]}, r"must be written u->v or u<->v"),
    ({"faults": [{"capacity": 0.5}]}, r"give link = \"u->v\" \(or \"u<->v\"\) or nic = \"NODE\""),
    ({"faults": [{"link": "leaf0<->spine0", "capacity": 0.0}]}, r"cut rank\(s\) 2, 3 off from rank\(s\) 0, 1"),
    ({"background": [{"pattern": "permutation", "bytes": 1024, "load": 0.0, "end": 1e-3}]},
     r"load 0\.0 must be a number in \(0, 1\]"),
    ({"background": [{"pattern": "permutation", "bytes": 1024, "load": 1.5, "end": 1e-3}]},
     r"load 1\.5 must be a number in \(0, 1\]"),
    ({"background": [{"pattern": "ring", "bytes": 1024, "load": 0.5, "end": 1e-3}]},
     r"pattern 'ring' is not one of: permutation, incast, alltoall"),
    ({"background": [{"pattern": "incast", "bytes": 1024, "load": 0.5, "start": 1e-3, "end": 1e-3}]},
     r"end 0\.001 must be a number in \(0\.001, inf\)"),
    ({"background": [{"pattern": "incast", "bytes": 1024, "load": 0.5, "end": 1e-3, "ranks": [0, 9]}]},
     r"background 'background0': rank 9 is out of range"),
    ({"routing": "study", "faults": [{"link": "leaf0->spine0", "capacity": 0.5}]}, r"faults need routing"),
])
def test_bad_disturbances_are_one_line_errors_before_simulating(extra, message):
    with pytest.raises(UserInputError, match=message) as exc:
        check(**extra)
    assert "\n" not in str(exc.value)


def test_a_job_step_may_not_wait_for_another_jobs_step():
    steps = [{"name": "other", "communicator": "all", "algorithm": "ring", "bytes": 64, "background": True},
             {"name": "mine", "communicator": "all", "algorithm": "ring", "bytes": 64, "after": ["other"]}]
    with pytest.raises(UserInputError, match=r"step 'mine': waits for 'other', another job's step"):
        job_from_dict({**BASE, "steps": steps})


def test_background_destinations_per_pattern():
    assert destinations("incast", 4, 0, root=2) == [[2], [2], [], [2]]
    assert destinations("alltoall", 3, 0) == [[1, 2], [2, 0], [0, 1]]
    perm = destinations("permutation", 6, 5)
    assert sorted(d for (d,) in perm) == list(range(6)) and all(d != i for i, (d,) in enumerate(perm))
    assert perm == destinations("permutation", 6, 5)          # seeded


def test_cli_runs_a_disturbed_job_and_reports_its_cost(capsys, tmp_path):
    out, job = tmp_path / "job.json", tmp_path / "job.toml"
    # the example at 4 MiB instead of 64 MiB: the ring still runs past the fault at 100 us
    job.write_text((EXPERIMENTS / "job_degraded_link.toml").read_text().replace("bytes = 67108864", "bytes = 4194304"))
    code, text, _ = run_cli(capsys, "job", job, "--json", out, "--no-alone")
    assert code == 0
    assert "disturbances:" in text and "link n0/nic0<->su0/leaf0 at 0.25 x capacity at 0.0001 s" in text
    doc = json.loads(out.read_text())
    assert doc["cost_s"] == doc["makespan_s"] - doc["undisturbed_makespan_s"] > 0
    assert doc["steps"][0]["undisturbed_s"] == doc["undisturbed_makespan_s"]


def test_cli_lists_links_and_refuses_a_bad_fault(capsys, tmp_path):
    code, text, _ = run_cli(capsys, "job", EXPERIMENTS / "job_two_jobs.toml", "--links")
    assert code == 0 and "leaf0->spine0  infiniband" in text
    bad = tmp_path / "bad.toml"
    bad.write_text((EXPERIMENTS / "job_straggler.toml").read_text().replace("rank = 5", "rank = 16"))
    code, _, err = run_cli(capsys, "job", bad)
    assert code == 2 and err.strip().endswith("straggler rank 16 is out of range: the job has ranks 0..15")
    code, _, err = run_cli(capsys, "job", EXPERIMENTS / "job_two_jobs.toml", "--links", "--no-alone")
    assert code == 2 and "--no-alone is not used with --links" in err
