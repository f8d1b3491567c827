"""Stragglers, link faults and background traffic in jobs, against closed forms: a
straggler of d on a ring's critical path delays it by exactly d; a bottleneck link at half
capacity from t = 0 gives the hand-computed ring time, and mid-run the piecewise one; a
failure with another route finishes (on it), one without names the ranks cut off; random
faults keep runs deterministic, verified and no faster than without them."""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from simcollective.errors import UserInputError
from simcollective.jobs import job_from_dict, run_job

MiB = 2**20
B = 12.5e9
#: host -> host across the spine (see test_job_runner): PCIe, cables, leaf and spine crossings
L = 2 * 7.5e-6 + 4 * 2.6e-8 + 2 * 9e-8 + 4e-7


def fat(oversubscription):
    return {"topology": "fat-tree", "nodes": 4, "topology_opts": {"hosts_per_leaf": 2,
                                                                  "oversubscription": oversubscription}}


def ring(machine, n=MiB, colour=(0, -1, 0, -1), alone=False, **disturb):
    """A ring allreduce of n bytes over the ranks of ``colour`` (h0 and h2: across the spine)."""
    table = {**machine, "communicators": {"x": {"rule": "split", "colour": list(colour)}},
             "steps": [{"name": "ar", "communicator": "x", "algorithm": "ring", "bytes": n}], **disturb}
    return run_job(job_from_dict(table), alone=alone)


def test_a_straggler_on_the_critical_path_delays_a_ring_by_exactly_d():
    d = 1e-3
    r = ring({"topology": "dgx-h100", "nodes": 1}, 16 * MiB, colour=[0] * 8,
             stragglers=[{"rank": 3, "delay": d}])
    f = r.fields
    assert f["makespan_s"] == pytest.approx(f["undisturbed_makespan_s"] + d, rel=1e-12)
    assert f["cost_s"] == pytest.approx(d, rel=1e-9)
    assert f["steps"][0]["cost_s"] == pytest.approx(d, rel=1e-9)
    assert f["disturbances"] == ["rank 3 starts 1.000 ms late"]


def test_each_disturbance_alone_is_costed_beside_all_of_them():
    r = ring({"topology": "dgx-h100", "nodes": 1}, 16 * MiB, colour=[0] * 8,
             stragglers=[{"rank": 3, "delay": 1e-3}, {"rank": 6, "delay": 4e-4}])
    each = r.fields["each_cost"]
    assert [e["disturbance"] for e in each] == ["rank 3 late", "rank 6 late"]
    assert [e["cost_s"] for e in each] == pytest.approx([1e-3, 4e-4], rel=1e-9)
    assert "rank 6 late, alone: makespan" in str(r)


def test_a_slow_straggler_stretches_its_compute_by_its_factor():
    table = {**fat(2), "communicators": {"x": {"rule": "tp", "size": 4}},
             "steps": [{"name": "ar", "communicator": "x", "algorithm": "ring", "bytes": MiB, "compute": 1e-3}],
             "stragglers": [{"rank": 1, "slow": 1.5}]}
    f = run_job(job_from_dict(table), alone=False).fields
    assert f["cost_s"] == pytest.approx(0.5e-3, rel=1e-9)


def test_a_seeded_straggler_delay_is_deterministic_and_drawn_from_its_distribution():
    dist = {"distribution": "uniform", "low": 1e-4, "high": 2e-4}
    a, b = (ring(fat(2), stragglers=[{"rank": 0, "delay": dist}]).fields for _ in range(2))
    assert a["makespan_s"] == b["makespan_s"]
    assert 1e-4 <= a["cost_s"] <= 2e-4


def test_the_bottleneck_at_half_capacity_from_the_start_gives_the_hand_computed_time():
    # 2-rank ring allreduce: two steps of n / 2 at B / 2 on the halved uplinks
    n = MiB
    f = ring(fat(2), n, faults=[{"link": "leaf0<->spine0", "capacity": 0.5}]).fields
    assert f["makespan_s"] == pytest.approx(2 * (L + n / B), rel=1e-12)
    assert f["undisturbed_makespan_s"] == pytest.approx(2 * (L + n / 2 / B), rel=1e-12)


