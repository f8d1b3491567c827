"""Dense allreduce algorithms: alpha-beta closed forms on contention-free graphs, verified
results for many rank counts and dtypes (and on random small clusters), size-only mode, broken
algorithms caught, phases, and runs on the preset topologies."""

import math
from pathlib import Path

import pytest
from hypothesis import given, HealthCheck, settings, strategies as st

import topologies
from simcollective.algorithms import ALGORITHMS, load_all, register
from simcollective.algorithms.allreduce.double_binary_tree import auto_chunk
from simcollective.errors import UserInputError, VerificationError
from simcollective.patterns.dense import split
from simcollective.patterns.trees import binomial_links, btree_parent, double_tree_parents
from simcollective.simulate import run_allreduce, RunConfig
from tests.conftest import expected_check, mesh_graph, random_cluster, two_level_mesh


DENSE = ["ring", "recursive-doubling", "rabenseifner", "binomial-tree", "double-binary-tree", "ring-ring"]

ALPHA, BW = 1e-6, 1e9          # mesh_graph defaults: latency and bandwidth

BETA = 1 / BW

EAGER = 65536                  # profile "ideal": larger messages are rendezvous


def server_mesh(P, servers):
    """A full mesh of P GPUs (contention-free) whose GPUs sit on the given servers."""
    g = mesh_graph(P, BW, ALPHA)
    for i, s in enumerate(servers):
        g.nodes[f"g{i}"]["server"] = s
    return g


def node_mesh(P, L):
    """Full mesh, ``L`` consecutive GPUs per server (the last server may have fewer)."""
    return server_mesh(P, [i // L for i in range(P)])


def run(algorithm, P, n, graph=None, dtype="float32", verify="full", **options):
    graph = mesh_graph(P, BW, ALPHA) if graph is None else graph
    cfg = RunConfig(topology="test", algorithm=algorithm, elements=n, dtype=dtype, gpus=P,
                    options=options, verify=verify)
    return run_allreduce(cfg, graph=graph)


def test_all_dense_algorithms_registered():
    load_all()
    for name in DENSE:
        assert ALGORITHMS[name].kind == "dense"
    assert ALGORITHMS["ring"].options == ("chunk_size",)
    assert ALGORITHMS["recursive-doubling"].options == ()
    assert ALGORITHMS["rabenseifner"].options == ()
    assert ALGORITHMS["binomial-tree"].options == ("chunk_size",)
    assert ALGORITHMS["double-binary-tree"].options == ("chunk_size",)
    assert ALGORITHMS["ring-ring"].options == ("group_size",)


# -- closed forms on contention-free graphs --------------------------------------------------
# Small sizes are eager, large ones rendezvous. For non-powers of two, eager messages let
# ranks run ahead, and two messages on one link then share it (max-min), which moves the
# times off the lock-step closed forms; those cases use rendezvous sizes (> 64 KiB).
SIZES = [240, 48000]           # elements per block-ish: x P gives N (int32: 4 bytes)


@pytest.mark.parametrize("P", [2, 3, 4, 5, 8, 12])
@pytest.mark.parametrize("m", SIZES)
def test_ring_closed_form(P, m):
    n = P * m
    t = run("ring", P, n, dtype="int32")["time_s"]
    assert t == pytest.approx(2 * (P - 1) * (ALPHA + (n / P) * 4 * BETA), rel=1e-12)


@pytest.mark.parametrize("P,n", [(2, 480), (4, 960), (8, 1920), (16, 3840), (8, 80000),
                                 (3, 60000), (5, 60000), (6, 60000), (12, 60000)])
def test_recursive_doubling_closed_form(P, n):
    p2 = 1 << (P.bit_length() - 1)
    assert p2 == P or n * 4 > EAGER
    T = ALPHA + n * 4 * BETA
    expected = math.log2(p2) * T + (2 * T if p2 != P else 0)   # fold + unfold
    assert run("recursive-doubling", P, n, dtype="int32")["time_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("P,n", [(2, 480), (4, 960), (8, 1920), (16, 3840), (8, 160000),
                                 (3, 160000), (5, 160000), (6, 160000), (12, 160000)])
def test_rabenseifner_closed_form(P, n):
    p2 = 1 << (P.bit_length() - 1)
    assert p2 == P or n * 4 / p2 > EAGER
    T = ALPHA + n * 4 * BETA
    expected = 2 * math.log2(p2) * ALPHA + 2 * (p2 - 1) / p2 * n * 4 * BETA + (2 * T if p2 != P else 0)
    assert run("rabenseifner", P, n, dtype="int32")["time_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("P,n", [(2, 480), (4, 960), (8, 1920), (16, 3840), (8, 40000),
                                 (3, 40000), (5, 40000), (7, 40000), (12, 40000), (24, 40000)])
