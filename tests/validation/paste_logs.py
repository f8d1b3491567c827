"""nccl-tests logs as users paste them, made from the published logs of experiments/nccl-tests/
(launcher prefixes, rows that cannot be simulated, another run appended): shared by the
parser's and the compare command's tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from simcollective.validation.nccltests import parse_log

REF = Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests"
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


def one_node_of_ranks(text: str) -> str:
    """The log with the '# Rank' lines of one node only (8 of its 16 ranks), as a paste of one
    node's output would have them."""
    ranks = [f"#  Rank {r:2d} Group  0 Pid  {100 + r} on ip-10-0-0-1 device  {r} [0x10] A100-SXM4-40GB" for r in range(8)]
    return "\n".join(["# Using devices"] + ranks + [text])
