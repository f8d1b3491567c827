"""Sparse allreduce algorithms: verified results on the preset topologies for many rank counts
and densities, message sizes against the expected union sizes of random index sets, a
Hypothesis property test, gTop-k's definition, resparsification, phases, study sizing of the
sparse allgathers."""

import functools
import math

import numpy as np
import pytest
from hypothesis import given, HealthCheck, settings, strategies as st

import topologies
from simcollective import data
from simcollective.algorithms import ALGORITHMS, load_all, register
from simcollective.algorithms.allreduce.sparse_ring_ring import resparsify_k
from simcollective.algorithms.allreduce.ssar_split_allgather import StudyPairs
from simcollective.data import Parts
from simcollective.data.sparse import SparseStream
from simcollective.errors import UserInputError, VerificationError
from simcollective.patterns.sparse import ring_pass, split_stream
from simcollective.simulate import run_allreduce, RunConfig
from tests.conftest import expected_check, mesh_graph, two_level_mesh


SPARSE = ["sparse-ring", "sparse-ring-ring", "ssar-recursive-doubling", "ssar-split-allgather",
          "dsar-split-allgather", "topk-allgather", "gtopk"]


# (algorithm, options) of every variant; group_size of sparse-ring-ring is set per P
VARIANTS = [
    ("sparse-ring", {}),
    ("sparse-ring", {"densify": "upper-bound"}),
    ("sparse-ring-ring", {}),
    ("sparse-ring-ring", {"densify": "upper-bound"}),
    ("sparse-ring-ring", {"resparsify": True}),
    ("ssar-recursive-doubling", {}),
    ("ssar-recursive-doubling", {"densify": "upper-bound"}),
    ("ssar-split-allgather", {}),
    ("dsar-split-allgather", {}),
    ("dsar-split-allgather", {"allgather": "ring"}),
    ("dsar-split-allgather", {"allgather": "recursive-doubling"}),
    ("topk-allgather", {}),
    ("topk-allgather", {"allgather": "ring"}),
    ("topk-allgather", {"allgather": "direct"}),
    ("gtopk", {}),
]

EXACT = [(a, o) for a, o in VARIANTS if a != "gtopk" and not o.get("resparsify")]

PS = [2, 3, 4, 8, 16, 32]

DENSITIES = [1 / 1024, 1 / 256, 1 / 64, 1 / 16, 1 / 4]

TOPOS = ["abci", "dgx1", "dgx2", "fat-tree"]

SIZES = [4096, 16384, 65536]


def group_size_for(P):
    return 4 if P % 4 == 0 else (P if P == 2 else 1)


