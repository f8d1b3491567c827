"""The compute model: scatter-add costs the sparse entries only, the study compute table."""

import numpy as np
import pytest

import topologies
from simcollective.data.sparse import SparseStream
from simcollective.profiles import load_profile
from simcollective.simulate import run_allreduce, RunConfig


M = 2**20


def run(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def stream(n, idx):
    idx = np.asarray(idx, dtype=np.uint32)
    return SparseStream(0, n, idx, np.ones(len(idx), dtype=np.int32))


def test_scatter_add_costs_the_sparse_entries_only():
    # dense + sparse is a scatter-add: it costs the sparse stream's entries, not the
    # dense part's length (DSAR's accumulator); sparse + sparse costs both
    from dataclasses import replace

    from simcollective.data.dense import scatter_add  # noqa: F401  (the operation modelled)
    from simcollective.runtime import run_ranks

    ideal = load_profile("ideal")
    prof = replace(ideal, compute=replace(ideal.compute, sparse_elements_per_second=1e6))
    g = topologies.build("abci", 1, {})
    dense = SparseStream(0, 1000, None, np.zeros(1000, dtype=np.int32))
    sp = stream(1000, [1, 5, 9])
    got = {}

    def main(comm):
        t = comm.now
        yield comm.add(dense, sp)
        got["dense+sparse"] = comm.now - t
        t = comm.now
        yield comm.add(sp, sp)
        got["sparse+sparse"] = comm.now - t
        return None

    run_ranks(g, ["n0/gpu0"], main, lambda r: (), prof)
    assert got["dense+sparse"] == pytest.approx(3 / 1e6, rel=1e-12)
    assert got["sparse+sparse"] == pytest.approx(6 / 1e6, rel=1e-12)


def test_smpi_study_uses_the_study_compute_table():
    p = load_profile("smpi")
    assert p.compute.dense_bytes_per_second == 0
    s = p.with_study_compute()
    assert s.compute.dense_bytes_per_second > 0 and s.compute.sparse_elements_per_second > 0
    f = run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, dtype="int32", density=1 / 128,
            profile="smpi", study=True)
    assert f["phases"].get("compute", 0) > 0
    f = run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, dtype="int32", density=1 / 128,
            profile="smpi")
    assert f["phases"].get("compute", 0) == 0
