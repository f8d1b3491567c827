"""JIT compile time of the compiled kernels, recorded apart from the scenarios.

``compile_all`` drives every kernel once (a tiny run through the array store, entered and
left, the per-flow solve's filling called compiled, ``jit_after=0``, and a sparse merge). Run in a fresh
process with an empty numba cache it measures the first run in a fresh environment
(compilation included); run again with the same cache it measures a cached start (loading
the compiled kernels).
"""

from __future__ import annotations

import os
import tempfile
import time

from ._harness import measure

__all__ = ["compile_all", "jit_times", "warm_cache"]


def compile_all() -> dict:
    t0 = time.perf_counter()
    import networkx as nx

    from simcollective.network.engine import Network, SimEnvironment, Tuning
    from simcollective.profiles import load_profile

    t_import = time.perf_counter() - t0
    g = nx.DiGraph()
    for i in range(4):
        g.add_node(i, kind="gpu", server=0, local=i)
    for i in range(3):
        for a, b in ((i, i + 1), (i + 1, i)):
            g.add_edge(a, b, bandwidth=1e9, latency=1e-6, duplex="full", link_type="nvlink")
    env = SimEnvironment()
    tuning = Tuning(bulk_min=0, walk_limit=0, bulk_off=0, refresh=2, jit_after=0)
    net = Network(env, g, load_profile("ideal").network, tuning=tuning)
    for k, (s, d) in enumerate([(0, 3), (1, 3), (0, 2), (2, 3), (3, 0), (0, 1)]):
        net.transfer(s, d, 10**6 * (k + 1), lambda f: None)
    env.run()
    net2 = Network(SimEnvironment(), g, load_profile("ideal").network)
    for s, d in [(0, 3), (1, 3)]:
        net2.transfer(s, d, 10**6, lambda f: None)
    net2.env.run()
    # the per-flow solve's compiled filling (the runs above solve in the array store)
    from simcollective.network.filling import max_min_rates

    max_min_rates([1, 1, 1], [9, 9, 9], [0, 1, 2, 2], [0, 1, 0, 1], [1, 1, 1, 1], [1.0, 1.0], jit_after=0)
    # the sparse union (data/merge_kernel.py), for 4-byte values (int32, float32)
    import numpy as np

    from simcollective.data.sparse import SparseStream, merge

    a = SparseStream.from_pairs(0, 10**6, [1, 5], np.array([1, 2], dtype=np.int32))
    merge(a, SparseStream.from_pairs(0, 10**6, [5, 9], np.array([3, 4], dtype=np.int32)))
    return {"import_s": t_import, "wall_s": time.perf_counter() - t0, "modes": net.modes}


def jit_times() -> tuple:
    """(first run with an empty cache, cached run) in seconds, each in a fresh process."""
    old = os.environ.get("NUMBA_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["NUMBA_CACHE_DIR"] = cache
        try:
            first = measure(compile_all)
            cached = measure(compile_all)
        finally:
            if old is None:
                del os.environ["NUMBA_CACHE_DIR"]
            else:
                os.environ["NUMBA_CACHE_DIR"] = old
    return first, cached


def warm_cache() -> dict:
    """Run :func:`compile_all` once in a fresh process with the real kernel cache (numba's
    default, or ``NUMBA_CACHE_DIR``), so that the scenarios start with every kernel cached:
    after a code change the cache is stale, and without this the first scenario point
    would pay the compilation (S1's first point 7.95 s instead of about 1 s)."""
    return measure(compile_all)