@functools.lru_cache(maxsize=None)
def preset(name, P):
    per = {"abci": 4, "dgx1": 8, "dgx2": 16, "fat-tree": 1}[name]
    return topologies.build(name, -(-P // per))


def run(algorithm, P, n, density=None, k=None, graph=None, dtype="int32", seed=1, placement="linear",
        trace=False, **options):
    if algorithm == "sparse-ring-ring" and "group_size" not in options:
        options["group_size"] = group_size_for(P)
    graph = mesh_graph(P) if graph is None else graph
    cfg = RunConfig(topology="test", algorithm=algorithm, elements=n, density=density, k=k, dtype=dtype,
                    gpus=P, seed=seed, options=options, placement=placement, trace=trace)
    return run_allreduce(cfg, graph=graph)


def dense_sum(n, k, P, dtype="int32", seed=1):
    w = data.make_workload("uniform", n, k, P, dtype, seed)
    total = np.zeros(n, dtype=np.int64)
    for r in range(P):
        s = w.input(r)
        total += s.to_dense().astype(np.int64)
    return total


def as_dense(output):
    return data.concat(output).to_dense()


def test_registered():
    load_all()
    for name in SPARSE:
        assert ALGORITHMS[name].kind == "sparse", name
    assert ALGORITHMS["sparse-ring"].options == ("densify",)
    assert ALGORITHMS["sparse-ring-ring"].options == ("group_size", "densify", "resparsify")
    assert ALGORITHMS["dsar-split-allgather"].options == ("allgather", "densify")  # densify: "study" only
    assert ALGORITHMS["topk-allgather"].options == ("allgather",)
    assert ALGORITHMS["gtopk"].exact is False and ALGORITHMS["gtopk"].reference is not None
    for name in SPARSE[:-1]:
        assert ALGORITHMS[name].exact


# -- every algorithm verifies on the preset topologies -----------------------------------------
def _matrix():
    cases = []
    for i, (alg, opts) in enumerate(VARIANTS):
        for j, P in enumerate(PS):
            if alg == "gtopk" and P & (P - 1):
                continue
            topo = TOPOS[(i + j) % len(TOPOS)]
            d = DENSITIES[(2 * i + j) % len(DENSITIES)]
            n = SIZES[(i + 2 * j) % len(SIZES)]
            dtype = "float32" if (i + j) % 5 == 0 else "int32"
            cases.append(pytest.param(alg, opts, P, topo, d, n, dtype,
                                      id=f"{alg}{''.join(f'-{v}' for v in opts.values())}-P{P}-{topo}-d{round(1 / d)}-n{n}-{dtype}"))
    return cases


@pytest.mark.parametrize("alg,opts,P,topo,d,n,dtype", _matrix())
def test_verifies_on_presets(alg, opts, P, topo, d, n, dtype):
    rep = run(alg, P, n, density=d, graph=preset(topo, P), dtype=dtype,
              placement="study" if topo == "dgx1" else "linear", **dict(opts))
    approximate = alg == "gtopk" or dict(opts).get("resparsify")
    assert rep["verification"] == expected_check(dtype, alg if approximate else None)
    assert rep["ranks"] == P and rep["time_s"] > 0


@pytest.mark.parametrize("alg,opts", VARIANTS)
def test_one_rank_is_trivial(alg, opts):
    rep = run(alg, 1, 1000, density=1 / 10, **dict(opts))
    assert rep["time_s"] == 0 and rep["messages"] == 0


@pytest.mark.parametrize("alg,opts", [v for v in VARIANTS if v[0] != "gtopk"])
@pytest.mark.parametrize("P", [5, 6, 12])
def test_non_powers_of_two_and_dense_inputs(alg, opts, P):
    """Odd counts and N not divisible by P, from sparse to dense inputs (d = 1/2, 1)."""
    for d in (1 / 2, 1.0, 1 / 7):
        rep = run(alg, P, 1001, density=d, **dict(opts))
        assert rep["verification"] == expected_check("int32", alg if dict(opts).get("resparsify") else None)


def test_ring_ring_other_group_sizes():
    for P, L in [(32, 8), (32, 2), (16, 16), (12, 3), (6, 2)]:
        for opts in ({}, {"resparsify": True}):
            rep = run("sparse-ring-ring", P, 9999, density=1 / 32, group_size=L, **opts)
            assert rep["verification"] == expected_check("int32", "sparse-ring-ring" if opts else None)


def test_option_errors():
    with pytest.raises(UserInputError, match="densify"):
        run("sparse-ring", 4, 1000, density=0.1, densify="sometimes")
    with pytest.raises(UserInputError, match="allgather"):
        run("dsar-split-allgather", 4, 1000, density=0.1, allgather="tree")
    with pytest.raises(UserInputError, match="group-size 3 does not divide"):
        run("sparse-ring-ring", 8, 1000, density=0.1, group_size=3)
    with pytest.raises(UserInputError, match="resparsify"):
        ALGORITHMS["sparse-ring-ring"].check(8, resparsify="yes")
    with pytest.raises(UserInputError, match="--allgather is not used"):
        run("sparse-ring", 4, 1000, density=0.1, allgather="ring")


# -- message sizes -----------------------------------------------------------------------------
def sends(report):
    """Bytes of every send of every rank, in program order."""
    return [[a["bytes"] for name, cat, t0, t1, a in spans if cat == "p2p" and name == "send"]
            for spans in report.result.spans]


def expected_bytes(size, d, j):
    """4 + min(8 s (1 - (1 - d)^j), 4 s): header plus (index, value) pairs of the expected
    union of j random k-subsets restricted to a part of s elements, capped at dense."""
    p = 1 - (1 - d) ** j
    return 4 + min(8 * size * p, 4 * size), p


def check_sizes(measured, expected, sizes, samples):
    """``measured[step]``: list of message bytes over ranks and seeds; ``expected[step]`` =
    (bytes, p) from :func:`expected_bytes`. Sparse steps: the mean must be within 6 standard
    errors (binomial bound s p (1 - p) on the entry count's variance, 8 bytes per entry);
    dense steps: exact."""
    for step, (vals, (exp, p), s) in enumerate(zip(measured, expected, sizes)):
        assert len(vals) == samples
        mean = float(np.mean(vals))
        if exp == 4 + 4 * s:
            assert all(v == exp for v in vals), (step, vals[:5], exp)
        else:
            sigma = 8 * math.sqrt(s * p * (1 - p) / samples)
            assert abs(mean - exp) <= 6 * sigma + 1e-9, (step, mean, exp, sigma)

SEEDS = (1, 2, 3)


@pytest.mark.parametrize("d", [1 / 16, 1 / 4])
def test_sparse_ring_message_sizes(d):
    """Sparse ring, P ranks, parts of s = N/P: the reduce-scatter message of step i
    (i = 0..P-2) carries E[nnz] = s (1 - (1 - d)^(i+1)) pairs of 8 bytes plus the 4-byte
    header, capped at the dense 4 + 4 s; every allgather message is a reduced part:
    s (1 - (1 - d)^P). d = 1/16 stays sparse; with d = 1/4 parts turn dense at step 2."""
    P, n = 8, 65536
    s = n // P
    steps = [[] for _ in range(2 * (P - 1))]
    for seed in SEEDS:
        for per_rank in sends(run("sparse-ring", P, n, density=d, seed=seed, trace=True)):
            assert len(per_rank) == 2 * (P - 1)
            for i, b in enumerate(per_rank):
                steps[i].append(b)
    expected = [expected_bytes(s, d, i + 1) for i in range(P - 1)] + [expected_bytes(s, d, P)] * (P - 1)
    check_sizes(steps, expected, [s] * len(steps), P * len(SEEDS))
    if d == 1 / 4:
        assert expected[2][0] == 4 + 4 * s          # the dense regime is exercised


@pytest.mark.parametrize("d", [1 / 32, 1 / 4])
def test_sparse_ring_ring_message_sizes(d):
    """Sparse ring-ring, L ranks per group, M = P/L: intra reduce-scatter step i carries
    (N/L)(1-(1-d)^(i+1)) pairs, inter reduce-scatter step i (N/P)(1-(1-d)^(L(i+1))),
    inter allgather (N/P)(1-(1-d)^P), intra allgather (N/L)(1-(1-d)^P) (the M sub-streams
    joined into one stream: one header); each capped at dense size, plus 4 bytes."""
    P, L, n = 16, 4, 65536
    M = P // L
    plan = ([(n // L, i + 1) for i in range(L - 1)] + [(n // P, L * (i + 1)) for i in range(M - 1)]
            + [(n // P, P)] * (M - 1) + [(n // L, P)] * (L - 1))
    steps = [[] for _ in plan]
    for seed in SEEDS:
        rep = run("sparse-ring-ring", P, n, density=d, seed=seed, trace=True, group_size=L)
        for per_rank in sends(rep):
            assert len(per_rank) == len(plan)
            for i, b in enumerate(per_rank):
                steps[i].append(b)
    expected = [expected_bytes(s, d, j) for s, j in plan]
    check_sizes(steps, expected, [s for s, _ in plan], P * len(SEEDS))


def test_ssar_recursive_doubling_message_sizes():
    """SSAR recursive doubling, P = 2^m: the message of step j is the whole stream with
    2^j contributions, N (1 - (1 - d)^(2^j)) pairs plus the header."""
    P, n, d = 8, 65536, 1 / 64
    steps = [[] for _ in range(3)]
    for seed in SEEDS:
        for per_rank in sends(run("ssar-recursive-doubling", P, n, density=d, seed=seed, trace=True)):
            for i, b in enumerate(per_rank):
                steps[i].append(b)
    check_sizes(steps, [expected_bytes(n, d, 2 ** j) for j in range(3)], [n] * 3, P * len(SEEDS))


def test_dsar_and_topk_allgather_message_sizes():
    """DSAR's allgather moves dense parts (4 + (N/P) 4 bytes each); TopkA's messages are
    never densified: a message with j ranks' pairs weighs j (4 + 8 k)."""
    P, n, d = 8, 8192, 1 / 4
    k = int(n * d)
    for ag in ("direct", "ring"):
        per = sends(run("dsar-split-allgather", P, n, density=d, trace=True, allgather=ag))
        assert all(b == 4 + (n // P) * 4 for r in per for b in r[P - 1:])
    per = sends(run("topk-allgather", P, n, density=d, trace=True))          # recursive doubling
    assert all(r == [4 + 8 * k, 2 * (4 + 8 * k), 4 * (4 + 8 * k)] for r in per)


# -- property test -----------------------------------------------------------------------------
@st.composite
def cases(draw):
    P = draw(st.integers(1, 10))
    n = draw(st.integers(1, 3000))
    k = draw(st.integers(1, n))
    alg, opts = draw(st.sampled_from(EXACT + [("sparse-ring-ring", {"group_size": None})]))
    opts = dict(opts)
    if alg == "sparse-ring-ring":
        opts["group_size"] = draw(st.sampled_from([L for L in range(1, P + 1) if P % L == 0]))
    dtype = draw(st.sampled_from(["int32", "float32", "float64"]))
    seed = draw(st.integers(0, 2**16))
    return P, n, k, alg, opts, dtype, seed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_property_equals_numpy_sum(case):
    P, n, k, alg, opts, dtype, seed = case
    rep = run(alg, P, n, k=k, dtype=dtype, seed=seed, **opts)   # raises VerificationError if wrong
    assert rep["verification"] == expected_check(dtype, alg if opts.get("resparsify") or alg == "gtopk" else None)
    out = rep.result.outputs[P - 1]
    expected = dense_sum(n, k, P, dtype, seed)
    assert np.array_equal(as_dense(out).astype(np.int64), expected)


# -- gTop-k --------------------------------------------------------------------------------------
@pytest.mark.parametrize("P", [3, 6, 12])
def test_gtopk_needs_power_of_two(P):
    with pytest.raises(UserInputError, match=f"P = {P} is not"):
        run("gtopk", P, 4096, density=1 / 64)


@pytest.mark.parametrize("P,d", [(2, 1 / 64), (8, 1 / 16), (16, 1 / 256), (4, 1 / 2)])
def test_gtopk_definition(P, d):
    n = 8192
    k = int(n * d)
    rep = run("gtopk", P, n, density=d)
    outs = rep.result.outputs
    assert all(o is outs[0] for o in outs)                    # rank 0's k pairs, broadcast
    assert outs[0].nnz <= k and not outs[0].is_dense
    exact = dense_sum(n, k, P)
    got = outs[0].to_dense().astype(np.int64)
    assert not np.array_equal(got, exact)                     # approximate: the sum has ~Pk entries
    if P == 2:
        # independent check: top-k of |x0 + x1|, ties to the lower index
        order = np.lexsort((np.arange(n), -np.abs(exact)))[:k]
        want = np.zeros(n, dtype=np.int64)
        want[order] = exact[order]
        assert np.array_equal(got, want)


def test_gtopk_reference_catches_a_wrong_tree_order(monkeypatch):
    """The verification compares with the tree-order definition: a gTop-k that merges in
    another order (here: keeps k + 1 entries) is rejected."""
    real_topk = data.SparseStream.topk
    monkeypatch.setattr(data.SparseStream, "topk", lambda self, k: real_topk(self, k + 1))
    with pytest.raises(VerificationError):
        run("gtopk", 8, 8192, density=1 / 64)


# -- resparsify ----------------------------------------------------------------------------------
def test_resparsify_keeps_ceil_k_over_L_per_part():
    P, L, n, d = 16, 4, 65536, 1 / 64
    k = int(n * d)
    kk = resparsify_k(k, L)
    rep = run("sparse-ring-ring", P, n, density=d, group_size=L, resparsify=True, trace=True)
    out = rep.result.outputs[0]
    got = as_dense(out).astype(np.int64)
    exact = dense_sum(n, k, P)
    assert np.count_nonzero(got) <= (P // L) * L * kk < np.count_nonzero(exact)
    # inter-group reduce-scatter step 0 carries one rank's kept entries of one sub-part
    per = sends(rep)
    inter0 = [r[L - 1] for r in per]
    assert max(inter0) <= 4 + 8 * kk
    # off: the plain sum, and the reference hook says so
    assert ALGORITHMS["sparse-ring-ring"].reference(None, P, group_size=L, resparsify=False) is None
    exact_rep = run("sparse-ring-ring", P, n, density=d, group_size=L)
    assert np.array_equal(as_dense(exact_rep.result.outputs[3]).astype(np.int64), exact)


# -- phases and timing ------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", ["ideal", "smpi"])
def test_ring_ring_phases_add_up(profile):
    cfg = RunConfig(topology="abci", nodes=4, algorithm="sparse-ring-ring", elements=65536, density=1 / 64,
                    dtype="int32", profile=profile)
    rep = run_allreduce(cfg)
    ph = rep["phases"]
    assert {"intra-reduce-scatter", "inter-reduce-scatter", "inter-allgather", "intra-allgather"} <= set(ph)
    assert sum(ph.values()) == pytest.approx(rep["time_s"], rel=1e-12)


@pytest.mark.parametrize("alg,opts", VARIANTS)
def test_phases_add_up_everywhere(alg, opts):
    rep = run(alg, 8, 20000, density=1 / 32, graph=preset("abci", 8), **dict(opts))
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-12)
    assert set(rep["phases"]) - {"other", "compute"}


@pytest.mark.parametrize("M,L,m", [(2, 4, 4096), (4, 4, 16384), (3, 2, 30000), (4, 2, 48)])
def test_dense_from_the_start_matches_ring_ring_closed_form(M, L, m):
    """d = 1/2 with int32: k pairs of 8 bytes = N/2 * 8 >= 4 N, so every stream is dense
    from the start and sparse ring-ring is the dense ring-ring plus a 4-byte header per
    message: 2(L-1)(a_i + (4 + 4N/L) b_i) + 2(M-1)(a_e + (4 + 4N/P) b_e)."""
    P = M * L
    n = P * m
    (bw_i, a_i), (bw_e, a_e) = (1e10, 1e-6), (1e9, 5e-6)
    g = two_level_mesh(M, L, intra=(bw_i, a_i), inter=(bw_e, a_e))
    rep = run("sparse-ring-ring", P, n, density=1 / 2, graph=g, group_size=L)
    expected = (2 * (L - 1) * (a_i + (4 + 4 * n / L) / bw_i)
                + 2 * (M - 1) * (a_e + (4 + 4 * n / P) / bw_e))
    assert rep["time_s"] == pytest.approx(expected, rel=1e-12)


# -- broken algorithms must fail ------------------------------------------------------------------
@pytest.fixture
def broken():
    names = []

    def make(name, how):
        @register(name, kind="sparse", summary="test-only broken sparse ring")
        def algo(comm, x):
            P, r = comm.size, comm.rank
            parts = split_stream(x, P)
            if how == "skip" and r == 0:     # rank 0 forgets its own contribution to one part
                p = parts[(r - 1) % P]
                parts[(r - 1) % P] = data.SparseStream.empty(p.start, p.stop, x.dtype)
            yield from ring_pass(comm, parts, r, reduce=True)
            if how == "double" and r == 1:
                parts[(r + 1) % P] = yield comm.add(parts[(r + 1) % P], parts[(r + 1) % P])
            yield from ring_pass(comm, parts, (r + 1) % P, reduce=False)
            return Parts(parts)

        names.append(name)
        return name

    yield {"skip": make("test-broken-sparse-skip", "skip"), "double": make("test-broken-sparse-double", "double")}
    for name in names:
        ALGORITHMS.pop(name, None)


@pytest.mark.parametrize("kind", ["skip", "double"])
def test_broken_algorithm_is_caught(broken, kind):
    with pytest.raises(VerificationError):
        run(broken[kind], 4, 4096, density=1 / 4)


# -- memory: results are shared, not copied per rank -------------------------------------------------
@pytest.mark.parametrize("alg", ["ssar-recursive-doubling", "topk-allgather"])
def test_identical_reductions_are_computed_once(alg):
    """Ranks that compute the same reduction of the same operands share one result object
    (ssar: every window of a recursive-doubling step; topk-allgather: the final sum)."""
    P = 8
    rep = run(alg, P, 40000, density=1 / 16)
    outs = rep.result.outputs
    assert all(o is outs[0] for o in outs)
    rep = run(alg, 6, 40000, density=1 / 16)            # folded ranks get the result by reference
    assert rep["verification"] == expected_check("int32")


@pytest.mark.parametrize("alg", ["sparse-ring", "sparse-ring-ring", "ssar-split-allgather", "dsar-split-allgather"])
def test_allgathered_parts_are_shared(alg):
    P = 8
    outs = run(alg, P, 40000, density=1 / 16).result.outputs
    for out in outs[1:]:
        assert len(out) == len(outs[0]) and all(a is b for a, b in zip(out, outs[0]))


M = 2**20


def run_fields(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def test_study_pairs_sizing_closed_form():
    # 4 + 8 nnz until 8 nnz >= 4 N (N = the full vector), then 4 + 4 N
    N = 1000
    a = SparseStream(0, 100, np.arange(0, 100, dtype=np.uint32), np.ones(100, dtype=np.int32))
    assert StudyPairs([a], full=N).nbytes == 4 + 8 * 100       # dense over its range, still pairs
    parts = [SparseStream(i * 100, (i + 1) * 100, np.arange(i * 100, i * 100 + 50, dtype=np.uint32),
                          np.ones(50, dtype=np.int32)) for i in range(10)]
    assert StudyPairs(parts[:9], full=N).nbytes == 4 + 8 * 450    # 3600 < 4000
    assert StudyPairs(parts, full=N).nbytes == 4 + 4 * N          # 4000 >= 4000: the full vector


def test_ssar_study_allgather_is_173_times_longer():
    # docs/study.md: 32 GPUs, N = 8M, d = 1/16: the allgather takes 1.73x longer
    base = dict(topology="abci", nodes=8, algorithm="ssar-split-allgather", elements=8 * M, dtype="int32",
                density=1 / 16, profile="cm02")
    a = run_fields(**base)["phases"]["allgather"]
    b = run_fields(**base, options={"densify": "study"})["phases"]["allgather"]
    assert b / a == pytest.approx(1.73, abs=0.01)


def test_dsar_study_drops_the_header_of_each_allgather_message():
    base = dict(topology="abci", nodes=2, algorithm="dsar-split-allgather", elements=M, dtype="int32",
                density=1 / 128, profile="cm02")
    a = run_fields(**base)
    b = run_fields(**base, options={"densify": "study"})
    P = 8
    assert a["message_bytes"] - b["message_bytes"] == 4 * P * (P - 1)
    assert b["verified"]
