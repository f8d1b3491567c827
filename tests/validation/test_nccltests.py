"""Parsing nccl-tests logs: current and old formats, busbw-only, sections, every *_perf header."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcollective.errors import UserInputError
from simcollective.validation.nccltests import parse_log
from tests.conftest import _log


REF = Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests"


# -- nccl-tests logs ------------------------------------------------------------------------------------
CURRENT = """# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on host device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  3 on host device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  4 on host device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    14.52    0.00    0.00      0    14.39    0.00    0.00      0
       65536         16384     float     sum      -1    16.01    4.09    6.14      0    15.90    4.12    6.18      0
     1048576        262144     float     sum      -1    27.76   37.78   56.67      0    27.49   38.15   57.22      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 20.1
"""


def test_parser_current_format_with_devices():
    (t,) = parse_log("# Collective test starting: all_reduce_perf\n" + CURRENT)
    assert (t.collective, t.format, t.nranks, t.gpus_per_process, t.dtype) == ("all_reduce", "current", 4, 1, "float")
    assert [r.size for r in t.rows] == [8, 65536, 1048576]
    assert (t.rows[2].time_us, t.rows[2].busbw_ip) == (27.76, 57.22)


def test_parser_old_format():
    (t,) = parse_log((REF / "v100x8-dgx1like-1node_allreduce_konnase.txt").read_text())
    assert (t.collective, t.format, t.nranks, t.gpus_per_process) == ("all_reduce", "old", 8, 8)
    assert len(t.rows) == 25 and t.rows[-1].busbw == 129.14


def test_parser_busbw_only_and_sections_and_na():
    (t,) = parse_log((REF / "azure-ndh100v5-h100x8_allreduce_azurebench.txt").read_text())
    assert t.format == "busbw-only" and t.nranks is None and t.gpus_per_process == -1
    assert [r.size for r in t.rows[:8]] == [1024 << i for i in range(8)] and t.rows[-1].size == 8 << 30
    tables = parse_log((REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt").read_text())
    assert [x.nranks for x in tables] == [16, 32, 64, 16, 32, 64, 16]
    assert tables[0].title.startswith("Section A")
    (s,) = parse_log((REF / "a100x8-1node_sendrecv_liplus.txt").read_text())
    assert s.collective == "sendrecv" and s.rows[0].time_ip_us == 1211.8


def test_parser_rejects_non_logs():
    with pytest.raises(UserInputError, match="not nccl-tests output"):
        parse_log("hello\nworld 1 2 3\n")


def _row(size, count, root=-1, redop="sum", current=True):
    t = 10.0
    a = size / t / 1e3
    mid = f"float {redop} {root}" if current else "float sum"
    return f"{size} {count} {mid} {t} {a:.2f} {a:.2f} 0 {t} {a:.2f} {a:.2f} 0"


@pytest.mark.parametrize("binary,collective,per_rank", [
    ("all_gather_perf", "all_gather", True), ("reduce_scatter_perf", "reduce_scatter", True),
    ("alltoall_perf", "alltoall", True), ("broadcast_perf", "broadcast", False), ("reduce_perf", "reduce", False),
])
@pytest.mark.parametrize("current", [True, False])
def test_parser_reads_every_perf_header(binary, collective, per_rank, current):
    n = 8
    rows = [_row(s, s // (4 * n) if per_rank else s // 4, root=0 if not per_rank else -1, current=current)
            for s in (4096, 8192, 65536)]
    tables = parse_log(_log(binary, rows, current, devices=0 if per_rank else n), "x.txt")
    assert len(tables) == 1
    t = tables[0]
    assert t.collective == collective and t.format == ("current" if current else "old")
    assert t.nranks == n                                 # per-rank: size / (count x 4); else the Rank lines
    assert [r.size for r in t.rows] == [4096, 8192, 65536]
