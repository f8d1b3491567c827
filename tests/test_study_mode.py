"""--timing study, --densify study and --study (study-quirks.md sections 3 and 5)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import topologies
from simcollective.algorithms.allreduce.ssar_split_allgather import StudyPairs
from simcollective.data.sparse import SparseStream
from simcollective.errors import UserInputError
from simcollective.network.engine import Network, SimEnvironment
from simcollective.profiles import load_profile
from simcollective.runtime import barrier_offsets
from simcollective.simulate import RunConfig, run_allreduce

M = 2**20


def run(**kw):
    return run_allreduce(RunConfig(**kw)).fields


def test_barrier_offsets_are_route_latencies_times_the_zero_byte_factor():
    g = topologies.build("abci", 4, {})
    gpus = [n for n in g if g.nodes[n]["kind"] == "gpu"]
    for prof, k in (("cm02", 1.0), ("smpi", 2.01467)):
        net = Network(SimEnvironment(), g, load_profile(prof).network, "study")
        off = barrier_offsets(net, gpus, load_profile(prof).network)
        assert off[0] == 0.0
        assert off[1] == pytest.approx(9.000e-6 * k, abs=1e-15)      # same node, NVLink
        assert off[4] == pytest.approx(15.464e-6 * k, abs=1e-15)     # n1: other leaves, FBB 0
        assert off[8] == pytest.approx(15.232e-6 * k, abs=1e-15)     # n2: same leaf
        assert off[10] == pytest.approx(24.232e-6 * k, abs=1e-15)    # n2 GPU 2: via n2 GPU 0


def test_timing_study_abci8_ring():
    # study-quirks.md section 5: ABCI 8 ring 19.007 -> 19.022 ms under CM02
    base = dict(topology="abci", nodes=2, algorithm="ring", elements=32 * M, dtype="int32", profile="cm02",
                routing="study", verify="symbolic")
    t0 = run(**base)
    t1 = run(**base, timing="study")
    assert t0["time_s"] == pytest.approx(19.006e-3, abs=2e-6)
    assert t1["time_s"] == pytest.approx(19.022e-3, abs=2e-6)
    assert sum(t1["phases"].values()) == pytest.approx(t1["time_s"], rel=1e-12)
    assert t1["timing"] == "study" and t0["timing"] == "simultaneous"


def test_timing_study_is_max_of_finish_minus_own_start():
    r = run_allreduce(RunConfig(topology="abci", nodes=2, algorithm="ring", elements=M, dtype="int32",
                                profile="cm02", timing="study"))
    res = r.result
    assert res.starts[0] == 0.0 and max(res.starts) > 0
    assert r.fields["time_s"] == max(f - s for f, s in zip(res.finish, res.starts))


def stream(n, idx):
    idx = np.asarray(idx, dtype=np.uint32)
    return SparseStream(0, n, idx, np.ones(len(idx), dtype=np.int32))


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
    # study-quirks.md section 3: 32 GPUs, N = 8M, d = 1/16: the allgather takes 1.73x longer
    base = dict(topology="abci", nodes=8, algorithm="ssar-split-allgather", elements=8 * M, dtype="int32",
                density=1 / 16, profile="cm02")
    a = run(**base)["phases"]["allgather"]
    b = run(**base, options={"densify": "study"})["phases"]["allgather"]
    assert b / a == pytest.approx(1.73, abs=0.01)


def test_dsar_study_drops_the_header_of_each_allgather_message():
    base = dict(topology="abci", nodes=2, algorithm="dsar-split-allgather", elements=M, dtype="int32",
                density=1 / 128, profile="cm02")
    a = run(**base)
    b = run(**base, options={"densify": "study"})
    P = 8
    assert a["message_bytes"] - b["message_bytes"] == 4 * P * (P - 1)
    assert b["verified"]


def test_study_sets_every_part():
    f = run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, dtype="int32", density=1 / 128,
            profile="cm02", study=True)
    assert (f["routing"], f["timing"], f["study"], f["options"]["densify"]) == ("study", "study", True, "study")
    # dense algorithms: no sizing rule needed, routing and timing still set
    f = run(topology="abci", nodes=2, algorithm="ring", elements=M, dtype="int32", profile="cm02", study=True)
    assert (f["routing"], f["timing"]) == ("study", "study") and "densify" not in f["options"]


def test_study_contradictions_are_errors():
    with pytest.raises(UserInputError, match="--routing hash contradicts"):
        run(topology="abci", nodes=2, algorithm="ring", elements=M, routing="hash", study=True)
    with pytest.raises(UserInputError, match="--densify exact contradicts"):
        run(topology="abci", nodes=2, algorithm="sparse-ring", elements=M, density=1 / 128, study=True,
            options={"densify": "exact"})


def cli(*args):
    return subprocess.run([sys.executable, "-m", "simcollective.cli", *args], capture_output=True, text=True)


def test_cli_study_end_to_end():
    out = cli("run", "--topology", "dgx2", "--nodes", "1", "--algorithm", "ring", "--elements", "32M",
              "--dtype", "int32", "--profile", "cm02", "--study", "--json", "-", "--quiet")
    assert out.returncode == 0, out.stderr
    f = json.loads(out.stdout)
    assert f["time_s"] == pytest.approx(80.8e-3, rel=2e-3)
    out = cli("run", "--topology", "abci", "--nodes", "2", "--algorithm", "sparse-ring", "--elements", "64K",
              "--density", "1/128", "--study")
    assert out.returncode == 0 and "study        --study: routing study, timing study, densify study" in out.stdout
    out = cli("run", "--topology", "abci", "--algorithm", "ssar-recursive-doubling", "--elements", "1M",
              "--density", "1/128", "--densify", "study", "--quiet")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "has no study sizing rule" in out.stderr
    out = cli("run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring", "--elements", "1M",
              "--study", "--quiet")
    assert out.returncode == 2 and "--routing study" in out.stderr


def test_sweep_key_study(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('[fixed]\ntopology = "abci"\nnodes = 2\nelements = "64K"\ndtype = "int32"\n'
                   'profile = "cm02"\nalgorithm = "ring"\n[grid]\nstudy = [true, false]\n')
    out = cli("sweep", str(cfg), "--out", str(tmp_path / "s.csv"), "--quiet")
    assert out.returncode == 0, out.stderr
    import csv

    rows = {r["study"]: r for r in csv.DictReader(open(tmp_path / "s.csv"))}
    assert rows["True"]["out_routing"] == "study" and rows["True"]["out_timing"] == "study"
    assert rows["False"]["out_routing"] == "first"
    assert float(rows["True"]["time_s"]) > float(rows["False"]["time_s"])


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


def test_study_table_script_config_and_report(experiment):
    # the config expands to the 36 published cells; the report joins ours and published
    from pathlib import Path

    import pandas as pd

    from simcollective.sweeps import expand_grid

    root = Path(__file__).resolve().parents[1]
    st = experiment("study_table")
    pts = expand_grid(root / "experiments" / "configs" / "study_table.toml")
    assert len(pts) == 36 and all(p["study"] is True and p["profile"] == "smpi" for p in pts)
    cells = {(p["topology"], p["gpus"], p["elements"]) for p in pts}
    assert cells == set(st.PUBLISHED)
    # a fake result: every cell 10 % above published except one algorithm made fastest
    rows = []
    for (topo, gpus, n), pub in st.PUBLISHED.items():
        for algo, p in zip(st.ALGORITHMS, pub):
            t = 1e-5 if (topo == "dgx2" and algo == "ring") else p * 1.1e-3
            rows.append({"ok": True, "topology": topo, "gpus": gpus, "elements": n, "algorithm": algo,
                         "time_s": t})
    cmp = st.compare(pd.DataFrame(rows))
    assert len(cmp) == 36
    assert cmp[cmp.algorithm == "ring-ring"]["error_pct"].round(6).eq(10.0).all()
    md = st.markdown(cmp)
    assert "same fastest algorithm in 5 of 6 rows" in md
    assert "ring / sparse-ring-ring (DIFFERENT)" in md
