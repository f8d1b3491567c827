"""Collectives beyond allreduce: the (collective, algorithm) registry, alpha-beta closed forms
on contention-free meshes for every algorithm, verified results for many rank counts,
dtypes and roots, broken algorithms caught (real and size-only data), nccl-tests sizes and
bus-bandwidth factors, bad input, random clusters, and ``simcollective bench`` end to end."""

import json
import math

import pytest
from conftest import mesh_graph, two_level_mesh
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import random_cluster

import topologies
from simcollective.algorithms import load_all, register
from simcollective.algorithms.registry import ALGORITHMS, COLLECTIVES, REGISTRY, algorithms_for, get_algorithm
from simcollective.cli import main
from simcollective.data.collectives import COLLECTIVES as DEFS
from simcollective.errors import UserInputError, VerificationError
from simcollective.simulate import RunConfig, run

ALPHA, BW = 1e-6, 1e9          # mesh_graph defaults
BETA = 1 / BW
E = 4                          # int32 bytes

EXPECTED = {
    "allgather": {"ring", "recursive-doubling", "bruck", "direct", "ring-ring", "sparse-streams",
                  "nccl-ring", "nccl-nvls", "nccl"},
    "reduce-scatter": {"ring", "recursive-halving", "direct", "hierarchical", "nccl-ring", "nccl-nvls", "nccl"},
    "broadcast": {"binomial-tree", "pipelined-chain", "scatter-allgather", "ring", "nccl-ring", "nccl"},
    "reduce": {"binomial-tree", "reduce-scatter-gather", "pipelined-chain", "nccl-ring", "nccl"},
    "alltoall": {"pairwise", "bruck", "direct", "hierarchical"},
}


def sim(collective, algorithm, P, count, graph=None, dtype="int32", verify="full", root=None, **options):
    graph = mesh_graph(P, BW, ALPHA) if graph is None else graph
    cfg = RunConfig(topology="test", collective=collective, algorithm=algorithm, elements=count, dtype=dtype,
                    gpus=P, options=options, verify=verify, root=root)
    return run(cfg, graph=graph)


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


def test_default_group_size_is_not_blamed_on_the_user():
    g = two_level_mesh(2, 4)          # default group size 4
    cfg = RunConfig(topology="t", collective="alltoall", algorithm="hierarchical", elements=3, gpus=6)
    with pytest.raises(UserInputError) as exc:
        run(cfg, graph=g)
    assert "the topology's group size 4 (GPUs per node) does not divide the 6 ranks" in str(exc.value)
    assert "--group-size 4" not in str(exc.value)


# -- sizes and bus bandwidth ------------------------------------------------------------------------
def test_nccl_tests_counts_and_factors():
    ag, rs, a2a, ar, bc = (DEFS[c] for c in ("allgather", "reduce-scatter", "alltoall", "allreduce", "broadcast"))
    # per-rank share floor(S / (P e)) rounded down to 16 bytes
    assert ag.count_from_bytes(1 << 20, 16, 4) == 16384
    assert rs.count_from_bytes(1000, 3, 4) == 80          # 83 -> 80 (320 bytes)
    assert a2a.count_from_bytes(1000, 3, 2) == 160        # 166 -> 160
    assert ag.count_from_bytes(255, 16, 4) == 0
    assert ar.count_from_bytes(1001, 8, 4) == 250
    assert ag.size_bytes(64, 16, 4) == 4096 and bc.size_bytes(64, 16, 4) == 256
    assert ar.busbw_factor(8) == 2 * 7 / 8
    for c in ("allgather", "reduce-scatter", "alltoall"):
        assert DEFS[c].busbw_factor(8) == 7 / 8
    for c in ("broadcast", "reduce"):
        assert DEFS[c].busbw_factor(8) == 1.0


def test_report_sizes_and_bandwidths_follow_nccl_tests():
    P, c = 4, 2**14
    rep = sim("allgather", "ring", P, c)
    assert rep["bytes"] == P * c * E and rep["count"] == c and rep["root"] == -1
    assert rep["algbw"] == pytest.approx(P * c * E / rep["time_s"])
    assert rep["busbw"] == pytest.approx(rep["algbw"] * (P - 1) / P)
    rep = sim("broadcast", "binomial-tree", P, c, root=2)
    assert rep["bytes"] == c * E and rep["root"] == 2 and rep["busbw"] == rep["algbw"]
    cfg = RunConfig(topology="t", collective="alltoall", algorithm="pairwise", bytes=1000, gpus=3, dtype="float16")
    rep = run(cfg, graph=mesh_graph(3))
    assert rep["count"] == 160 and rep["bytes"] == 960


