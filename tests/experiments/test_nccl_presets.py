"""``experiments/nccl_presets.py``: every published log with only what its header gives."""

from __future__ import annotations

import json

import pytest

from topologies.registry import PRESETS


@pytest.fixture(scope="module")
def mod(experiment):
    return experiment("nccl_presets")


def test_every_allreduce_and_allgather_log_is_run_on_a_preset_with_nothing_fitted(mod):
    logs = {p.name for p in mod.LOGS.glob("*.txt")} - {"a100x8-1node_sendrecv_liplus.txt"}   # sendrecv: not simulated
    assert {log for _, log, _ in mod.PRESET_RUNS} == logs
    for name, log, kw in mod.PRESET_RUNS:
        assert kw["topology"] in PRESETS, name
        assert set(kw) <= {"topology", "nodes", "section"}, name      # no figure, no profile, no NCCL version
    names = [name for name, _, _ in mod.PRESET_RUNS]
    assert len(set(names)) == len(names)


def test_a_run_writes_its_comparison_and_counts_its_band_hits(mod, monkeypatch, tmp_path):
    rows = [{"size": 1 << 30, "simulated_busbw": 105.0, "measured_busbw": 100.0, "other_busbw": None,
             "simulated_time_us": 1.0, "measured_time_us": 1.0, "other_time_us": None},
            {"size": 1 << 31, "simulated_busbw": 120.0, "measured_busbw": 100.0, "other_busbw": 110.0,
             "simulated_time_us": 1.0, "measured_time_us": 1.0, "other_time_us": None}]
    seen = {}
    monkeypatch.setattr(mod, "compare", lambda log, **kw: seen.update(kw) or {"rows": rows})
    hits = mod.run_one("x", "p4d.txt", {"topology": "aws-p4d", "nodes": 2}, tmp_path)
    assert seen == {"topology": "aws-p4d", "nodes": 2}
    assert hits["busbw >= 64 MiB (10 %)"] == [2, 2]            # 120 vs the in-place 110: 1.09, inside
    assert json.loads((tmp_path / "presets" / "x.json").read_text())["rows"] == rows
    assert mod.command("p4d.txt", {"topology": "aws-p4d", "nodes": 2}) == \
        "simcollective compare experiments/nccl-tests/p4d.txt --topology aws-p4d --nodes 2"
