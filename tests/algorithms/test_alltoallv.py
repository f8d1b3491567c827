"""alltoallv algorithms (direct, pairwise, nccl, hierarchical): closed forms, uniform sizes
against alltoall, random matrices (zeros included) verified, MoE dispatch + combine."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simcollective.simulate import RunConfig, expected_messages, resolve, run
from tests.conftest import ALPHA, BETA, E, mesh_graph, one_line_error, sim, two_level_mesh

ALGOS = ("direct", "pairwise", "nccl", "hierarchical")


def runv(algorithm, graph, verify="full", **kw):
    P = sum(1 for _, d in graph.nodes(data=True) if d["kind"] == "gpu")
    cfg = RunConfig(topology="test", collective="alltoallv", algorithm=algorithm, dtype="int32", gpus=P,
                    verify=verify, **kw)
    rep = run(cfg, graph=graph)
    assert rep["verified"]
    assert rep["messages"] == expected_messages(resolve(cfg, graph))
    return rep


# -- closed forms on a contention-free mesh ------------------------------------------------------
def test_direct_is_the_slowest_message():
    """Every pair its own cable: T = max over the nonzero pairs of alpha + bytes / beta."""
    m = np.array([[0, 4000, 0, 8], [40000, 0, 400, 0], [0, 0, 0, 4], [123456, 4, 4, 400]]) * E
    rep = runv("direct", mesh_graph(4), sizes=m)
    off = m[~np.eye(4, dtype=bool)]
    assert rep["time_s"] == pytest.approx(ALPHA + off.max() * BETA, rel=1e-12)
    assert rep["messages"] == np.count_nonzero(off) == 8
    assert rep["total_bytes"] == m.sum() and rep["network_bytes"] == off.sum()
    assert rep["max_rank_bytes"] == max(m[3, :3].sum(), m[:, 0].sum() - m[0, 0])


def test_nccl_chunks_and_its_window():
    """One server: 512 KiB chunks; a block of 16 chunks runs as two waves of 8 (NCCL_STEPS)."""
    b = 16 * 512 * 1024
    m = np.array([[0, b], [b // 2, 0]])
    rep = runv("nccl", mesh_graph(2), sizes=m)
    assert rep["time_s"] == pytest.approx(2 * ALPHA + b * BETA, rel=1e-12)
    assert rep["messages"] == 16 + 8
    small = runv("nccl", mesh_graph(2), sizes=np.array([[0, 8 * 512 * 1024], [4, 0]]))
    assert small["time_s"] == pytest.approx(ALPHA + 8 * 512 * 1024 * BETA, rel=1e-12)


@pytest.mark.parametrize("groups,L", [(2, 2), (3, 4)])
def test_hierarchical_closed_form_uniform(groups, L):
    """Rail stage: M - 1 messages of L blocks on their own cables; then the NVLink stage:
    L - 1 messages of M blocks. T = a_e + L b / b_e + a_i + M b / b_i."""
    intra, inter = (1e10, 1e-6), (1e9, 5e-6)
    c = 2**15
    rep = sim("alltoallv", "hierarchical", groups * L, c, graph=two_level_mesh(groups, L, intra, inter), group_size=L)
    b = c * E
    want = inter[1] + L * b / inter[0] + intra[1] + groups * b / intra[0]
    assert rep["time_s"] == pytest.approx(want, rel=1e-12)
    assert set(rep["phases"]) - {"other"} == {"dispatch-rdma", "dispatch-nvlink"}


@pytest.mark.parametrize("P", [2, 5, 8])
@pytest.mark.parametrize("algorithm", ["direct", "pairwise"])
def test_uniform_sizes_are_todays_alltoall(P, algorithm):
    c = 2**15 + 3
    v, a = sim("alltoallv", algorithm, P, c), sim("alltoall", algorithm, P, c)
    assert v["time_s"] == a["time_s"] and v["messages"] == a["messages"] and v["bytes"] == a["bytes"]
    assert v["busbw"] == a["busbw"] and v["imbalance"] == 1.0
    m = np.full((P, P), c * E)
    assert runv(algorithm, mesh_graph(P), sizes=m)["time_s"] == a["time_s"]


# -- every algorithm verifies on random matrices ------------------------------------------------
@st.composite
def _matrices(draw):
    groups, L = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    P = groups * L
    cells = st.one_of(st.just(0), st.integers(1, 3000))
    m = np.array(draw(st.lists(st.lists(cells, min_size=P, max_size=P), min_size=P, max_size=P))) * E
    return groups, L, m


@settings(max_examples=25, deadline=None)
@given(_matrices(), st.sampled_from(ALGOS), st.booleans())
def test_random_matrices_verify(case, algorithm, symbolic):
    groups, L, m = case
    g = two_level_mesh(groups, L)
    rep = runv(algorithm, g, verify="symbolic" if symbolic else "full", sizes=m,
               **({"options": {"group_size": L}} if algorithm == "hierarchical" else {}))
    again = runv(algorithm, g, verify="symbolic" if symbolic else "full", sizes=m,
                 **({"options": {"group_size": L}} if algorithm == "hierarchical" else {}))
    assert again["time_s"] == rep["time_s"]


@pytest.mark.parametrize("verify", ["full", "symbolic"])
@pytest.mark.parametrize("algorithm", ALGOS)
def test_moe_dispatch_then_combine(algorithm, verify):
    """The combine returns every block to its sender: each rank ends with its own send buffer."""
    rep = runv(algorithm, two_level_mesh(2, 2), verify, moe="tokens=32,hidden=16,topk=2,skew=1", seed=3)
    assert rep["combine"] and rep["moe"]["skew"] == 1.0
    assert rep["total_bytes"] == 4 * 32 * 2 * 16 * 2
    names = {p.split("-")[0] for p in rep["phases"] if p != "other"}
    assert names == {"dispatch", "combine"}


def test_direct_combine_on_uniform_sizes_is_two_rounds():
    rep = runv("direct", mesh_graph(4), moe="tokens=64,hidden=1024,topk=4,dtype=float32")
    b = 64 * 1024 * 4     # every token to all 4 ranks (topk = E): uniform 256 KiB blocks
    assert rep["imbalance"] == 1.0
    assert rep["time_s"] == pytest.approx(2 * (ALPHA + b * BETA), rel=1e-12)


# -- bad input, from the command line -------------------------------------------------------------
def _cli(tmp_path, *extra):
    return ("run", "--collective", "alltoallv", "--algorithm", "direct", "--topology", "dgx-h100", "--nodes", "1",
            "--gpus", "2", *extra)


def test_bad_sizes_are_one_line_errors(tmp_path, capsys):
    np.save(tmp_path / "three.npy", np.zeros((3, 3), dtype=np.int64))
    (tmp_path / "neg.csv").write_text("0,4\n-8,0\n")
    (tmp_path / "half.json").write_text("[[0, 4], [2, 0]]")
    (tmp_path / "m.txt").write_text("0")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "three.npy"), "shape (3, 3) must be (2, 2)")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "neg.csv"), "entry [1, 0] = -8.0 is negative")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "half.json"),
                   "entry [1, 0] = 2", "multiple of the element size (4 bytes)")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "m.txt"), "give one of: .npy, .csv, .json")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "none.npy"), "does not exist")
    one_line_error(capsys, _cli(tmp_path, "--sizes", tmp_path / "three.npy", "--elements", "4"),
                   "--elements and --sizes")
    one_line_error(capsys, _cli(tmp_path, "--moe", "tokens=4,hidden=2,topk=2", "--sizes", tmp_path / "neg.csv"),
                   "--sizes and --moe")
    one_line_error(capsys, _cli(tmp_path, "--moe", "tokens=4,hidden=2,topk=3"), "topk=3 exceeds the 2 experts")
    one_line_error(capsys, _cli(tmp_path, "--moe", "tokens=4,hidden=2"), "--moe needs topk")
    one_line_error(capsys, _cli(tmp_path, "--moe", "tokens=4,hidden=2,topk=1,skew=-1"), "skew='-1'")
    one_line_error(capsys, ("run", "--collective", "alltoall", "--algorithm", "direct", "--sizes",
                            tmp_path / "neg.csv"), "--sizes applies to --collective alltoallv, not to alltoall")


def test_cli_run_prints_the_totals(tmp_path, capsys):
    from tests.conftest import run_cli

    (tmp_path / "m.csv").write_text("0,4000\n8,4\n")
    code, out, err = run_cli(capsys, *_cli(tmp_path, "--sizes", tmp_path / "m.csv"))
    assert code == 0, err
    assert "total 3.9 KiB (3.9 KiB between ranks), max per rank 3.9 KiB, imbalance 1.996" in out


def test_hierarchical_combine_retraces_the_dispatch():
    """Uniform gate (every token to every expert): the combine (NVLink, then rail) takes what
    the dispatch (rail, then NVLink) takes: 2 (a_e + L s / b_e + a_i + M s / b_i)."""
    intra, inter = (1e10, 1e-6), (1e9, 5e-6)
    s = 64 * 1024 * 4                       # 64 tokens of 1024 float32 per pair
    rep = runv("hierarchical", two_level_mesh(2, 2, intra, inter), moe="tokens=64,hidden=1024,topk=4,dtype=float32",
               options={"group_size": 2})
    one = inter[1] + 2 * s / inter[0] + intra[1] + 2 * s / intra[0]
    assert rep["time_s"] == pytest.approx(2 * one, rel=1e-12)
    assert rep["phases"]["combine-nvlink"] == pytest.approx(intra[1] + 2 * s / intra[0], rel=1e-12)


def test_the_gate_reads_the_seed_even_size_only(capsys):
    """--seed seeds the gate, so it is used with --moe under --verify symbolic (and only then)."""
    from tests.conftest import run_cli

    base = ("run", "--collective", "alltoallv", "--algorithm", "direct", "--topology", "dgx-h100", "--nodes", "1",
            "--verify", "symbolic", "--quiet")
    times = set()
    for seed in ("1", "2"):
        code, out, err = run_cli(capsys, *base, "--moe", "tokens=64,hidden=64,topk=2,skew=1", "--seed", seed)
        assert code == 0, err
        times.add(out.split("time ")[1].split(" ")[0])
    assert len(times) == 2
    one_line_error(capsys, (*base, "--elements", "8", "--seed", "2"), "--seed is not used with --verify symbolic")