# -- closed forms on a contention-free mesh ------------------------------------------------------------
C = 2**15                       # elements per block: 128 KiB int32 messages (rendezvous)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
def test_allgather_closed_forms(P):
    b = C * E                   # one block = S / P
    lg = math.ceil(math.log2(P))
    assert sim("allgather", "ring", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("allgather", "bruck", P, C)["time_s"] == pytest.approx(lg * ALPHA + (P - 1) * b * BETA, rel=1e-12)
    assert sim("allgather", "direct", P, C)["time_s"] == pytest.approx(ALPHA + b * BETA, rel=1e-12)
    if P & (P - 1) == 0:
        rd = sim("allgather", "recursive-doubling", P, C)["time_s"]
        assert rd == pytest.approx(lg * ALPHA + (P - 1) * b * BETA, rel=1e-12)
    rep = sim("allgather", "ring", P, C, chunk_size=b // 2)
    assert rep["time_s"] == pytest.approx((P - 1) * (2 * ALPHA + b * BETA), rel=1e-12)
    assert rep["messages"] == 2 * P * (P - 1)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
def test_reduce_scatter_closed_forms(P):
    b = C * E
    assert sim("reduce-scatter", "ring", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("reduce-scatter", "direct", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    if P & (P - 1) == 0:
        rh = sim("reduce-scatter", "recursive-halving", P, C)["time_s"]
        assert rh == pytest.approx(math.log2(P) * ALPHA + (P - 1) * b * BETA, rel=1e-12)


@pytest.mark.parametrize("P", [2, 4, 8, 16])
def test_alltoall_closed_forms(P):
    b = C * E
    S = P * b
    assert sim("alltoall", "pairwise", P, C)["time_s"] == pytest.approx((P - 1) * (ALPHA + b * BETA), rel=1e-12)
    assert sim("alltoall", "direct", P, C)["time_s"] == pytest.approx(ALPHA + b * BETA, rel=1e-12)
    rep = sim("alltoall", "bruck", P, C)
    # ceil(log2 P) rounds of S / 2 bytes
    assert rep["time_s"] == pytest.approx(math.log2(P) * (ALPHA + S / 2 * BETA), rel=1e-12)
    assert rep["messages"] == P * math.log2(P)


@pytest.mark.parametrize("groups,L", [(2, 2), (3, 4), (2, 3)])
def test_hierarchical_closed_forms(groups, L):
    intra, inter = (1e10, 1e-6), (1e9, 5e-6)
    g = two_level_mesh(groups, L, intra, inter)
    ai, bi, ae, be = intra[1], 1 / intra[0], inter[1], 1 / inter[0]
    P, M, b = groups * L, groups, C * E
    t = sim("allgather", "ring-ring", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((M - 1) * (ae + b * be) + (L - 1) * (ai + M * b * bi), rel=1e-12)
    t = sim("reduce-scatter", "hierarchical", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((L - 1) * (ai + M * b * bi) + (M - 1) * (ae + b * be), rel=1e-12)
    t = sim("alltoall", "hierarchical", P, C, graph=g, group_size=L)["time_s"]
    assert t == pytest.approx((L - 1) * (ai + M * b * bi) + (M - 1) * (ae + L * b * be), rel=1e-12)


@pytest.mark.parametrize("P", [2, 3, 5, 8])
@pytest.mark.parametrize("root", ["first", "last"])
def test_rooted_closed_forms(P, root):
    r = 0 if root == "first" else P - 1
    S = 8 * C * E               # 1 MiB vector
    lg = math.ceil(math.log2(P))
    for coll in ("broadcast", "reduce"):
        t = sim(coll, "binomial-tree", P, 8 * C, root=r)["time_s"]
        assert t == pytest.approx(lg * (ALPHA + S * BETA), rel=1e-12), coll
        for k in (1, 4):
            t = sim(coll, "pipelined-chain", P, 8 * C, root=r, chunk_size=S // k)["time_s"]
            assert t == pytest.approx((P - 2 + k) * (ALPHA + S / k * BETA), rel=1e-12), (coll, k)
    # NCCL's ring: the chain in 512 KiB steps
    t = sim("broadcast", "ring", P, 8 * C, root=r)["time_s"]
    assert t == pytest.approx(P * (ALPHA + S / 2 * BETA), rel=1e-12)
    if P & (P - 1) == 0:
        t = sim("reduce", "reduce-scatter-gather", P, 8 * C, root=r)["time_s"]
        assert t == pytest.approx(2 * lg * ALPHA + 2 * (P - 1) / P * S * BETA, rel=1e-12)


@pytest.mark.parametrize("P", [2, 4, 8])
def test_scatter_allgather_broadcast_closed_form(P):
    """Binomial scatter (log2 P alpha + (P-1) S/(P beta)) then ring allgather ((P-1)(alpha +
    S/(P beta))), P a power of two."""
    S = 8 * C * E
    t = sim("broadcast", "scatter-allgather", P, 8 * C, root=P - 1)["time_s"]
    expected = math.log2(P) * ALPHA + (P - 1) / P * S * BETA + (P - 1) * (ALPHA + S / P * BETA)
    assert t == pytest.approx(expected, rel=1e-12)
    # cheaper than the binomial tree for large vectors from 4 ranks on
    if P >= 4:
        assert t < sim("broadcast", "binomial-tree", P, 8 * C)["time_s"]


# -- correctness: P x algorithms x dtypes x roots -------------------------------------------------------
def _group(P):
    return max(d for d in (1, 2, 3, 4) if P % d == 0)


# nccl-* run NCCL's model of a hardware preset (GPU models, NVSwitch): tested on presets in
# tests/test_nccl_other_collectives.py
CASES = [(coll, name) for coll, names in sorted(EXPECTED.items()) for name in sorted(names)
         if name != "sparse-streams" and not name.startswith("nccl")]


@pytest.mark.parametrize("coll,name", CASES)
def test_every_algorithm_verifies(coll, name):
    algo = get_algorithm(name, coll)
    for P in (1, 2, 3, 5, 8, 16, 24):
        g = mesh_graph(P)
        for dtype in (("int32", "float16", "float32", "float64") if P <= 5 else ("int32", "float32")):
            roots = (0, P - 1, P // 2) if DEFS[coll].rooted else (None,)
            for root in roots:
                opts = {"group_size": _group(P)} if "group_size" in algo.options else {}
                for count in (1, 7):
                    rep = sim(coll, name, P, count, graph=g, dtype=dtype, root=root, **opts)
                    assert rep["verified"] and rep["ranks"] == P
        rep = sim(coll, name, P, 5, graph=g, verify="symbolic", root=(P - 1) if DEFS[coll].rooted else None,
                  **({"group_size": _group(P)} if "group_size" in algo.options else {}))
        assert rep["mode"] == "symbolic"


@pytest.mark.parametrize("variant", ["direct", "ring", "recursive-doubling"])
@pytest.mark.parametrize("P", [1, 3, 8])
def test_sparse_allgather_verifies(variant, P):
    cfg = RunConfig(topology="t", collective="allgather", algorithm="sparse-streams", elements=500, gpus=P,
                    density=0.05, options={"allgather": variant}, dtype="float32")
    rep = run(cfg, graph=mesh_graph(P))
    assert rep["verified"] and rep["k"] == 25 and rep["kind"] == "sparse"
    if P > 1 and variant == "ring":
        assert rep["messages"] == P * (P - 1)


# -- broken algorithms fail verification ------------------------------------------------------------------
def _broken(collective, name, body):
    register(name, kind="dense", collective=collective)(body)


def test_broken_algorithms_are_caught():
    from simcollective.patterns.dense import split

    def swapped(comm, x):
        """Allgather with two blocks swapped."""
        items = yield from __import__("simcollective.patterns.doubling", fromlist=["x"]).allgather(comm, x, "direct")
        items[0], items[1] = items[1], items[0]
        return items

    def own_data(comm, x, *, root=0):
        """Broadcast that keeps every rank's own vector."""
        yield comm.compute(0)
        return x

    def no_add(comm, x):
        """Reduce-scatter that forgets one rank's contribution."""
        P, r = comm.size, comm.rank
        blocks = split(x, P)
        acc = blocks[r]
        for i in range(1, P - 1):
            got = yield comm.sendrecv((r + i) % P, blocks[(r + i) % P], (r - i) % P)
            acc = yield comm.add(acc, got)
        for i in range(P - 1, P):     # the last block is received but not added
            yield comm.sendrecv((r + i) % P, blocks[(r + i) % P], (r - i) % P)
        return acc

    def keep_own(comm, x):
        """Alltoall that returns its own input blocks."""
        yield comm.compute(0)
        return split(x, comm.size)

    cases = [("allgather", "test-swapped", swapped, "rank 0"), ("broadcast", "test-own", own_data, "rank 1"),
             ("reduce-scatter", "test-no-add", no_add, "rank 0"), ("alltoall", "test-keep", keep_own, "rank 0")]
    try:
        for coll, name, body, who in cases:
            _broken(coll, name, body)
            for verify in ("full", "symbolic"):
                with pytest.raises(VerificationError, match=who):
                    sim(coll, name, 4, 6, verify=verify)
    finally:
        for coll, name, _, _ in cases:
            REGISTRY.pop((coll, name), None)


# -- bad input -------------------------------------------------------------------------------------
def test_bad_roots_and_sizes():
    with pytest.raises(UserInputError, match=r"--root 4 is out of range: the run has ranks 0..3"):
        sim("broadcast", "binomial-tree", 4, 8, root=4)
    with pytest.raises(UserInputError, match="--root applies to broadcast and reduce, not to allgather"):
        sim("allgather", "ring", 4, 8, root=0)
    cfg = RunConfig(topology="t", collective="allgather", algorithm="ring", bytes=100, gpus=8)
    with pytest.raises(UserInputError, match="gives 0 float32 elements per rank .* multiple of 16 bytes"):
        run(cfg, graph=mesh_graph(8))


# -- random clusters -------------------------------------------------------------------------------------
ALL_DENSE = [(c, n) for c, n in CASES]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_cluster(), st.sampled_from(ALL_DENSE), st.integers(1, 300), st.sampled_from(["int32", "float32"]),
       st.sampled_from(["ideal", "cm02", "smpi"]), st.integers(0, 100))
def test_collectives_verify_on_random_clusters(g, case, count, dtype, profile, rootseed):
    coll, name = case
    P = len(topologies.gpus(g))
    algo = get_algorithm(name, coll)
    root = rootseed % P if DEFS[coll].rooted else None
    opts = {"group_size": g.graph["gpus_per_node"]} if "group_size" in algo.options else {}
    cfg = RunConfig(topology="random", collective=coll, algorithm=name, elements=count, dtype=dtype,
                    profile=profile, root=root, options=opts)
    rep = run(cfg, graph=g)
    assert rep["verified"] and rep["ranks"] == P
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-9, abs=1e-15)
    again = run(cfg, graph=g)
    assert again["time_s"] == rep["time_s"] and again["messages"] == rep["messages"]


# -- CLI ------------------------------------------------------------------------------------------------
def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_algorithms_lists_every_collective(capsys):
    code, out, _ = run_cli(capsys, "algorithms")
    assert code == 0
    for coll, names in EXPECTED.items():
        section = out.split(f"\n{coll} (dense):")[1].split(" (sparse):")[0]
        for n in names - {"sparse-streams"}:
            assert f"  {n} " in section
    assert "allgather (sparse):\n  sparse-streams" in out


def test_cli_run_collective(capsys):
    code, out, _ = run_cli(capsys, "run", "--collective", "reduce", "--algorithm", "binomial-tree", "--root", "3",
                           "--bytes", "4K", "--topology", "abci", "--nodes", "1", "--json", "-")
    assert code == 0
    js = json.loads(out)
    assert js["collective"] == "reduce" and js["root"] == 3 and js["elements"] == 1024 and js["bytes"] == 4096


def test_cli_run_sparse_allgather(capsys):
    code, out, err = run_cli(capsys, "run", "--collective", "allgather", "--algorithm", "sparse-streams",
                             "--topology", "abci", "--elements", "4096", "--density", "1/128", "--allgather", "ring")
    assert code == 0, err
    assert "sparse-streams allgather" in out and "result density 0.0078" in out


def test_cli_bench_table(capsys):
    code, out, err = run_cli(capsys, "bench", "--collective", "allgather", "--topology", "abci", "--nodes", "1",
                             "-b", "8", "-e", "64K", "-f", "4")
    assert code == 0, err
    lines = out.splitlines()
    assert "# Collective test starting: all_gather_perf" in lines
    assert lines[-1] == "# Collective test concluded: all_gather_perf"
    head = [i for i, ln in enumerate(lines) if ln.startswith("#       size")][0]
    assert lines[head] == ("#       size         count      type   redop    root     time   algbw   busbw #wrong"
                           "     time   algbw   busbw #wrong")
    rows = [ln for ln in lines if not ln.startswith("#")]
    # 8, 32, 128, ..., 32K, 128K > 64K: 7 sizes; per-rank share rounded to 16 bytes (P = 4)
    assert [int(r.split()[0]) for r in rows] == [0, 0, 128, 512, 2048, 8192, 32768]
    for r in rows:
        assert len(r) == 12 + 14 + 10 + 8 + 8 + 2 * (9 + 8 + 8 + 8)
        f = r.split()
        assert f[2:5] == ["float", "none", "-1"] and f[8] == "0" and f[12] == "0"
        size, t, algbw, busbw = int(f[0]), float(f[5]), float(f[6]), float(f[7])
        if size:
            assert algbw == pytest.approx(size / (t * 1e-6) / 1e9, abs=0.01)
            assert busbw == pytest.approx(algbw * 3 / 4, abs=0.01)


def test_cli_bench_dgx_h100_allgather_verified(capsys):
    """The every-collective comparison command, up to 4M: every row verified (#wrong 0), the
    count and size nccl-tests would use for 16 ranks."""
    code, out, err = run_cli(capsys, "bench", "--collective", "allgather", "--topology", "dgx-h100", "--nodes", "2",
                             "-b", "8", "-e", "4M", "-f", "4")
    assert code == 0, err
    assert "nGpus 16 minBytes 8 maxBytes 4194304 step: 4(factor)" in out
    rows = [ln.split() for ln in out.splitlines() if not ln.startswith("#")]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(0, 0), (0, 0), (0, 0), (512, 8), (2048, 32), (8192, 128),
                                                      (32768, 512), (131072, 2048), (524288, 8192), (2097152, 32768)]
    assert all(r[8] == "0" and r[12] == "0" for r in rows)
    times = [float(r[5]) for r in rows if int(r[1])]
    assert times == sorted(times) and times[0] > 0


def test_cli_bench_json_csv(capsys, tmp_path):
    csv_path = tmp_path / "rows.csv"
    code, out, _ = run_cli(capsys, "bench", "--collective", "broadcast", "-r", "2", "--topology", "abci",
                           "-b", "1K", "-e", "4K", "-f", "2", "--json", "-", "--csv", str(csv_path))
    assert code == 0
    rows = json.loads(out)
    assert [r["size"] for r in rows] == [1024, 2048, 4096]
    assert all(r["root"] == 2 and r["redop"] == "none" and r["wrong"] == 0 for r in rows)
    text = csv_path.read_text().splitlines()
    assert text[0].startswith("bytes,count,type,redop,root,time_s,algbw,busbw,wrong") and len(text) == 4


@pytest.mark.parametrize("argv,message", [
    (["--collective", "allgather", "--algorithm", "rabenseifner"], "allgather algorithms: bruck, direct"),
    (["--collective", "broadcast", "-r", "9"], "--root 9 is out of range"),
    (["--collective", "alltoall", "-r", "0"], "-r/--root applies to broadcast and reduce, not to alltoall"),
    (["-b", "1M", "-e", "8"], "-e 8 is below -b 1048576"),
    (["-b", "8", "-e", "1M", "-f", "1"], "-f 1 must be >= 2"),
    (["-b", "8", "-e", "1M", "-i", "0"], "-i 0 must be >= 1"),
    (["-d", "bfloat16"], "-d 'bfloat16' is not supported"),
    (["--collective", "gather"], "unknown collective 'gather'"),
])
def test_cli_bench_bad_input(capsys, argv, message):
    code, out, err = run_cli(capsys, "bench", "--topology", "abci", *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1


# -- sweeps ----------------------------------------------------------------------------------------
def test_sweep_ranges_and_collectives(tmp_path):
    from simcollective.sweeps import expand_grid, load_config, run_sweep

    cfg = {"fixed": {"topology": "abci", "collective": "allgather", "algorithm": "ring"},
           "grid": {"bytes": {"from": "1K", "to": "16K", "factor": 4}, "gpus": {"from": 2, "to": 4, "step": 2}}}
    points = expand_grid(cfg)
    assert [(p["bytes"], p["gpus"]) for p in points] == [(b, g) for b in (1024, 4096, 16384) for g in (2, 4)]
    df = run_sweep(cfg, tmp_path / "out.csv", workers=1, progress=False)
    assert df["ok"].all()
    assert sorted(df["bytes"]) == sorted([1024, 4096, 16384] * 2)
    assert set(df["count"]) == {128, 64, 512, 256, 2048, 1024}
    for bad, msg in [({"from": "8"}, "a range is"), ({"from": "8", "to": "4", "factor": 2}, "from <= to"),
                     ({"from": "8", "to": "64", "factor": 1}, "must be >= 2")]:
        with pytest.raises(UserInputError, match=msg):
            load_config({"fixed": {"algorithm": "ring"}, "grid": {"bytes": bad}})