def test_the_bottleneck_halving_mid_step_gives_the_piecewise_time():
    # step 1's flows run at B from L; at t they drop to B / 2; step 2 is all at B / 2
    n, t = MiB, 3e-5
    f = ring(fat(2), n, faults=[{"link": "leaf0<->spine0", "capacity": 0.5, "at": t}]).fields
    end1 = t + (n / 2 - B * (t - L)) / (B / 2)
    assert f["makespan_s"] == pytest.approx(end1 + L + n / B, rel=1e-12)


def test_a_failure_with_another_route_finishes_on_it():
    f = ring(fat(1), faults=[{"link": "leaf0<->spine0", "capacity": 0.0, "at": 2e-5}]).fields
    assert f["verified"] and f["makespan_s"] == pytest.approx(2 * (L + MiB / 2 / B), rel=1e-12)
    links = {ls.name for ls in ring(fat(1), faults=[{"link": "leaf0<->spine0", "capacity": 0.0}]).result.links}
    assert "leaf0->spine1" in links and "leaf0->spine0" not in links


def test_a_failure_without_another_route_names_the_ranks_cut_off():
    with pytest.raises(UserInputError, match=r"cut rank\(s\) 2, 3 off from rank\(s\) 0, 1"):
        ring(fat(2), faults=[{"link": "leaf1<->spine0", "capacity": 0.0, "at": 1e-5}])


def test_a_nic_down_cuts_its_host_off_or_moves_nothing_else():
    with pytest.raises(UserInputError, match=r"cut rank\(s\) 0 off"):
        ring(fat(2), faults=[{"nic": "n0/nic0", "capacity": 0.0}])
    half = ring(fat(2), faults=[{"nic": "n0/nic0", "capacity": 0.5}]).fields
    assert half["cost_s"] > 0


def test_background_permutation_slows_the_job_and_counts_its_messages():
    table = {**fat(2), "communicators": {"x": {"rule": "split", "colour": [0, -1, 0, -1]}},
             "steps": [{"name": "ar", "communicator": "x", "algorithm": "ring", "bytes": MiB}],
             "background": [{"name": "noise", "pattern": "permutation", "ranks": [1, 3], "bytes": 65536,
                             "load": 1.0, "end": 2e-4}]}
    f = run_job(job_from_dict(table), alone=False).fields
    # each sender posts one 64 KiB message per 64 KiB / 12.5 GB/s (5.24 us) for 200 us: 39
    assert f["background"][0]["messages"] == 2 * 39 and f["cost_s"] > 0


def test_another_jobs_steps_are_left_out_of_the_undisturbed_run():
    table = {**fat(2), "communicators": {"a": {"rule": "split", "colour": [0, -1, 0, -1]},
                                         "b": {"rule": "split", "colour": [-1, 0, -1, 0]}},
             "steps": [{"name": "mine", "communicator": "a", "algorithm": "ring", "bytes": MiB},
                       {"name": "theirs", "communicator": "b", "algorithm": "ring", "bytes": MiB,
                        "background": True}]}
    f = run_job(job_from_dict(table), alone=False).fields
    rows = {s["step"]: s for s in f["steps"]}
    assert rows["theirs"]["undisturbed_s"] is None and rows["theirs"]["background"]
    assert f["makespan_s"] == pytest.approx(2 * (L + MiB / B), rel=1e-12)             # shared uplink
    assert f["undisturbed_makespan_s"] == pytest.approx(2 * (L + MiB / 2 / B), rel=1e-12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["leaf0<->spine0", "leaf0->spine1", "spine1->leaf1", "n1/nic0->leaf0"]),
                          st.floats(0.0, 3e-4), st.sampled_from([0.0, 0.1, 0.5, 0.9])), min_size=1, max_size=3))
def test_random_faults_are_deterministic_verified_and_never_faster(faults):
    # at most one failure, on a link with a spare route (oversubscription 1: two spines)
    seen, table = set(), []
    for link, at, cap in faults:
        if cap == 0 and (seen or link == "n1/nic0->leaf0"):
            cap = 0.5
        if cap == 0:
            seen.add(link)
        table.append({"link": link, "at": at, "capacity": cap})
    a = ring(fat(1), colour=[0, 0, 0, 0], faults=table).fields
    b = ring(fat(1), colour=[0, 0, 0, 0], faults=table).fields
    assert a["makespan_s"] == b["makespan_s"] and a["verified"]
    assert a["makespan_s"] >= a["undisturbed_makespan_s"] * (1 - 1e-12)
