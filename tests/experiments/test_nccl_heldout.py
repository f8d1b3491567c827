"""``experiments/nccl_heldout.py``: each fold is fitted without the run it predicts."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def mod(experiment):
    return experiment("nccl_heldout")


def comparison(ratio):
    return {"rows": [{"size": 8 << 30, "simulated_busbw": 100.0 * ratio, "measured_busbw": 100.0,
                      "other_busbw": None, "simulated_time_us": 1.0, "measured_time_us": 1.0,
                      "other_time_us": None, "busbw_ratio": ratio}]}


class Recording(dict):
    """The in-sample comparisons, remembering which runs were read."""

    def __init__(self, *a):
        super().__init__(*a)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def test_every_fold_is_fitted_without_its_held_out_run(mod, monkeypatch, tmp_path):
    insample = {name: comparison(1.1) for name, _, _ in mod.RUNS}
    folds, real = [], mod.fold_values

    def spy(runs, held_out):
        rec = Recording(runs)
        values = real(rec, held_out)
        assert held_out not in rec.read, f"the fit of the fold holding out {held_out} read its log"
        folds.append(held_out)
        return values

    monkeypatch.setattr(mod, "fold_values", spy)
    monkeypatch.setattr(mod, "compare", lambda *a, **k: comparison(1.0))
    out = [mod.fold(name, log, args, insample, tmp_path) for name, log, args in mod.RUNS]
    assert folds == [name for name, _, _ in mod.RUNS]          # every fold's figures came through the fit
    e = next(f for f in out if f["run"] == "h100x32-E")
    assert e["refitted"]["net_conn_bandwidth"]["held_out"] == pytest.approx(20.44e9 / 1.1)   # from C alone
    assert next(f for f in out if f["run"] == "h100x16-A")["refitted"] == {}


def test_compare_kwargs_of_a_run(mod):
    kw = mod.compare_kwargs(["--section", "3", "--topology", "dgx-h100", "--nodes", "8",
                             "--topology-opt", "net_conn_bandwidth=20.44e9"])
    assert kw["section"] == 3 and kw["nodes"] == 8 and kw["topology"] == "dgx-h100"
    assert set(kw["topology_opts"]) == {"net_conn_bandwidth"}
