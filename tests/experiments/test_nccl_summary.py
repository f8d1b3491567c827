"""``experiments/nccl_summary.py``: the per-band verdicts of the targets and the refresh of ``docs/validation.md``."""

from __future__ import annotations

import json

import pytest


KiB, MiB = 1024, 1024 * 1024


@pytest.fixture(scope="module")
def mod(experiment):
    return experiment("nccl_summary")


def summary_row(size, t_ratio, bw_ratio, meas_bw=10.0, **extra):
    return {"size": size, "measured_time_us": 100.0, "simulated_time_us": 100.0 * t_ratio, "time_ratio": t_ratio,
            "measured_busbw": meas_bw, "simulated_busbw": meas_bw * bw_ratio if bw_ratio else None,
            "busbw_ratio": bw_ratio, "algorithm_chosen": "nccl-ring", "protocol": "simple", "channels": 4,
            "measured_time_derived": False, **extra}


def result(rows):
    return {"rows": rows}


def test_band_edges_are_inclusive_and_exclusive_as_the_targets_say(mod):
    # <= 64 KiB: time within 30 %; 1 MiB to below 64 MiB: busbw within 25 %; from 64 MiB: within 10 %
    res = result([summary_row(64 * KiB, 1.30, 1.0), summary_row(128 * KiB, 5.0, 5.0), summary_row(MiB, 1.0, 0.75),
                  summary_row(32 * MiB, 1.0, 1.25), summary_row(64 * MiB, 1.0, 1.10), summary_row(1 << 30, 1.0, 0.90)])
    assert [mod.band_verdict(res, b) for b in mod.BANDS] == ["met", "met", "met"]   # 128 KiB is in no band
    res = result([summary_row(64 * KiB, 1.31, 1.0), summary_row(MiB, 1.0, 1.26), summary_row(64 * MiB, 1.0, 1.11)])
    assert [mod.band_verdict(res, b) for b in mod.BANDS] == [
        "missed at 64 KiB (worst 1.31)", "missed at 1 MiB (worst 1.26)", "missed at 64 MiB (worst 1.11)"]


def test_missed_sizes_are_reported_as_runs_of_consecutive_sizes_with_the_worst_ratio(mod):
    sizes = [64 * MiB << k for k in range(6)]        # 64 MiB .. 2 GiB
    ratios = [1.2, 1.3, 1.0, 0.8, 0.85, 1.05]
    res = result([summary_row(s, 1.0, r) for s, r in zip(sizes, ratios)])
    # 0.8 is 12.5 % below the 0.9 edge, 1.3 is 18 % above 1.1: 1.3 is the worst
    assert mod.band_verdict(res, mod.BANDS[2]) == "missed at 64 MiB-128 MiB, 512 MiB-1 GiB (worst 1.30)"


def test_rows_where_the_log_disagrees_with_itself_are_counted_not_dropped(mod):
    res = result([summary_row(MiB, 1.0, 3.0, log_disagrees=True), summary_row(2 * MiB, 1.0, 1.3)])
    assert mod.band_verdict(res, mod.BANDS[1]) == \
        "missed at 1 MiB-2 MiB (worst 3.00) (1 where the log disagrees with itself)"
    assert "| 1 MiB (!) |" in mod.rows_table(res)


def test_an_empty_band_is_a_dash_and_sizes_print_as_the_doc_does(mod):
    res = result([summary_row(MiB, 1.0, 1.0)])
    assert mod.band_verdict(res, mod.BANDS[0]) == "-"
    assert [mod.fmt_size(s) for s in (8, 1536, MiB, 3 << 30)] == ["8 B", "1.5 KiB", "1 MiB", "3 GiB"]


def test_doc_tables_between_markers_are_replaced_and_nothing_else(mod, tmp_path):
    results = {"v100x8": result([summary_row(MiB, 1.0, 1.02), summary_row(64 * MiB, 1.0, 0.99)])}
    for name, res in results.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(res))
    doc = tmp_path / "validation.md"
    doc.write_text("intro\n<!-- nccl:summary -->\nold\n<!-- /nccl:summary -->\nmiddle\n"
                      "<!-- nccl:rows v100x8 -->\nold rows\nmore\n<!-- /nccl:rows -->\nend\n")
    assert mod.main([str(tmp_path), "--doc", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and text.startswith("intro\n") and "\nmiddle\n" in text and text.endswith("end\n")
    assert "| 8 x V100 (1 node, 2019 NCCL) | 10.2 / 10.0 (1.02) | 9.9 / 10.0 (0.99) |" in text
    assert "| 64 MiB | 100.00 | 100.00 | 1.00 | 10.00 | 9.90 | 0.99 | nccl-ring/simple/4 |" in text
    # a marker naming a run without JSON is an error naming it, and the file is left as it was
    doc.write_text("<!-- nccl:rows nope -->\nx\n<!-- /nccl:rows -->\n")
    with pytest.raises(SystemExit, match="'nope'"):
        mod.main([str(tmp_path), "--doc", str(doc)])
    assert doc.read_text() == "<!-- nccl:rows nope -->\nx\n<!-- /nccl:rows -->\n"


def test_readme_is_an_alias_of_doc(mod, tmp_path):
    (tmp_path / "v100x8.json").write_text(json.dumps(result([summary_row(MiB, 1.0, 1.02)])))
    doc = tmp_path / "validation.md"
    doc.write_text("<!-- nccl:rows v100x8 -->\nold\n<!-- /nccl:rows -->\n")
    assert mod.main([str(tmp_path), "--readme", str(doc)]) == 0
    assert "old" not in doc.read_text() and "| 1 MiB | 100.00 |" in doc.read_text()
