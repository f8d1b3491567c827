"""The 3D-parallel example job (:func:`simcollective.jobs.examples.three_d_parallel`): its
groups, its schedule (a stage's stream order, the PP send between the stages, DP after the
last micro-batch) and the committed TOML that it writes."""

from pathlib import Path

import pytest

from simcollective.errors import UserInputError
from simcollective.jobs import job_from_dict, load_job, prepare, run_job
from simcollective.jobs.examples import three_d_parallel

TOML = Path(__file__).resolve().parents[2] / "experiments" / "job_3d_parallel.toml"
C = 5e-4   # the example's compute per layer


def test_groups_of_both_layouts():
    inside = prepare(job_from_dict(three_d_parallel(nodes=4, layers=2, microbatches=1))).groups
    assert inside["tp0"] == [tuple(range(8)), tuple(range(8, 16))]          # one node each
    assert inside["dp0"][0] == (0, 8) and inside["pp"][0] == (0, 16)
    across = prepare(job_from_dict(three_d_parallel(nodes=4, layers=2, microbatches=1, layout="dp-inside"))).groups
    assert across["tp0"][0] == tuple(range(0, 16, 2)) and across["dp0"][0] == (0, 1)


def test_the_schedule_follows_each_stages_stream():
    f = run_job(job_from_dict(three_d_parallel(nodes=4, layers=4, microbatches=2, verify="symbolic")),
                alone=False).fields
    s = {row["step"]: row for row in f["steps"]}
    assert s["tp0_m0_l0"]["start_s"] == C
    assert s["tp0_m0_l1"]["start_s"] == pytest.approx(s["tp0_m0_l0"]["end_s"] + C, rel=1e-12)
    assert s["pp_m0"]["start_s"] == s["tp0_m0_l1"]["end_s"]
    assert s["tp1_m0_l0"]["start_s"] == pytest.approx(s["pp_m0"]["end_s"] + C, rel=1e-12)
    assert s["tp0_m1_l0"]["start_s"] == pytest.approx(s["tp0_m0_l1"]["end_s"] + C, rel=1e-12)
    assert s["dp0_rs_l0"]["start_s"] >= s["tp0_m1_l0"]["end_s"]
    assert s["dp0_ag_l0"]["start_s"] >= s["dp0_rs_l0"]["end_s"]
    # TP inside a node is alone on its NVSwitch: 16 MiB ring allreduce of 8 H100s, 73.645 us
    assert s["tp0_m0_l0"]["time_s"] == pytest.approx(73.645e-6, rel=1e-4)


def test_the_committed_toml_is_what_the_builder_writes():
    assert load_job(TOML) == job_from_dict(three_d_parallel(nodes=4, layers=4, microbatches=2))


@pytest.mark.parametrize("kwargs, message", [
    ({"layout": "diagonal"}, "layout 'diagonal' is not one of: tp-inside, dp-inside"),
    ({"nodes": 3}, "must be even and >= 2"),
    ({"schedule": "gpipe"}, "schedule 'gpipe' is not one of: forward, 1f1b"),
])
def test_bad_example_parameters(kwargs, message):
    with pytest.raises(UserInputError, match=message):
        three_d_parallel(**kwargs)


def test_one_f_one_b_order_per_stage():
    from simcollective.jobs.examples import _one_f_one_b

    assert _one_f_one_b(0, 3) == [("f", 0), ("f", 1), ("b", 0), ("f", 2), ("b", 1), ("b", 2)]
    assert _one_f_one_b(1, 3) == [("f", 0), ("b", 0), ("f", 1), ("b", 1), ("f", 2), ("b", 2)]


def test_the_1f1b_schedule_runs_backward_in_reverse_with_twice_the_compute():
    f = run_job(job_from_dict(three_d_parallel(nodes=4, layers=4, microbatches=2, verify="symbolic",
                                               schedule="1f1b")), alone=False).fields
    s = {row["step"]: row for row in f["steps"]}
    # stage 1: the forward of micro-batch 0, then at once its backward, last layer first
    assert s["tpb1_m0_l1"]["start_s"] == pytest.approx(s["tp1_m0_l1"]["end_s"] + 2 * C, rel=1e-12)
    assert s["tpb1_m0_l0"]["start_s"] == pytest.approx(s["tpb1_m0_l1"]["end_s"] + 2 * C, rel=1e-12)
    assert s["ppb_m0"]["start_s"] == s["tpb1_m0_l0"]["end_s"]
    # stage 0: two warm-up forwards, then micro-batch 0's backward once its gradient arrives
    assert s["tp0_m1_l0"]["start_s"] == pytest.approx(s["tp0_m0_l1"]["end_s"] + C, rel=1e-12)
    assert s["tpb0_m0_l1"]["start_s"] == pytest.approx(max(s["ppb_m0"]["end_s"], s["tp0_m1_l1"]["end_s"]) + 2 * C,
                                                       rel=1e-12)
    # DP after the last backward through the layer, in backward order
    assert s["dp0_rs_l1"]["start_s"] >= s["tpb0_m1_l1"]["end_s"]
    assert s["dp0_rs_l0"]["start_s"] >= max(s["tpb0_m1_l0"]["end_s"], s["dp0_rs_l1"]["end_s"])
    assert f["makespan_s"] == s["dp0_ag_l0"]["end_s"] or f["makespan_s"] == s["dp1_ag_l0"]["end_s"]
