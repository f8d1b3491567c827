"""Reading nccl-tests output as users paste it (simcollective.validation.nccltests): launcher
prefixes, rows that cannot be simulated, files mixing several runs and collectives. The inputs
are the published logs of experiments/nccl-tests/, edited as a paste would edit them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from simcollective.validation.nccltests import parse_log, strip_launcher
from simcollective.validation.settings import log_settings

REF = Path(__file__).parents[2] / "experiments" / "nccl-tests"
LOGS = sorted(REF.glob("*.txt"))
P4D = REF / "p4d-a100x8-2node-efa_allreduce_awsdlami.txt"          # all_reduce, old format, 16 ranks
GCP = REF / "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt"       # all_gather, current format, 16 ranks


def tables_of(text: str) -> list:
    return [dataclasses.asdict(t) for t in parse_log(text)]


def prefixed(text: str, prefix) -> str:
    return "\n".join(prefix(i) + line for i, line in enumerate(text.splitlines()))


def alltoall_run(binary_named: bool = True, rows: int = 6) -> str:
    """An nccl-tests alltoall run as its binary prints it (header, 16 '# Rank' lines, the table),
    its rows the published B200 rows (16 ranks, size = 16 x count x 4, op none)."""
    body = [ln for ln in GCP.read_text().splitlines() if ln[:1].isdigit()][:rows]
    return "\n".join(
        (["# Collective test starting: alltoall_perf"] if binary_named else [])
        + ["# nThread 1 nGpus 1 minBytes 4096 maxBytes 131072 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
        + [f"#  Rank {r:2d} Group  0 Pid  {4000 + r} on a4-vm-{1 + r // 8} device  {r % 8} [0x00] NVIDIA B200"
           for r in range(16)]
        + ["#", "# command: mpirun -x NCCL_DEBUG=WARN -x NCCL_PROTO=Simple ...",
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong"]
        + body + ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.23", ""])


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


def test_strip_launcher_leaves_other_lines_alone():
    assert strip_launcher("12: # nThread 1") == "# nThread 1"
    assert strip_launcher("[12,3]<stderr>:x") == "x"
    assert strip_launcher("           8             2   float") == "           8             2   float"
    assert strip_launcher("12:34:56 start") == "12:34:56 start"      # a clock, not a label


# ------------------------------------------------------------------ rows that cannot be simulated


def with_bad_rows(text: str) -> tuple:
    """The log with a size-0 row before its first row, an inf row in the middle and an
    overflowed (negative) size after its last; and the 1-based line numbers of the three."""
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit())
    last = max(i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit())
    zero = "           0             0   float     sum      0.11    0.00    0.00  0e+00      0.11    0.00    0.00  0e+00"
    inf = "        4096          1024   float     sum      0.00     inf     inf  0e+00      0.00     inf     inf  0e+00"
    neg = ("  -2147483648   -536870912   float     sum     140462   15.29   28.67  5e-07     140220   15.32   28.72"
           "  5e-07")
    out = lines[:first] + [zero] + lines[first:first + 5] + [inf] + lines[first + 5:last + 1] + [neg] + lines[last + 1:]
    return "\n".join(out), [first + 1, first + 7, last + 4]


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


def one_node_of_ranks(text: str) -> str:
    """The log with the '# Rank' lines of one node only (8 of its 16 ranks), as a paste of one
    node's output would have them."""
    ranks = [f"#  Rank {r:2d} Group  0 Pid  {100 + r} on ip-10-0-0-1 device  {r} [0x10] A100-SXM4-40GB" for r in range(8)]
    return "\n".join(["# Using devices"] + ranks + [text])


def test_rank_lines_and_columns_that_disagree_are_both_kept():
    (t,) = parse_log(one_node_of_ranks(P4D.read_text()))
    assert (t.nranks, t.ranks_by_columns) == (8, 16)
