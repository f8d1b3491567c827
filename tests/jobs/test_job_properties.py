"""Property: random mixes of 1-3 collectives (reductions, gathers, all-to-all and MoE
alltoallv) on random communicator splits of 4-8 ranks all
finish, every collective verifies, dependencies hold per step, and the times are
deterministic (the same job twice: bit-identical times)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcollective.jobs import job_from_dict, run_job

ALGORITHMS = [("allreduce", "ring"), ("allreduce", "binomial-tree"), ("allgather", "ring"),
              ("reduce-scatter", "ring"), ("reduce-scatter", "direct"), ("broadcast", "binomial-tree"),
              ("alltoall", "pairwise"), ("alltoall", "bruck"), ("alltoallv", "direct"), ("alltoallv", "nccl"),
              ("alltoallv", "pairwise")]


@st.composite
def jobs(draw):
    ranks = draw(st.integers(4, 8))
    n = draw(st.integers(1, 3))
    comms, steps = {}, []
    for i in range(n):
        colours = draw(st.lists(st.integers(0, 2), min_size=ranks, max_size=ranks))
        comms[f"c{i}"] = {"rule": "split", "colour": colours,
                          "key": draw(st.lists(st.integers(0, 3), min_size=ranks, max_size=ranks))}
        collective, algorithm = draw(st.sampled_from(ALGORITHMS))
        after = draw(st.lists(st.sampled_from([f"s{j}" for j in range(i)]), unique=True)) if i else []
        if collective == "alltoallv":   # a seeded MoE gate per group (top-1: a group may be one rank)
            size = {"moe": f"tokens={draw(st.integers(1, 6))},hidden={2 * draw(st.integers(1, 4))},topk=1,"
                           f"skew={draw(st.sampled_from([0, 1]))}"}
        else:
            size = {"elements": draw(st.integers(8, 96))}
        steps.append({"name": f"s{i}", "communicator": f"c{i}", "collective": collective, "algorithm": algorithm,
                      **size, "after": after,
                      "compute": draw(st.sampled_from([0.0, 1e-6])), "repeat": draw(st.integers(1, 2))})
    return {"topology": "fat-tree", "nodes": ranks, "topology_opts": {"hosts_per_leaf": 2, "oversubscription": 2},
            "seed": draw(st.integers(1, 5)), "communicators": comms, "steps": steps}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs())
def test_random_mixes_finish_verify_and_are_deterministic(table):
    first = run_job(job_from_dict(table), alone=False).fields
    again = run_job(job_from_dict(table), alone=False).fields
    times = [(c["step"], c["repeat"], c["group"], c["start_s"], c["end_s"]) for c in first["collectives"]]
    assert times == [(c["step"], c["repeat"], c["group"], c["start_s"], c["end_s"]) for c in again["collectives"]]
    groups = {name: len(set(c for c in t["colour"])) for name, t in table["communicators"].items()}
    assert len(first["collectives"]) == sum(s["repeat"] * groups[s["communicator"]] for s in table["steps"])
    assert all(c["verification"] for c in first["collectives"])
    steps = {(s["step"], s["repeat"]): s for s in first["steps"]}
    for s in table["steps"]:
        for rep in range(s["repeat"]):
            row = steps[(s["name"], rep)]
            assert row["end_s"] >= row["start_s"] >= 0.0
            if rep:   # a step's repeats run one after the other on every rank
                assert row["start_s"] >= steps[(s["name"], rep - 1)]["start_s"] + s["compute"]
            for dep in s["after"]:   # every rank starts after the step it waits for started
                d = next(t for t in table["steps"] if t["name"] == dep)
                j = rep if d["repeat"] == s["repeat"] else d["repeat"] - 1
                assert row["start_s"] >= steps[(dep, j)]["start_s"]
    assert first["makespan_s"] == max(c["end_s"] for c in first["collectives"])
