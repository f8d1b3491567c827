"""Parsing nccl-tests logs: current and old formats, busbw-only, sections, every *_perf header;
and logs as users paste them: launcher prefixes, rows that cannot be simulated, files mixing
several runs and collectives (inputs made from the published logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcollective.errors import UserInputError
from simcollective.validation.nccltests import parse_log, strip_launcher
from simcollective.validation.settings import log_settings
from tests.conftest import _log
from tests.validation.paste_logs import GCP, LOGS, P4D, alltoall_run, one_node_of_ranks, prefixed, tables_of, with_bad_rows


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


# ------------------------------------------------------------------ launcher prefixes


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("prefix", [lambda i: "0: ", lambda i: "  0: ", lambda i: "[1,0]<stdout>:",
                                    lambda i: "[1,0]<stdout>: "], ids=["srun", "srun-padded", "mpirun", "mpirun-sp"])
def test_a_prefixed_log_reads_as_the_clean_one(log, prefix):
    text = log.read_text()
    assert tables_of(prefixed(text, prefix)) == tables_of(text)


def test_interleaved_ranks_and_stderr_lines_are_read_through():
    text = P4D.read_text()
    noisy = []
    for i, line in enumerate(text.splitlines()):
        noisy.append(f"[1,0]<stdout>:{line}")
        noisy.append(f"[1,{i % 16}]<stderr>:ip-10-0-0-1:1:1 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC")
    assert tables_of("\n".join(noisy)) == tables_of(text)


def test_a_byte_order_mark_does_not_hide_the_first_row():
    """A file saved by a Windows editor as "UTF-8 with BOM" starts with U+FEFF: the first line
    (here the table's first row, the header not pasted) reads as without it."""
    rows = "\n".join(ln for ln in P4D.read_text().splitlines() if ln[:1] == " ")
    assert tables_of("\ufeff" + rows) == tables_of(rows)
    assert tables_of("\ufeff" + P4D.read_text()) == tables_of(P4D.read_text())


def test_strip_launcher_leaves_other_lines_alone():
    assert strip_launcher("12: # nThread 1") == "# nThread 1"
    assert strip_launcher("[12,3]<stderr>:x") == "x"
    assert strip_launcher("           8             2   float") == "           8             2   float"
    assert strip_launcher("12:34:56 start") == "12:34:56 start"      # a clock, not a label


# ------------------------------------------------------------------ rows that cannot be simulated


def test_size_0_inf_and_negative_rows_are_dropped_and_listed():
    clean = P4D.read_text()
    text, where = with_bad_rows(clean)
    (t,) = parse_log(text)
    (c,) = parse_log(clean)
    assert t.rows == c.rows and t.nranks == c.nranks == 16
    assert [(d["line"], d["size"], d["reason"]) for d in t.dropped] == [
        (where[0], 0, "size 0: nothing to simulate"),
        (where[1], 4096, "inf in the time/algbw/busbw columns"),
        (where[2], -2147483648, "negative size or count"),
    ]
    assert t.dropped[1]["text"] == "4096 1024 float sum 0.00 inf inf 0e+00 0.00 inf inf 0e+00"


def test_a_truncated_row_is_dropped_and_listed():
    """A paste cut in the middle of a row (the last one, or one in the middle of the table) is
    listed with its line, not read as a row and not passed over in silence."""
    lines = P4D.read_text().splitlines()
    rows = [i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()]
    mid, last = rows[3], rows[-1]
    cut = lines[:mid] + [lines[mid][:40]] + lines[mid + 1:last] + [lines[last][:60]]
    (t,) = parse_log("\n".join(cut))
    (c,) = parse_log(P4D.read_text())
    assert [r.size for r in t.rows] == [r.size for r in c.rows if r.size not in (64, 1 << 30)]
    assert [(d["line"], d["size"]) for d in t.dropped] == [(mid + 1, 64), (last + 1, 1 << 30)]
    assert {d["reason"] for d in t.dropped} == {"incomplete row: fewer columns than a result row (a cut line?)"}
    assert t.dropped[1]["text"] == " ".join(lines[last][:60].split())


def test_nan_in_a_busbw_only_summary_is_dropped():
    text = "# all_reduce_perf\n1K 0.04\n2K nan\n4K 0.17\n"
    (t,) = parse_log(text)
    assert [r.size for r in t.rows] == [1024, 4096]
    assert [(d["line"], d["reason"]) for d in t.dropped] == [(3, "busbw nan")]


def test_a_log_of_dropped_rows_only_says_so():
    from simcollective.errors import UserInputError

    with pytest.raises(UserInputError, match=r"1 row\(s\) dropped: size 0"):
        parse_log("# all_reduce_perf\n 0 0 float sum -1 0.1 0.00 0.00 0 0.1 0.00 0.00 0\n")


# ------------------------------------------------------------------ several runs and collectives in one file


def test_each_run_of_a_mixed_file_has_its_own_collective_settings_and_ranks():
    a, b = parse_log(P4D.read_text() + "\n" + alltoall_run())
    assert (a.collective, b.collective) == ("all_reduce", "alltoall")
    assert a.settings == {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "ring"} and a.forced_algorithm == "ring"
    # the second run is not the p4d run: none of its header's settings, its own command's instead
    assert b.settings == {"NCCL_DEBUG": "WARN", "NCCL_PROTO": "Simple"} and b.forced_algorithm is None
    assert (a.nranks, b.nranks) == (16, 16) and b.run_devices == 16
    assert (a.redops, b.redops) == ({"sum"}, {"none"}) and a.problem is b.problem is None
    assert len(b.rows) == 6 and b.gpus_per_process == 1


@pytest.mark.parametrize("prefix", [lambda i: "", lambda i: "0: ", lambda i: "[1,0]<stdout>:"])
def test_two_published_logs_pasted_into_one_file_keep_their_own_settings(prefix):
    """Two annotated logs concatenated (the p4d run, then the A4 allgather, whose header has no
    nccl-tests run line): the second table follows the first run's closing ``Avg bus bandwidth``
    and states its own NCCL version, so it is another run: none of the p4d command's
    ``NCCL_ALGO=ring`` or ``NCCL_DEBUG``, its own version (2.25.1), not 2.7.8."""
    from tests.validation.paste_logs import GCP

    text = prefixed(P4D.read_text() + "\n" + GCP.read_text(), prefix)
    a, b = parse_log(text)
    assert (a.collective, b.collective) == ("all_reduce", "all_gather")
    assert a.settings == {"NCCL_DEBUG": "INFO", "NCCL_ALGO": "ring"} and a.forced_algorithm == "ring"
    assert b.settings == {} and b.forced_algorithm is None
    assert (a.nccl_version, b.nccl_version) == ("2.7.8", "2.25.1")
    assert [t.nranks for t in (a, b)] == [16, 16]


def test_a_runs_closing_line_names_its_own_collective_not_the_next_runs():
    """nccl-tests closes a run with ``# Collective test concluded: X_perf`` (as ``bench`` prints
    it): in a file of three runs one after the other, that line belongs to the run it closes, and
    each table reads the collective its own run starts with."""
    gather = [ln for ln in GCP.read_text().splitlines() if ln[:1].isdigit()][:6]
    text = "\n".join([P4D.read_text(), "# Collective test concluded: all_reduce_perf", alltoall_run(),
                      "# Collective test concluded: alltoall_perf", "# Collective test starting: all_gather_perf",
                      "# nThread 1 nGpus 1 minBytes 4096 maxBytes 131072 step: 2(factor)", *gather,
                      "# Collective test concluded: all_gather_perf"])
    tables = parse_log(text, "mixed.txt")
    assert [t.collective for t in tables] == ["all_reduce", "alltoall", "all_gather"]
    assert [t.problem for t in tables] == [None, None, None] and [t.nranks for t in tables] == [16, 16, 16]


def test_a_dropped_row_of_the_next_run_is_listed_with_that_run():
    """The second run's first row cannot be simulated (size 0, as alltoall_perf prints for
    sizes below one element per rank) and the first run's closing lines were not pasted: the
    drop is the second run's, which starts at its own ``# Collective test starting`` line."""
    first = "\n".join(ln for ln in P4D.read_text().splitlines() if "Avg bus" not in ln and "Out of bounds" not in ln)
    second = alltoall_run().replace("# Collective test starting: alltoall_perf", "# Collective test starting: "
                                    "alltoall_perf\n0 0 float none -1 0.1 0.00 0.00 0 0.1 0.00 0.00 0", 1)
    a, b = parse_log(first + "\n" + second)
    assert (a.dropped, [d["size"] for d in b.dropped]) == ([], [0])


def test_a_closing_line_names_the_collective_of_a_run_that_named_none_before():
    """A run whose only mention of its binary is its closing line reads that collective."""
    rows = [_row(s, s // 32, redop="none") for s in (4096, 8192)]
    text = "\n".join(["# all_reduce_perf", CURRENT.strip(), "# Collective test concluded: all_reduce_perf",
                      "# nThread 1 nGpus 1 minBytes 4096 maxBytes 8192", *rows,
                      "# Collective test concluded: alltoall_perf"])
    a, b = parse_log(text)
    assert (a.collective, b.collective) == ("all_reduce", "alltoall") and b.problem is None


def test_a_run_naming_no_binary_is_refused_when_its_op_column_contradicts():
    a, b = parse_log(P4D.read_text() + "\n" + alltoall_run(binary_named=False), "mixed.txt")
    assert a.problem is None
    assert b.collective == "all_reduce" and b.problem == (
        "mixed.txt section 2: the op column says none but the collective read is all_reduce_perf; name the "
        "section's binary in the file (e.g. '# Collective test starting: alltoall_perf')")


def test_the_op_column_is_read():
    (t,) = parse_log(P4D.read_text().replace("   sum   ", "   max   "))
    assert t.redops == {"max"} and t.problem is None


def test_tree_threshold_is_listed_as_not_modelled_with_the_reason():
    ls = log_settings({"NCCL_TREE_THRESHOLD": "0"}, "log", "allreduce", "auto")
    assert ls["not_modelled"]["NCCL_TREE_THRESHOLD"].startswith("0 (the size below which NCCL 2.4 ran tree")
    assert ls["algos"] is None and ls["applied"] == {}


def test_rank_lines_and_columns_that_disagree_are_both_kept():
    (t,) = parse_log(one_node_of_ranks(P4D.read_text()))
    assert (t.nranks, t.ranks_by_columns) == (8, 16)


def test_a_file_streamed_line_by_line_reads_as_the_whole_text():
    """parse_lines reads a stream of lines (a file read a block at a time) once: the file's
    binary and -g, named only after the table, still apply to it; ``-t`` names one too."""
    from simcollective.validation.nccltests import parse_lines

    rows_only = "\n".join(l for l in P4D.read_text().splitlines() if not l.startswith("#"))
    (t,) = parse_lines(iter((rows_only + "\n# all_reduce_perf -g 4\n").splitlines()))
    assert t.collective == "all_reduce" and t.gpus_per_process == 4
    (t,) = parse_lines(iter((rows_only + "\n# ./run.sh -t all_gather -g <nGPUs>\n").splitlines()))
    assert t.collective == "all_gather" and t.gpus_per_process == -1


@pytest.mark.parametrize("limit,value,needle", [
    ("MAX_TABLES", 2, "more than 2 result tables (line"),
    ("MAX_ROWS", 10, "a result table of more than 10 rows (line"),
    ("MAX_ALL_ROWS", 20, "more than 20 rows (line"),
])
def test_too_many_tables_or_rows_are_refused_when_read(monkeypatch, limit, value, needle):
    import simcollective.validation.nccltests as nt

    monkeypatch.setattr(nt, limit, value)
    three = "\n".join([P4D.read_text()] * 3)          # 3 tables of 28 rows
    with pytest.raises(UserInputError, match=needle.replace("(", r"\(")):
        parse_log(three, "x.txt")
