"""Compare reports: bands, disagreement per size, summaries over self-consistent rows."""

from __future__ import annotations

from simcollective.validation.compare import band, disagrees, summarize


def test_band_and_disagreement_per_size():
    assert (band(8), band(64 << 10), band(1 << 20), band(63 << 20), band(64 << 20)) == (0.3, 0.3, 0.25, 0.25, 0.1)
    assert disagrees(8, 68.52, 24.70, 0.0, 0.0)                 # time, 2.8x: beyond 30 %
    assert not disagrees(8, 31.0, 24.0, 0.0, 0.0)               # 1.29x: within 30 %
    assert disagrees(1 << 20, 317.0, 93.26, 6.41, 21.78)        # E 1 MiB: busbw 0.29x
    assert not disagrees(1 << 20, 117.0, 115.7, 17.64, 17.84)
    assert disagrees(256 << 20, 0, 0, 234.0, 262.0) and not disagrees(256 << 20, 0, 0, 260.58, 270.31)
    assert not disagrees(1 << 20, None, None, 21.0, None)         # one column only (busbw-only logs)


def test_summary_over_all_rows_and_over_self_consistent_rows():
    rows = [{"size": 1 << 20, "busbw_ratio": 3.6, "time_ratio": 0.28, "log_disagrees": True},
            {"size": 2 << 20, "busbw_ratio": 1.1, "time_ratio": 0.9, "log_disagrees": False},
            {"size": 128 << 20, "busbw_ratio": 0.95, "time_ratio": 1.05, "log_disagrees": False}]
    s = summarize(rows)
    assert s["busbw_ratio_worst_1MiB_64MiB"] == 3.6 and s["busbw_ratio_worst_1MiB_64MiB_self_consistent"] == 1.1
    assert s["busbw_ratio_worst_ge_64MiB"] == s["busbw_ratio_worst_ge_64MiB_self_consistent"] == 0.95
    assert s["rows_log_disagrees"] == 1
