"""Jobs against closed forms: collectives on disjoint links take exactly their times alone,
two rings through one bottleneck run at half rate there, a step with ``compute = d``
starts exactly d after the step it waits for, and concurrent collectives on one
communicator keep their messages apart."""

import pytest

import simcollective as sc
from simcollective.jobs import job_from_dict, run_job

MiB = 2**20
#: 4 single-GPU hosts, 2 per leaf, one 12.5 GB/s uplink per leaf (oversubscription 2)
FAT = {"topology": "fat-tree", "nodes": 4, "topology_opts": {"hosts_per_leaf": 2, "oversubscription": 2}}
B = 12.5e9
#: the route host -> host across the spine: PCIe 7.5 us at each end, 4 cables of 26 ns,
#: two leaf crossings of 90 ns and a spine crossing of 400 ns
L = 2 * 7.5e-6 + 4 * 2.6e-8 + 2 * 9e-8 + 4e-7


def _job(machine, comms, steps, alone=True):
    return run_job(job_from_dict({**machine, "communicators": comms, "steps": steps}), alone=alone)


def _times(report, step):
    return [c["time_s"] for c in report.fields["collectives"] if c["step"] == step]


def test_tp_allreduces_inside_two_dgx_h100_nodes_take_exactly_their_times_alone():
    report = _job({"topology": "dgx-h100", "nodes": 2}, {"tp": {"rule": "tp", "size": 8}},
                  [{"name": "ar", "communicator": "tp", "algorithm": "ring", "bytes": 4 * MiB}])
    alone = [sc.run(topology="dgx-h100", nodes=2, algorithm="ring", bytes=4 * MiB,
                    placement=[f"n{node}/gpu{i}" for i in range(8)])["time_s"] for node in (0, 1)]
    assert _times(report, "ar") == alone                       # bit-identical
    assert [c["slowdown"] for c in report.fields["collectives"]] == [1.0, 1.0]


def test_nccl_rings_inside_two_nodes_take_their_times_alone_to_the_solver_tolerance():
    # NCCL's channels put over 64 flows in flight: the engine moves the active flows into its
    # array store (Tuning.bulk_min, walk_limit), alone and in the job alike; in the job the
    # store holds both nodes' flows, whose incremental sums round differently, so node 1's
    # time may differ from alone in the last bits (with the array store off, as with the
    # plain ring, the times are bit-identical)
    report = _job({"topology": "dgx-h100", "nodes": 2}, {"tp": {"rule": "tp", "size": 8}},
                  [{"name": "ar", "communicator": "tp", "algorithm": "nccl-ring", "bytes": 4 * MiB}])
    alone = [sc.run(topology="dgx-h100", nodes=2, algorithm="nccl-ring", bytes=4 * MiB,
                    placement=[f"n{node}/gpu{i}" for i in range(8)])["time_s"] for node in (0, 1)]
    assert _times(report, "ar") == pytest.approx(alone, rel=1e-12)
    assert _times(report, "ar")[0] == alone[0]


def test_two_rings_under_their_own_leaves_take_exactly_their_times_alone():
    report = _job(FAT, {"pair": {"rule": "tp", "size": 2}},
                  [{"name": "ar", "communicator": "pair", "algorithm": "ring", "bytes": MiB}])
    alone = [sc.run(**FAT, algorithm="ring", bytes=MiB, placement=p)["time_s"] for p in ([0, 1], [2, 3])]
    assert _times(report, "ar") == alone


def test_two_rings_across_one_leaf_spine_link_share_it_at_half_rate():
    # rings (h0, h2) and (h1, h3): every message of both crosses leaf0 -> spine0 -> leaf1 (or
    # back), so each runs at B / 2 there. A 2-rank ring allreduce of n bytes is two steps of
    # n / 2 bytes: alone 2 (L + n / 2B), together 2 (L + n / B)
    n = MiB
    report = _job(FAT, {"cross": {"rule": "split", "colour": [0, 1, 0, 1]}},
                  [{"name": "ar", "communicator": "cross", "algorithm": "ring", "bytes": n}])
    alone = [c["alone_s"] for c in report.fields["collectives"]]
    assert alone == pytest.approx([2 * (L + n / 2 / B)] * 2, rel=1e-12)
    assert _times(report, "ar") == pytest.approx([2 * (L + n / B)] * 2, rel=1e-12)
    step = report.fields["steps"][0]
    assert step["slowdown"] == pytest.approx((L + n / B) / (L + n / 2 / B), rel=1e-12)
    assert report.fields["top_links"][0]["link"] in ("leaf0->spine0", "leaf1->spine0", "spine0->leaf0",
                                                    "spine0->leaf1")


def test_a_step_with_compute_d_starts_exactly_d_after_the_step_it_waits_for():
    d = 0.002
    report = _job(FAT, {"pair": {"rule": "tp", "size": 2}, "all": {"rule": "tp", "size": 4}}, [
        {"name": "a", "communicator": "pair", "algorithm": "ring", "bytes": MiB, "repeat": 2},
        {"name": "b", "communicator": "all", "algorithm": "ring", "bytes": MiB, "after": ["a"], "compute": d,
         "repeat": 2},
        {"name": "c", "communicator": "all", "collective": "allgather", "algorithm": "ring", "bytes": MiB,
         "after": ["b"]}], alone=False)
    steps = {(s["step"], s["repeat"]): s for s in report.fields["steps"]}
    # the two pairs finish together; b waits for both (its group holds every rank)
    assert steps[("a", 0)]["start_s"] == 0.0
    assert steps[("b", 0)]["start_s"] == steps[("a", 0)]["end_s"] + d
    assert steps[("b", 1)]["start_s"] == max(steps[("a", 1)]["end_s"], steps[("b", 0)]["end_s"]) + d
    assert steps[("a", 1)]["start_s"] == steps[("a", 0)]["end_s"]          # repeats run one after the other
    assert steps[("c", 0)]["start_s"] == steps[("b", 1)]["end_s"]          # repeat counts differ: after b's last
    assert report.fields["makespan_s"] == steps[("c", 0)]["end_s"]


def test_steps_without_a_dependency_overlap_and_keep_their_messages_apart():
    # two allreduces of different sizes on the same communicator at once: a message matched
    # across them would carry the other's data and fail verification
    report = _job(FAT, {"all": {"rule": "tp", "size": 4}}, [
        {"name": "small", "communicator": "all", "algorithm": "ring", "elements": 1000},
        {"name": "large", "communicator": "all", "algorithm": "recursive-doubling", "elements": 4000}])
    rows = {c["step"]: c for c in report.fields["collectives"]}
    assert rows["small"]["start_s"] == rows["large"]["start_s"] == 0.0
    assert rows["small"]["end_s"] > 0 and rows["large"]["end_s"] > 0
    assert all(c["verification"] for c in rows.values())


def test_per_communicator_totals_and_json():
    report = _job(FAT, {"pair": {"rule": "tp", "size": 2}}, [
        {"name": "a", "communicator": "pair", "algorithm": "ring", "bytes": MiB, "repeat": 3, "compute": 1e-3}],
        alone=False)
    comm = report.fields["communicators"]["pair"]
    steps = report.fields["steps"]
    assert comm["collectives"] == 6 and comm["groups"] == 2
    assert comm["time_s"] == sum(s["time_s"] for s in steps)
    assert comm["busy_s"] == pytest.approx(sum(s["end_s"] - s["start_s"] for s in steps), rel=1e-12)
    assert comm["bytes"] == 6 * MiB
    js = report.to_json()
    assert js["steps"][0]["slowdown"] is None and js["verified"] is True
