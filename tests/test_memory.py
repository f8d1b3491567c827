"""The memory guard: huge machines refused up front naming the option that fits, estimates."""

import numpy as np
import pytest

from tests.conftest import one_line_error, run_cli


RING = ["run", "--algorithm", "ring", "--elements", "1M"]


# -- resource guard ---------------------------------------------------------------------------

@pytest.fixture
def memory_20g(monkeypatch):
    monkeypatch.setenv("SIMCOLLECTIVE_MEMORY", str(20 * 2**30))


def test_guard_refuses_a_huge_machine_up_front(capsys, memory_20g, monkeypatch):
    import topologies

    built = []
    real_build = topologies.build
    monkeypatch.setattr(topologies, "build", lambda name, nodes, *a, **k: built.append(nodes) or real_build(
        name, nodes, *a, **k))
    line = one_line_error(capsys, ["run", "--nodes", "100000", "--algorithm", "ring", "--elements", "1M"],
                          "--nodes 100000", "400000 GPUs", "20.0 GiB available", "at most about")
    assert built == [1]            # only the one-node probe was built
    assert "GiB of memory" in line


def test_guard_dense_full_names_the_option_that_fits(capsys, memory_20g):
    one_line_error(capsys, ["run", "--nodes", "16", "--elements", "1G", "--verify", "full", "--algorithm", "ring"],
                   "64 ranks x 1073741824 x float32", "full data", "20.0 GiB available", "--verify symbolic")


def test_guard_sparse(capsys, memory_20g):
    one_line_error(capsys, ["run", "--nodes", "4", "--elements", "1G", "--algorithm", "sparse-ring",
                            "--density", "1/2"], "sparse data", "--density")


def test_guard_lets_large_sparse_runs_that_fit_through(memory_20g):
    """Regression: the guard charged every rank a result of its own and refused the S4 and S5
    benchmark runs (sparse-ring-ring at 1024 and 256 ranks, measured peaks 1.25 and 0.59 GB)
    as needing 257 and 48 GiB."""
    from simcollective.memory import check_run_memory

    for ranks in (256, 1024):
        need = check_run_memory(ranks, 32 * 2**20, np.dtype("int32"), "sparse", 32 * 2**20 // 1024, 20_000)
        assert need < 2 * 2**30


def test_guard_estimate_and_small_memory(capsys, monkeypatch):
    from simcollective.memory import BYTES_PER_RANK, estimate_run_bytes

    base = estimate_run_bytes(4, 2**20, 4, "symbolic")
    assert estimate_run_bytes(4, 2**20, 4, "full") - base == 3 * 4 * 2**22 + 8 * 2**20
    assert estimate_run_bytes(8, 2**20, 4, "symbolic") - base == 4 * BYTES_PER_RANK
    monkeypatch.setenv("SIMCOLLECTIVE_MEMORY", str(100 * 2**20))
    # 4 ranks x 16M float32 in full: 768 MiB of data does not fit in 100 MiB; symbolic does
    one_line_error(capsys, RING[:-1] + ["16M", "--verify", "full"], "--verify symbolic")
    code, out, err = run_cli(capsys, *RING[:-1], "16M", "--verify", "symbolic")
    assert code == 0, err


# -- per-algorithm estimates against the committed measurements -------------------------------

def _measured():
    import json
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "guard_costs.json").read_text())


@pytest.mark.parametrize("key", ["allreduce/ring", "allreduce/sparse-ring-ring", "allgather/ring",
                                 "allreduce/rabenseifner", "alltoall/pairwise", "reduce-scatter/ring"])
def test_estimates_within_1_5x_of_the_measured_peaks(key):
    """The estimate of each measured run the memory fit is made from (dense full data, sparse
    data, size-only; not the compiled path's runs, which measure its speed) is within 1.5x of
    the peak RSS measured by benchmarks/guard_costs.py."""
    from simcollective.algorithms import get_algorithm
    from simcollective.memory import estimate_run_bytes

    collective, name = key.split("/")
    kind = get_algorithm(name, collective).kind
    density_of = {"full": 1 / 64, "wide": 1 / 1024}
    for run_name, run in _measured()["runs"][key].items():
        if not isinstance(run, dict) or run_name not in ("sym", "small", "full", "wide"):
            continue
        mode = "sparse" if kind == "sparse" else "symbolic" if run_name != "full" else "full"
        density = density_of.get(run_name, 1 / 256) if kind == "sparse" else None
        k = int(run["n"] * density) if density else None
        est = estimate_run_bytes(run["P"], run["n"], 4, mode, k, 0, (collective, name))
        assert run["rss"] / 1.5 <= est <= 1.5 * run["rss"], (run_name, est, run["rss"])


#: peaks of runs the fit never saw (``benchmarks.guard_costs.measure_one`` on abci, seed 1, float32):
#: (collective, algorithm, ranks, elements per rank, itemsize, mode, density, peak RSS bytes)
CHECKS = [
    ("allreduce", "ring", 64, 4 * 2**20, 4, "full", None, 1_163_091_968),
    ("allreduce", "rabenseifner", 64, 4 * 2**20, 4, "full", None, 1_936_097_280),
    ("allgather", "ring", 64, 2**20, 4, "full", None, 594_817_024),
    ("allreduce", "sparse-ring-ring", 256, 32 * 2**20, 4, "sparse", 1 / 1024, 996_999_168),
    ("allreduce", "ssar-recursive-doubling", 256, 32 * 2**20, 4, "sparse", 1 / 1024, 1_548_333_056),
]
# (int32 sparse data takes less: 593 MB and 636 MB for the two sparse runs; the float32 fit is
# then 1.6x and 2.3x over, on the safe side)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: f"{c[1]}-{c[2]}")
def test_estimates_within_1_5x_of_runs_the_fit_did_not_see(check):
    """Dense full data (the generic bound was 2.8x over) and sparse-ring-ring (25 % under)."""
    from simcollective.memory import estimate_run_bytes

    collective, name, ranks, n, itemsize, mode, density, rss = check
    k = int(n * density) if density else None
    est = estimate_run_bytes(ranks, n, itemsize, mode, k, 0, (collective, name))
    assert rss / 1.5 <= est <= 1.5 * rss, (est / rss)


def test_a_plan_resolved_only_to_count_its_messages_skips_the_memory_check(monkeypatch):
    """``resolve(..., check_memory=False)`` (the benchmarks' estimates of runs too large to
    run here) builds the plan a run that does not fit refuses; the default still refuses."""
    import simcollective.memory as memory
    from simcollective.errors import UserInputError
    from simcollective.guard import expected_messages
    from simcollective.resolve import resolve
    from simcollective.run_config import RunConfig

    monkeypatch.setattr(memory, "available_memory", lambda: 1)
    cfg = RunConfig(topology="abci", nodes=2, algorithm="ring", elements=1024, dtype="float32")
    with pytest.raises(UserInputError, match="this run needs about"):
        resolve(cfg)
    plan = resolve(cfg, check_memory=False)
    assert plan.P == 8 and expected_messages(plan) == 2 * 7 * 8
