"""alltoallv steps in a job: a sizes matrix or a MoE gate per group, verified, timed alone."""

import numpy as np
import pytest

import simcollective as sc
from simcollective.errors import UserInputError
from simcollective.jobs import job_from_dict, prepare, run_job

H100 = {"topology": "dgx-h100", "nodes": 2}
COMMS = {"ep": {"rule": "ep", "size": 16}, "tp": {"rule": "tp", "size": 8}}
GATE = "tokens=32,hidden=512,topk=2,experts_per_rank=2,skew=1"


def _job(steps, comms=COMMS):
    return job_from_dict({**H100, "communicators": comms, "steps": steps})


def test_a_moe_step_alone_takes_its_run_time():
    report = run_job(_job([{"name": "moe", "collective": "alltoallv", "communicator": "ep",
                            "algorithm": "hierarchical", "moe": GATE}]))
    (row,) = report.fields["collectives"]
    alone = sc.run(**H100, collective="alltoallv", algorithm="hierarchical", moe=GATE)
    assert row["time_s"] == row["alone_s"] == alone["time_s"] and row["slowdown"] == 1.0
    assert row["bytes"] == alone["bytes"] and "exact" in row["verification"]


def test_sizes_steps_per_group_verified_and_timed_alone():
    m = (np.arange(64).reshape(8, 8) % 5 * 4096).tolist()
    report = run_job(_job([
        {"name": "moe", "collective": "alltoallv", "communicator": "ep", "algorithm": "nccl", "moe": GATE},
        {"name": "v", "collective": "alltoallv", "communicator": "tp", "algorithm": "direct", "sizes": m,
         "after": ["moe"]},
    ]))
    rows = {(c["step"], c["group"]): c for c in report.fields["collectives"]}
    v = sc.run(**H100, collective="alltoallv", algorithm="direct", sizes=m, placement=[f"n1/gpu{i}" for i in range(8)])
    assert rows[("v", 1)]["alone_s"] == v["time_s"]            # node 1's group alone on its node
    assert all("exact" in c["verification"] for c in rows.values())


@pytest.mark.parametrize("step,needle", [
    ({"sizes": [[0, 4], [4, 0]]}, "shape (2, 2) must be (8, 8)"),
    ({"moe": GATE, "bytes": 1024}, "given: bytes, moe"),
    ({"moe": "tokens=4,hidden=8"}, "--moe needs topk"),
])
def test_bad_alltoallv_steps_fail_before_simulating(step, needle):
    with pytest.raises(UserInputError) as exc:
        prepare(_job([{"name": "a", "collective": "alltoallv", "communicator": "tp", "algorithm": "direct", **step}]))
    assert needle in str(exc.value) and "\n" not in str(exc.value)