def test_binomial_tree_closed_form(P, n):
    assert (P & (P - 1)) == 0 or n * 4 > EAGER
    expected = 2 * math.ceil(math.log2(P)) * (ALPHA + n * 4 * BETA)
    assert run("binomial-tree", P, n, dtype="int32")["time_s"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("groups,L", [(2, 4), (3, 2), (4, 4), (1, 4), (4, 1), (3, 3)])
@pytest.mark.parametrize("m", [12, 24000])
def test_ring_ring_closed_form(groups, L, m):
    intra, inter = (1e10, 1e-6), (1e9, 5e-6)
    P = groups * L
    n = P * m
    rep = run("ring-ring", P, n, graph=two_level_mesh(groups, L, intra, inter), dtype="int32", group_size=L)
    ai, bi = intra[1], 1 / intra[0]
    ae, be = inter[1], 1 / inter[0]
    expected = 2 * (L - 1) * (ai + (n / L) * 4 * bi) + 2 * (groups - 1) * (ae + (n / P) * 4 * be)
    assert rep["time_s"] == pytest.approx(expected, rel=1e-12)
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-12)


@pytest.mark.parametrize("P", [2, 4, 5])
def test_chunked_ring_closed_form(P):
    """k chunks per block: each step is k consecutive messages, k alpha + (N/P) s beta."""
    block = 2**16                                  # elements: 256 KiB per block
    n = P * block
    for k in (1, 2, 4):
        rep = run("ring", P, n, dtype="int32", chunk_size=block * 4 // k)
        assert rep["time_s"] == pytest.approx(2 * (P - 1) * (k * ALPHA + block * 4 * BETA), rel=1e-12)
        assert rep["messages"] == 2 * P * (P - 1) * k


def test_ring_reduction_cost_closed_form(tmp_path):
    """With a reduction cost g per block: unchunked RS pays it every step; chunked, the sum
    of chunk c overlaps the transfer of chunk c + 1, so only the very last one shows."""
    text = (Path(ideal_profile_path()).read_text()
            .replace("dense_bytes_per_second = 0", "dense_bytes_per_second = 1e10"))
    prof = tmp_path / "gamma.toml"
    prof.write_text(text)
    P, block = 4, 2**16
    n, B = P * block, block * 4
    g = 3 * B / 1e10
    cfg = dict(topology="test", algorithm="ring", elements=n, dtype="int32", gpus=P, profile=str(prof))
    t1 = run_allreduce(RunConfig(**cfg), graph=mesh_graph(P, BW, ALPHA))["time_s"]
    assert t1 == pytest.approx(2 * (P - 1) * (ALPHA + B * BETA) + (P - 1) * g, rel=1e-12)
    t2 = run_allreduce(RunConfig(**cfg, options={"chunk_size": B // 2}), graph=mesh_graph(P, BW, ALPHA))["time_s"]
    assert t2 == pytest.approx(2 * (P - 1) * (2 * ALPHA + B * BETA) + g / 2, rel=1e-12)


def ideal_profile_path():
    from importlib import resources
    return resources.files("simcollective.profiles").joinpath("ideal.toml")


def test_chunked_ring_reduces_to_unchunked():
    for P, n in ((3, 1007), (5, 100003), (8, 5000)):
        plain = run("ring", P, n)
        largest = (n - (P - 1) * (n // P)) * 4
        for cs in (largest, largest + 1, 10**9):
            rep = run("ring", P, n, chunk_size=cs)
            assert rep["time_s"] == plain["time_s"]
            assert rep["messages"] == plain["messages"]
        assert run("ring", P, n, chunk_size=largest - 1)["messages"] == 2 * plain["messages"]


def test_chunked_binomial_reduces_to_unchunked():
    plain = run("binomial-tree", 6, 30000)
    rep = run("binomial-tree", 6, 30000, chunk_size=30000 * 4)
    assert rep["time_s"] == plain["time_s"] and rep["messages"] == plain["messages"]
    assert run("binomial-tree", 6, 30000, chunk_size=30000)["messages"] == 4 * plain["messages"]


def test_double_binary_tree_single_chain_closed_form():
    """Two GPUs of one node: both halves go up then down the same link, sharing it."""
    n = 50000
    rep = run("double-binary-tree", 2, n, dtype="int32", chunk_size=n * 4)
    assert rep["time_s"] == pytest.approx(2 * (ALPHA + n * 4 * BETA), rel=1e-12)


def test_double_binary_tree_pipelining_pays_off():
    """On 8 nodes of one GPU, pipelined trees approach N s beta (every link carries half
    of the data once per tree), far below unpipelined tree depth x N/2 s beta."""
    P, n = 8, 2**22
    G = node_mesh(P, 1)
    whole = run("double-binary-tree", P, n, graph=G, verify="symbolic", chunk_size=n * 4)["time_s"]
    piped = run("double-binary-tree", P, n, graph=G, verify="symbolic")["time_s"]
    assert piped < 1.05 * n * 4 * BETA
    assert piped < 0.5 * whole


# -- tree structures ---------------------------------------------------------------------------
def spec_children(n, M):
    """Children by the formula of the spec (NCCL's ncclGetBtree)."""
    bit = (n & -n) if n else 1 << (M - 1).bit_length()
    kids = []
    if n and bit > 1:
        kids.append(n - bit // 2)
    l = bit // 2
    while l >= 1:
        if n + l < M:
            kids.append(n + l)
            break
        l //= 2
    return kids


@pytest.mark.parametrize("M", range(1, 20))
def test_double_binary_trees(M):
    trees = double_tree_parents(M)
    assert trees[0] == [btree_parent(n, M) for n in range(M)]
    for parents in trees:
        roots = [n for n in range(M) if parents[n] is None]
        assert len(roots) == 1
        for n in range(M):                        # every node reaches the root
            seen, v = set(), n
            while parents[v] is not None:
                assert v not in seen
                seen.add(v)
                v = parents[v]
        assert all(sum(p == n for p in parents) <= 2 for n in range(M))
    for n in range(M):
        assert sorted(spec_children(n, M)) == sorted(c for c in range(M) if trees[0][c] == n)
    first, second = trees
    if M % 2 == 0:                                # mirror: node n plays M - 1 - n
        inner = [{p for p in parents if p is not None} for parents in trees]
        assert not inner[0] & inner[1]
        assert second == [None if first[M - 1 - n] is None else M - 1 - first[M - 1 - n] for n in range(M)]
    else:                                         # shift: node n plays (n - 1) mod M
        assert second == [None if first[(n - 1) % M] is None else (first[(n - 1) % M] + 1) % M for n in range(M)]


def test_auto_chunk():
    KiB = 1024
    assert auto_chunk(2**30, 5) == 512 * KiB              # large: NCCL's 512 KiB step
    assert auto_chunk(8 * 5 * 256 * KiB, 5) == 256 * KiB  # keep >= 8 x depth chunks
    assert auto_chunk(1000, 5) == 128 * KiB               # never below 128 KiB
    P = 8                                   # 8 nodes: tree depth 4 (1 -> 2 -> 4 -> 0)
    for n, chunk in ((2**24, 512 * KiB), (2**22, 256 * KiB)):
        rep = run("double-binary-tree", P, n, graph=node_mesh(P, 1), verify="symbolic")
        chunks = n * 4 // chunk                           # both halves
        assert rep["messages"] == chunks * 2 * (P - 1)   # every tree edge: up and down


def test_binomial_links():
    assert binomial_links(8, 0) == (None, [1, 2, 4])
    assert binomial_links(8, 4) == (0, [5, 6])
    assert binomial_links(6, 4) == (0, [5])
    assert binomial_links(5, 3) == (2, [])
    assert binomial_links(1, 0) == (None, [])


# -- correctness ---------------------------------------------------------------------------
N_ODD = 1000 + 7

GROUP = {1: 1, 2: 2, 3: 3, 5: 5, 8: 4, 16: 4, 24: 4}     # ring-ring group size (divides P)

GPUS_PER_NODE = {1: 1, 2: 1, 3: 1, 5: 1, 8: 2, 16: 4, 24: 4}


def options_for(algo, P):
    return {"group_size": GROUP[P]} if algo == "ring-ring" else {}


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("P", [1, 2, 3, 5, 8, 16, 24])
@pytest.mark.parametrize("algo", DENSE)
def test_verifies(algo, P, dtype):
    rep = run(algo, P, N_ODD, graph=node_mesh(P, GPUS_PER_NODE[P]), dtype=dtype, **options_for(algo, P))
    assert rep["mode"] == "full" and rep["verification"] == expected_check(dtype, nranks=P)
    assert rep["time_s"] > 0 if P > 1 else rep["messages"] == 0


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("P", [3, 8, 24])
@pytest.mark.parametrize("algo", DENSE)
def test_verifies_other_dtypes(algo, P, dtype):
    rep = run(algo, P, N_ODD, graph=node_mesh(P, GPUS_PER_NODE[P]), dtype=dtype, **options_for(algo, P))
    assert rep["verification"] == expected_check(dtype)


@pytest.mark.parametrize("P,n", [(5, 3), (8, 5), (24, 23), (6, 1)])
@pytest.mark.parametrize("algo", DENSE)
def test_fewer_elements_than_ranks(algo, P, n):
    opts = {"group_size": 2 if P % 2 == 0 else 1} if algo == "ring-ring" else {}
    assert run(algo, P, n, graph=node_mesh(P, 2), dtype="int32", **opts)["verification"] == "exact (int32)"


@pytest.mark.parametrize("P", [2, 5, 8, 24])
@pytest.mark.parametrize("algo,chunk", [("ring", 100), ("ring", 37), ("binomial-tree", 512),
                                        ("double-binary-tree", 256), ("double-binary-tree", 2000)])
def test_chunked_verifies(algo, chunk, P):
    rep = run(algo, P, N_ODD, graph=node_mesh(P, GPUS_PER_NODE[P]), dtype="int32", chunk_size=chunk)
    assert rep["verification"] == "exact (int32)"
    assert rep["messages"] > run(algo, P, N_ODD, graph=node_mesh(P, GPUS_PER_NODE[P]), dtype="int32")["messages"]


@pytest.mark.parametrize("servers", [
    [0, 0, 0, 1, 1, 2, 3],          # unequal nodes
    [0, 1, 0, 1, 0, 1],             # interleaved placement
    [5, 5, 2, 2, 9, 9, 9, 9, 1],    # arbitrary server ids
    [0, 1, 2, 3, 4, 5, 6, 7, 8],    # one GPU per node, odd M
])
def test_double_binary_tree_irregular_nodes(servers):
    P = len(servers)
    for cs in (None, 300):
        rep = run("double-binary-tree", P, N_ODD, graph=server_mesh(P, servers), dtype="int32", chunk_size=cs)
        assert rep["verification"] == "exact (int32)"


@pytest.mark.parametrize("P,L", [(24, 1), (24, 24), (24, 6), (24, 8), (6, 3)])
def test_ring_ring_group_sizes(P, L):
    assert run("ring-ring", P, N_ODD, dtype="int32", group_size=L)["verification"] == "exact (int32)"


# -- size-only mode ------------------------------------------------------------------------
@pytest.mark.parametrize("P", [2, 5, 8, 24])
@pytest.mark.parametrize("algo", DENSE)
def test_symbolic_same_time_as_full(algo, P):
    G = node_mesh(P, GPUS_PER_NODE[P])
    opts = options_for(algo, P)
    full = run(algo, P, N_ODD, graph=G, **opts)
    sym = run(algo, P, N_ODD, graph=G, verify="symbolic", **opts)
    assert sym["mode"] == "symbolic" and sym["verification"].startswith("symbolic")
    assert sym["time_s"] == full["time_s"]
    assert sym["messages"] == full["messages"]


# -- broken algorithms must fail -----------------------------------------------------------
@pytest.fixture
def broken():
    """Register test-only broken rings; unregister them afterwards."""
    from simcollective.patterns.rings import ring_pass

    names = []

    def make(name, how):
        @register(name, kind="dense")
        def algo(comm, x):
            """Broken ring (test only)."""
            P, r = comm.size, comm.rank
            blocks = [[b] for b in split(x, P)]
            yield from ring_pass(comm, blocks, first=r, reduce=True)
            if r == 1 and how == "double":   # counts this rank twice in its block
                mine = blocks[(r + 1) % P][0]
                blocks[(r + 1) % P][0] = yield comm.add(mine, split(x, P)[(r + 1) % P])
            yield from ring_pass(comm, blocks, first=(r + 1) % P, reduce=False)
            return [b[0] for b in blocks]

        names.append(name)
        return name

    def make_skip(name):
        @register(name, kind="dense")
        def algo(comm, x):
            """Ring that skips one add (test only)."""
            P, r = comm.size, comm.rank
            blocks = split(x, P)
            right, left = (r + 1) % P, (r - 1) % P
            for s in range(P - 1):
                got = yield comm.sendrecv(right, blocks[(r - s) % P], left)
                b = (r - s - 1) % P
                blocks[b] = got if (r == 2 and s == P - 2) else (yield comm.add(blocks[b], got))
            for s in range(P - 1):
                blocks[(r - s) % P] = yield comm.sendrecv(right, blocks[(r + 1 - s) % P], left)
            return blocks

        names.append(name)
        return name

    try:
        yield {"skip": make_skip("test-broken-ring-skip"), "double": make("test-broken-ring-double", "double")}
    finally:
        for name in names:
            ALGORITHMS.pop(name, None)


@pytest.mark.parametrize("kind", ["skip", "double"])
@pytest.mark.parametrize("verify", ["full", "symbolic"])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_broken_algorithm_is_caught(broken, kind, verify, dtype):
    with pytest.raises(VerificationError):
        run(broken[kind], 5, N_ODD, dtype=dtype, verify=verify)


# -- phases, options -----------------------------------------------------------------------
def test_ring_ring_phases_add_up():
    P, L = 12, 4
    rep = run("ring-ring", P, N_ODD, graph=two_level_mesh(3, 4), group_size=L)
    phases = rep["phases"]
    for name in ("intra-reduce-scatter", "inter-reduce-scatter", "inter-allgather", "intra-allgather"):
        assert phases[name] > 0
    assert sum(phases.values()) == pytest.approx(rep["time_s"], rel=1e-12)


@pytest.mark.parametrize("algo,names", [
    ("ring", {"reduce-scatter", "allgather"}),
    ("recursive-doubling", {"fold", "recursive-doubling", "unfold"}),
    ("rabenseifner", {"fold", "reduce-scatter", "allgather", "unfold"}),
    ("binomial-tree", {"reduce", "broadcast"}),
    ("double-binary-tree", {"reduce-broadcast"}),
])
def test_phases_named(algo, names):
    rep = run(algo, 6, 60000)
    assert names <= set(rep.result.phases_max)      # phases of any rank
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-12)


@pytest.mark.parametrize("algo", ["ring", "binomial-tree", "double-binary-tree"])
@pytest.mark.parametrize("bad", [0, -5, 1.5, "4 apples", True])
def test_bad_chunk_size_rejected(algo, bad):
    with pytest.raises(UserInputError):
        run(algo, 4, 100, chunk_size=bad)


def test_ring_ring_bad_group_size_rejected():
    with pytest.raises(UserInputError):
        run("ring-ring", 6, 100, group_size=4)
    with pytest.raises(UserInputError):
        ALGORITHMS["ring-ring"].check(6, group_size=0)


# -- preset topologies ---------------------------------------------------------------------
@pytest.mark.parametrize("topology,nodes,placement", [
    ("abci", 2, "linear"), ("dgx1", 2, "study"), ("dgx2", 1, "linear"), ("fat-tree", 8, "linear"),
])
@pytest.mark.parametrize("algo", DENSE)
def test_presets(algo, topology, nodes, placement):
    cfg = RunConfig(topology=topology, nodes=nodes, algorithm=algo, elements=100003, placement=placement)
    rep = run_allreduce(cfg)
    assert rep["verification"] == expected_check("float32") and rep["mode"] == "full" and rep["time_s"] > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_cluster(), st.sampled_from(DENSE), st.integers(1, 3000), st.sampled_from(["int32", "float32"]),
       st.sampled_from(["ideal", "cm02", "smpi"]), st.sampled_from(["first", "hash"]))
def test_dense_algorithms_verify_on_random_clusters(g, algorithm, n, dtype, profile, routing):
    gpus = len(topologies.gpus(g))
    cfg = RunConfig(topology="random", algorithm=algorithm, elements=n, dtype=dtype, profile=profile,
                    routing=routing, options={"group_size": g.graph["gpus_per_node"]} if algorithm == "ring-ring" else {})
    rep = run_allreduce(cfg, graph=g)          # raises VerificationError on a wrong result
    assert rep["verification"] == expected_check(dtype, nranks=gpus) and rep["ranks"] == gpus
    assert sum(rep["phases"].values()) == pytest.approx(rep["time_s"], rel=1e-9, abs=1e-15)
    assert rep["time_s"] >= 0
    again = run_allreduce(cfg, graph=g)
    assert again["time_s"] == rep["time_s"] and again["messages"] == rep["messages"]
