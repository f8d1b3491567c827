"""Shared test helpers and fixtures: hand-made graphs whose timings have closed forms, the CLI in-process, NCCL machines, synthetic nccl-tests logs."""

import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import strategies as st

import topologies
from simcollective.cli import main
from simcollective.data import add, block_bounds
from simcollective.nccl import model
from simcollective.network.engine import Network, SimEnvironment
from simcollective.profiles import load_profile
from topologies.nodes import add_cable

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"

#: compiles every numba kernel into the on-disk cache (the array store, the filling, the
#: sparse union, the compiled execution loop), as ``benchmarks.jit`` and the compiled engine do
WARM_KERNELS = (
    "from benchmarks.jit import compile_all\n"
    "from simcollective.simulate import RunConfig, run\n"
    "compile_all()\n"
    "run(RunConfig(topology='abci', nodes=2, algorithm='ring', elements=65536, engine='compiled'))\n"
)


def pytest_sessionstart(session):
    """Warm numba's cache on the second core while the tests start on the first.

    NOTE: this bends "one code path" for the suite's wall time only: on an empty cache
    (a fresh clone) the first compile of the kernels costs some 40 s, which the tests
    that first call each kernel would otherwise pay in turn. numba writes its cache files
    atomically, so a test that needs a kernel before the warm-up has written it compiles
    it itself, as without the warm-up; nothing a test asserts depends on who compiled.
    """
    import os

    if os.environ.get("NUMBA_DISABLE_JIT") == "1":
        return
    session.config.stash[_WARMER] = subprocess.Popen(
        [sys.executable, "-c", WARM_KERNELS], cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pytest_sessionfinish(session):
    warmer = session.config.stash.get(_WARMER, None)
    if warmer is not None and warmer.poll() is None:
        warmer.kill()
        warmer.wait()


_WARMER = pytest.StashKey()


@pytest.fixture(scope="session")
def experiment():
    """``experiment("nccl_summary")``: the script ``experiments/nccl_summary.py`` as a module
    (the experiment scripts are files, not a package)."""
    loaded = {}

    def load(name: str):
        if name not in loaded:
            spec = importlib.util.spec_from_file_location(name, EXPERIMENTS / f"{name}.py")
            loaded[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(loaded[name])
        return loaded[name]

    return load


def mesh_graph(P: int, bandwidth: float = 1e9, latency: float = 1e-6, duplex: str = "full") -> nx.DiGraph:
    """P GPUs, every pair joined by its own cable: no two distinct (src, dst) pairs share a
    link, so alpha-beta closed forms hold exactly (alpha = latency, beta = 1/bandwidth)."""
    g = nx.DiGraph(name=f"mesh{P}", description="test mesh", gpus_per_node=P, default_group_size=P)
    for i in range(P):
        g.add_node(f"g{i}", kind="gpu", server=0, local=i)
    for i in range(P):
        for j in range(i + 1, P):
            for u, v in ((i, j), (j, i)):
                g.add_edge(f"g{u}", f"g{v}", bandwidth=bandwidth, latency=latency, duplex=duplex, link_type="nvlink")
    return g


def two_level_mesh(groups: int, L: int, intra=(1e10, 1e-6), inter=(1e9, 5e-6)) -> nx.DiGraph:
    """``groups`` servers of ``L`` GPUs; full mesh inside a server (intra figures) and a
    dedicated cable between every pair of GPUs with the same local index on different
    servers (inter figures): contention-free for two-level (ring-ring) algorithms."""
    g = nx.DiGraph(name="two-level-mesh", description="test", gpus_per_node=L, default_group_size=L)
    for s in range(groups):
        for l in range(L):
            g.add_node(f"n{s}/g{l}", kind="gpu", server=s, local=l)
    for s in range(groups):
        for a in range(L):
            for b in range(L):
                if a != b:
                    g.add_edge(f"n{s}/g{a}", f"n{s}/g{b}", bandwidth=intra[0], latency=intra[1], duplex="full", link_type="nvlink")
    for l in range(L):
        for s in range(groups):
            for t in range(groups):
                if s != t:
                    g.add_edge(f"n{s}/g{l}", f"n{t}/g{l}", bandwidth=inter[0], latency=inter[1], duplex="full", link_type="infiniband")
    return g


@pytest.fixture
def mesh():
    return mesh_graph


def expected_check(dtype, approximate_of=None, nranks=None) -> str:
    """What verification checks for ``dtype``: integers exactly, floats within the summation
    bound; approximate algorithms against their own definition. A test asserts this string
    rather than ``rep["verified"]`` (always True: a wrong result raises before it). One rank
    (``nranks=1``) has one contribution: its result is held exactly, floats included."""
    how = f"exact ({dtype})" if dtype.startswith("int") or nranks == 1 else f"within (P-1)*eps*sum|x| ({dtype})"
    if approximate_of:
        return f"against the NumPy definition of {approximate_of} (approximate by design): {how}"
    return how


def run_cli(capsys, *argv):
    """``simcollective ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def machine(name, nodes=1, opts=None):
    """NCCL's view (``model.machine_of``) of preset ``name`` on ``nodes`` nodes, GPUs in
    (server, local) order."""
    g = topologies.build(name, nodes, dict(opts or {}))
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    return model.machine_of(g, gpus)


def point(wall, cpu=None, flows=100, sim_wall=None, sim_cpu=None, ranks=16, rss=2**28):
    return {"wall_s": wall, "cpu_s": wall if cpu is None else cpu, "flows": flows, "ranks": ranks,
            "sim_wall_s": wall / 2 if sim_wall is None else sim_wall,
            "sim_cpu_s": wall / 2 if sim_cpu is None else sim_cpu, "peak_rss": rss, "time_s": 1.0}


def ring_allreduce(inputs):
    """Textbook ring allreduce on any payload supporting slicing and ``+``.

    Returns each rank's output as the list of its P blocks (shared references).
    """
    p = len(inputs)
    bounds = block_bounds(len(inputs[0]), p)
    blocks = [[x[s:e] for s, e in bounds] for x in inputs]
    for step in range(p - 1):  # reduce-scatter: r sends block r-s, receives r-s-1 from r-1
        sent = [blocks[r][(r - step) % p] for r in range(p)]
        for r in range(p):
            j = (r - step - 1) % p
            blocks[r][j] = add(blocks[r][j], sent[(r - 1) % p])
    for step in range(p - 1):  # allgather: r sends block r+1-s, receives r-s
        sent = [blocks[r][(r + 1 - step) % p] for r in range(p)]
        for r in range(p):
            blocks[r][(r - step) % p] = sent[(r - 1) % p]
    return blocks


def row(size, t_us, t_ip_us=None, n=8):
    """One current-format allreduce row of ``n`` ranks (float) with consistent algbw/busbw."""
    t_ip_us = t_us if t_ip_us is None else t_ip_us
    cols = []
    for t in (t_us, t_ip_us):
        alg = size / (t * 1e3)
        cols += [f"{t:.2f}", f"{alg:.2f}", f"{alg * 2 * (n - 1) / n:.2f}", "0"]
    return f"{size:>12} {size // 4:>12} float sum -1 " + " ".join(cols)


def _head(ranks=16):
    devices = "".join(f"#  Rank {r:2d} Group  0 Pid {r + 1} on host{r // 8} device  {r % 8} [0000:18:00] "
                      f"NVIDIA H100 80GB HBM3\n" for r in range(ranks))
    return ("# all_reduce_perf\n# nThread 1 nGpus 1 minBytes 8 maxBytes 4194304 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n" + devices
            + "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
              "   busbw #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
              "            (us)  (GB/s)  (GB/s)\n")

# -- nccl-tests logs of every *_perf ---------------------------------------------------------------


def _log(binary, rows, current=True, devices=0):
    head = [f"# Collective test starting: {binary}"] if current else [f"# {binary} -b 8 -e 1M -f 2 -g 8"]
    head += ["# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20"]
    head += [f"#  Rank {i} Group 0 Pid 1 on host device {i} [0x00] NVIDIA H100" for i in range(devices)]
    return "\n".join(head + rows) + "\n"


def line_graph(nodes, cap=1.0, lat=0.0, duplex="full"):
    g = nx.DiGraph()
    for i, n in enumerate(nodes):
        g.add_node(n, kind="gpu", server=0, local=i)
    for u, v in zip(nodes, nodes[1:]):
        for a, b in ((u, v), (v, u)):
            g.add_edge(a, b, bandwidth=cap, latency=lat, duplex=duplex, link_type="nvlink")
    return g


def run_flows(graph, flows, profile="ideal", routing="first", check=None, tuning=None):
    """flows: list of (src, dst, size, start); returns finish times in order."""
    env = SimEnvironment()
    net = Network(env, graph, load_profile(profile).network if isinstance(profile, str) else profile, routing, tuning=tuning)
    if check is not None:
        net.on_rates = lambda now, comp: check(net, now)
    done = [None] * len(flows)

    def starter(i, src, dst, size, start):
        yield env.timeout(start)
        net.transfer(src, dst, size, lambda f, i=i: done.__setitem__(i, env.now))

    for i, fl in enumerate(flows):
        env.process(starter(i, *fl))
    env.run()
    return done, net


@st.composite
def graph_and_flows(draw):
    n = draw(st.integers(3, 7))
    g = nx.DiGraph()
    for i in range(n):
        g.add_node(i, kind="gpu", server=0, local=i)
    # a random spanning tree plus extra edges keeps it connected
    for i in range(1, n):
        j = draw(st.integers(0, i - 1))
        extra = [(i, j)]
        if draw(st.booleans()):
            extra.append((i, draw(st.integers(0, n - 1))))
        for a, b in extra:
            if a == b or g.has_edge(a, b):
                continue
            cap = draw(st.sampled_from([1.0, 2.0, 5.0, 10.0]))
            lat = draw(st.sampled_from([0.0, 0.1, 1.0]))
            dup = draw(st.sampled_from(["full", "shared"]))
            g.add_edge(a, b, bandwidth=cap, latency=lat, duplex=dup, link_type="nvlink")
            g.add_edge(b, a, bandwidth=cap, latency=lat, duplex=dup, link_type="nvlink")
    flows = draw(st.lists(
        st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.0, 20.0), st.floats(0.0, 3.0)),
        min_size=1, max_size=12))
    flows = [(s, d, S, t) for s, d, S, t in flows if s != d]
    return g, flows


@st.composite
def random_cluster(draw):
    """A random valid cluster: servers of 1-4 GPUs, random intra-server links, GPUs wired
    to random switches of a random connected switch graph, random figures and duplex."""
    servers = draw(st.integers(1, 3))
    gpn = draw(st.integers(1, 4))
    nsw = draw(st.integers(1, 3))
    g = nx.DiGraph(name="random", description="hypothesis", gpus_per_node=gpn, default_group_size=gpn)
    bw = st.sampled_from([1e9, 5e9, 12.5e9, 5e10])
    lat = st.sampled_from([0.0, 1e-7, 1e-6, 5e-6])
    dup = st.sampled_from(["full", "shared"])

    def cable(u, v, link_type):
        add_cable(g, u, v, bandwidth=draw(bw), latency=draw(lat), link_type=link_type, duplex=draw(dup))

    for k in range(nsw):
        g.add_node(f"sw{k}", kind="switch", level="leaf")
        if draw(st.booleans()):
            g.nodes[f"sw{k}"].update(bandwidth=draw(bw), latency=draw(lat))
    for k in range(1, nsw):
        cable(f"sw{draw(st.integers(0, k - 1))}", f"sw{k}", "infiniband")
    for s in range(servers):
        for l in range(gpn):
            g.add_node(f"n{s}/gpu{l}", kind="gpu", server=s, local=l)
            cable(f"n{s}/gpu{l}", f"sw{draw(st.integers(0, nsw - 1))}", "infiniband")
            if l and draw(st.booleans()):
                cable(f"n{s}/gpu{l}", f"n{s}/gpu{draw(st.integers(0, l - 1))}", "nvlink")
    return topologies.validate(g)


def one_line_error(capsys, argv, *needles):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("simcollective: error:")]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


class Blob:
    """A payload of a given size (no data)."""

    def __init__(self, nbytes):
        self.nbytes = nbytes


def cli(*args):
    return subprocess.run([sys.executable, "-m", "simcollective.cli", *args], capture_output=True, text=True)


def _write(tmp_path, text, name="cfg.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p

# ----------------------------------------------------------------- helpers


def kinds(G):
    return Counter(d["kind"] for _, d in G.nodes(data=True))


def levels(G):
    return Counter(d["level"] for _, d in G.nodes(data=True) if d["kind"] == "switch")


def cable_bw(G, nodes_from, pred):
    """Sum of bandwidth of cables (u -> v) with u in nodes_from and pred(v)."""
    return sum(G.edges[u, v]["bandwidth"] for u in nodes_from for v in G.successors(u) if pred(v))


def is_switch(G, n):
    return G.nodes[n]["kind"] == "switch"


def leaf_ratio(G, leaves):
    """Host-facing bandwidth / uplink bandwidth over a set of leaves, measured from the graph."""
    down = cable_bw(G, leaves, lambda v: not is_switch(G, v))
    up = cable_bw(G, leaves, lambda v: is_switch(G, v) and G.nodes[v]["level"] != "leaf")
    return down / up


# every algorithm of every collective but allreduce, as registered
EXPECTED = {
    "allgather": {"ring", "recursive-doubling", "bruck", "direct", "ring-ring", "sparse-streams",
                  "nccl-ring", "nccl-nvls", "nccl"},
    "reduce-scatter": {"ring", "recursive-halving", "direct", "hierarchical", "nccl-ring", "nccl-nvls", "nccl"},
    "broadcast": {"binomial-tree", "pipelined-chain", "scatter-allgather", "ring", "nccl-ring", "nccl"},
    "reduce": {"binomial-tree", "reduce-scatter-gather", "pipelined-chain", "nccl-ring", "nccl"},
    "alltoall": {"pairwise", "bruck", "direct", "hierarchical"},
    "alltoallv": {"direct", "pairwise", "nccl", "hierarchical"},
}
# SMPI's own collectives (SimGrid 3.32), tested in tests/algorithms/test_smpi.py
SMPI = {
    "allgather": {"smpi-ring", "smpi-pair", "smpi-rdb", "smpi-bruck"},
    "allreduce": {"smpi-lr", "smpi-rdb", "smpi-rab-rdb"},
    "alltoall": {"smpi-pair", "smpi-ring", "smpi-basic-linear", "smpi-bruck"},
    "reduce": {"smpi-binomial", "smpi-flat-tree"},
    "broadcast": {"smpi-binomial-tree", "smpi-flattree", "smpi-scatter-lr-allgather", "smpi-scatter-rdb-allgather"},
    "reduce-scatter": {"smpi-mpich-pair", "smpi-mpich-rdb", "smpi-ompi-basic-recursivehalving"},
}
for _coll, _names in SMPI.items():
    if _coll in EXPECTED:
        EXPECTED[_coll] |= _names


# the hardware presets (the study presets are ABCI, DGX-1, DGX-2)
HARDWARE = ["dgx1-v100", "dgx2-v100", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72"]


# one small build of every preset builder: each is validated, saved and loaded
ALL_PRESETS = {
    "abci": lambda: topologies.abci(3),
    "dgx1": lambda: topologies.dgx1_cluster(7),
    "dgx2": lambda: topologies.dgx2_cluster(4),
    "fat-tree": lambda: topologies.fat_tree(40, hosts_per_leaf=8, oversubscription=2.0),
    "fat-tree-3": lambda: topologies.fat_tree(40, hosts_per_leaf=4, levels=3, leaves_per_pod=3),
    "fat-tree-dgx1": lambda: topologies.fat_tree(5, hosts_per_leaf=2, host="dgx1"),
    "dgx-h100": lambda: topologies.dgx_h100_cluster(2),
    # rented machines: a transport on every NIC (TCPX: Ethernet, Simple only), racks of unequal size
    "gcp-a3-high": lambda: topologies.build("gcp-a3-high", 2),
    "aws-p4d": lambda: topologies.build("aws-p4d", 2),
    "gb300-nvl72": lambda: topologies.build("gb300-nvl72", 5, {"domain_hosts": "3,2"}),
}


# -- a synthetic nccl-tests log made by the simulator (the fit tests of compare and validation.fit)

#: the values the synthetic log was "measured" at (the simulator's own times with them)
NIC_BW = 2.5e10

NET_LAT = 2e-5

SIZES = (8, 1024, 1 << 20, 4 << 20)

RING = "nccl-ring"    # forced, so that NCCL's pick cannot change with the option


def fit_row(size, t_us, factor=2 * 15 / 16):
    algbw = size / t_us / 1e3
    return (f"{size:12d} {size // 4:13d}     float     sum      -1 {t_us:9.2f} {algbw:7.2f} {algbw * factor:7.2f}"
            f"      0 {t_us:9.2f} {algbw:7.2f} {algbw * factor:7.2f}      0")


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory):
    from simcollective.validation.compare import compare

    """A 2 x 8 H100 all_reduce_perf log whose times are the simulator's own (nccl-ring) with
    nic_bandwidth=2.5e10 and net_latency=2e-5; its 8 B row is 1 us (no value of a rate reaches it)."""
    d = tmp_path_factory.mktemp("fit")
    draft = d / "draft.txt"
    draft.write_text(_head() + "\n".join(fit_row(s, 100.0) for s in SIZES) + "\n")
    res = compare(str(draft), topology="dgx-h100", nodes=2, algorithm=RING,
                  topology_opts={"nic_bandwidth": NIC_BW, "net_latency": NET_LAT})
    times = {r["size"]: r["simulated_time_us"] for r in res["rows"]}
    log = d / "ar.txt"
    log.write_text(_head() + "\n".join(fit_row(s, times[s]) for s in SIZES) + "\n")
    tiny = d / "tiny.txt"
    tiny.write_text(_head() + "\n".join(fit_row(s, 1.0 if s == 8 else times[s]) for s in SIZES) + "\n")
    return log, tiny, times


# -- the example job, run once (the job command's tests and the check that its keys are documented)

@pytest.fixture(scope="session")
def job_example(tmp_path_factory):
    """``simcollective job experiments/job_tp_dp.toml --json ... --trace ...``: its JSON document
    and its trace, read by every test that asks (none changes them)."""
    import json

    out = tmp_path_factory.mktemp("job")
    js, trace = out / "job.json", out / "trace.json"
    assert main(["job", str(EXPERIMENTS / "job_tp_dp.toml"), "--json", str(js), "--trace", str(trace)]) == 0
    return json.loads(js.read_text()), json.loads(trace.read_text())


# -- one collective on a contention-free mesh (the closed-form tests of every collective)

ALPHA, BW = 1e-6, 1e9          # mesh_graph defaults
BETA = 1 / BW
E = 4                          # int32 bytes


def sim(collective, algorithm, P, count, graph=None, dtype="int32", verify="full", root=None, **options):
    graph = mesh_graph(P, BW, ALPHA) if graph is None else graph
    from simcollective.simulate import RunConfig, run

    cfg = RunConfig(topology="test", collective=collective, algorithm=algorithm, elements=count, dtype=dtype,
                    gpus=P, options=options, verify=verify, root=root)
    return run(cfg, graph=graph)


# -- a sweep of four tiny points (the sweep tests)

TINY = """
name = "tiny"
[fixed]
topology = "abci"
nodes = 1
[grid]
algorithm = ["ring", "ring-ring"]
elements = ["4K", "16K"]
"""


# -- flows on a network with a given router, each flow's finish time (the engine's tests)

def run_routed_flows(graph, router, flows, profile="ideal"):
    from simcollective.network.engine import Network, SimEnvironment
    from simcollective.profiles import load_profile

    env = SimEnvironment()
    net = Network(env, graph, load_profile(profile).network, router=router)
    done = [None] * len(flows)
    for i, (s, d, size) in enumerate(flows):
        net.transfer(s, d, size, lambda f, i=i: done.__setitem__(i, env.now))
    env.run()
    return done, net


@pytest.fixture(autouse=True)
def _close_pyplot_figures():
    """Close the figures a test leaves open (the API returns its figures to the caller, who
    owns them): without it pyplot keeps them all and warns past 20."""
    yield
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")
