"""Shared test helpers: small hand-made graphs whose timings have closed forms."""

import importlib.util
from pathlib import Path

import networkx as nx
import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


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
