"""The (collective, algorithm) registry: every collective's algorithms, registration defaults,
options checked by name, and every algorithm's ``messages`` hook against the messages real runs send."""

import pytest

from simcollective.algorithms import load_all, register
from simcollective.algorithms.registry import ALGORITHMS, algorithms_for, COLLECTIVES, get_algorithm, REGISTRY
from simcollective.data.collectives import COLLECTIVES as DEFS
from simcollective.errors import UserInputError
from simcollective.patterns.dense import allgather_messages, recursive_doubling_messages, two_level_messages
from simcollective.simulate import expected_messages, resolve, run, RunConfig
from tests.conftest import EXPECTED


# -- registry ------------------------------------------------------------------------------------
def test_every_collective_has_its_algorithms():
    load_all()
    for coll, names in EXPECTED.items():
        assert set(algorithms_for(coll)) == names, coll
    assert set(COLLECTIVES) == set(DEFS)
    # allreduce algorithms keep their old table and keys
    assert ALGORITHMS["ring"] is REGISTRY[("allreduce", "ring")]
    assert get_algorithm("ring", "allgather") is not get_algorithm("ring")


def test_register_defaults_to_allreduce_and_unknown_names_list_the_collective():
    @register("test-only-x", kind="dense")
    def x(comm, x):
        """A test algorithm."""
        return x

    try:
        assert REGISTRY[("allreduce", "test-only-x")].collective == "allreduce"
        assert "test-only-x" in ALGORITHMS
    finally:
        ALGORITHMS.pop("test-only-x")
    assert ("allreduce", "test-only-x") not in REGISTRY
    with pytest.raises(UserInputError, match=r"'rabenseifner' implements: allreduce\); allgather algorithms: bruck, "):
        get_algorithm("rabenseifner", "allgather")
    with pytest.raises(UserInputError, match="unknown collective 'gather'"):
        get_algorithm("ring", "gather")


def test_options_are_checked_by_name_once():
    algo = get_algorithm("ring-ring", "allgather")
    with pytest.raises(UserInputError, match="--group-size 3 does not divide the 8 ranks"):
        algo.check(8, group_size=3)
    with pytest.raises(UserInputError, match="--chunk-size 0 must be a positive integer"):
        get_algorithm("ring", "reduce-scatter").check(4, chunk_size=0)
    with pytest.raises(UserInputError, match="--allgather 'tree' must be one of"):
        get_algorithm("sparse-streams", "allgather").check(4, allgather="tree")


load_all()

# smpi-* refuse some of these runs as SMPI does: their hooks are checked in tests/algorithms/test_smpi.py
HOOKED = sorted(key for key, a in REGISTRY.items() if a.messages is not None and not key[1].startswith("smpi-"))

PS = (2, 3, 4, 5, 6, 8, 12)


def _nccl_configs(algo):
    """nccl-* runs, each with the message count its hook expects: one and several DGX H100s
    (NVLS, NVLSTree on two), ABCI and DGX-1V (PCIe, cube-mesh), a partial node; small and
    large sizes, a forced protocol and channel count."""
    out = []
    rooted = algo.collective in ("broadcast", "reduce")
    for topo, nodes, gpus in [("dgx-h100", 1, None), ("dgx-h100", 2, None), ("dgx-h100", 1, 5),
                              ("abci", 3, 10), ("dgx1-v100", 2, None)]:
        # alltoallv's NCCL chunks a block into p2p chunks: 2^26 elements would be ~1e5 messages
        for elements in (1000, 3 * 2**20) + (() if algo.collective == "alltoallv" else (2**26,)):
            for opts in ({}, {"protocol": "ll", "channels": 3}):
                cfg = RunConfig(topology=topo, nodes=nodes, gpus=gpus, algorithm=algo.name, elements=elements,
                                collective=algo.collective, options=opts, verify="symbolic",
                                root=3 if rooted else None)
                try:
                    want = expected_messages(resolve(cfg))
                except UserInputError:
                    continue    # what NCCL cannot run there: NVLS without NVLink SHARP, LL on NVLS
                out.append((cfg, want))
    return out


def _configs(algo, P):
    """Runs of ``algo`` on P ranks: one GPU per host and four per node (ranks spread over
    servers), fewer elements than ranks, small chunks, big vectors (default and automatic
    chunking), another root, every allgather variant, group sizes."""
    sparse = algo.kind == "sparse"
    base = dict(algorithm=algo.name, collective=algo.collective)
    cases = [
        dict(topology="fat-tree", nodes=P, elements=1000),
        dict(topology="abci", nodes=3, gpus=P, elements=3),
        dict(topology="abci", nodes=3, gpus=P, elements=70000, options={"chunk_size": 20000}),
    ]
    if not sparse:
        cases.append(dict(topology="abci", nodes=3, gpus=P, elements=3 * 2**20, verify="symbolic"))
    if algo.collective in ("broadcast", "reduce"):
        cases.append(dict(topology="abci", nodes=3, gpus=P, elements=300000, root=P - 1))
    if "allgather" in algo.options:
        cases += [dict(topology="fat-tree", nodes=P, elements=1000, options={"allgather": v})
                  for v in ("direct", "ring", "recursive-doubling")]
    out = []
    for case in cases:
        opts = {k: v for k, v in case.pop("options", {}).items() if k in algo.options}
        if sparse:
            case["k"] = max(1, case["elements"] // 4)
        if "group_size" in algo.options:
            for L in (1, 2, P):
                if P % L == 0:
                    out.append(RunConfig(**base, **case, options={**opts, "group_size": L}))
            continue
        out.append(RunConfig(**base, **case, options=opts))
    return out


@pytest.mark.parametrize("key", HOOKED, ids=["/".join(k) for k in HOOKED])
def test_messages_hook_equals_the_runs_messages(key):
    algo = REGISTRY[key]
    checked = 0
    if algo.name.startswith("nccl"):
        for cfg, want in _nccl_configs(algo):
            assert want == run(cfg)["messages"], cfg
            checked += 1
        assert checked >= 6
        return
    for P in PS:
        for cfg in _configs(algo, P):
            if algo.name == "gtopk" and P & (P - 1):
                continue  # powers of two only
            plan = resolve(cfg)
            want = expected_messages(plan)
            assert want == run(cfg)["messages"], (P, cfg)
            checked += 1
    assert checked >= (6 if algo.name == "gtopk" else 12)


def test_every_algorithm_declares_its_messages():
    assert sorted("/".join(k) for k, a in REGISTRY.items() if a.messages is None) == []


def test_closed_forms_by_hand():
    # p' = 8, rem = 4: 8 x 3 exchanges + 4 folds + 4 unfolds
    assert recursive_doubling_messages(12) == 32
    assert recursive_doubling_messages(8) == 24 and recursive_doubling_messages(1) == 0
    assert allgather_messages(5, "ring") == allgather_messages(5, "direct") == 20
    assert allgather_messages(5, "recursive-doubling") == 4 * 2 + 2
    # 12 ranks in groups of 3 (M = 4): every rank 2 intra + 3 inter messages per pass
    assert two_level_messages(12, 3) == 60 and two_level_messages(12, 3, passes=2) == 120
