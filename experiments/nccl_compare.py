"""Run `simcollective compare` on every published allreduce and allgather log of experiments/nccl-tests/.

    python experiments/nccl_compare.py [OUTDIR]      (default: experiments/results/nccl)

Writes, per log, the table (.txt), the JSON (.json) and the busbw plot (.png). 3-6 min wall
(2-2.5 min CPU) on the project's shared 2-core machine, most of it the 4- and 8-node sections.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

from simcollective.cli import main

HERE = Path(__file__).parent
#: relative to the working directory, so the results record the log as `experiments/nccl-tests/...` run from the
#: project root, not a path of the machine they were made on
LOGS = Path(os.path.relpath(HERE / "nccl-tests"))
#: sections C-G of the H100 thread are one cluster (user gj-aion): its network connections carry at
#: most 20.44 GB/s each, FITTED to section E's 8 GiB ring busbw (324.5 GB/s = 16 channels x 20.28;
#: see dgx_h100's net_conn_bandwidth) and validated on C, D, F, G. Sections A, B (another user's
#: machines) run without it.
GJ_AION = ["--topology-opt", "net_conn_bandwidth=20.44e9"]
RUNS = [  # name, log, arguments
    ("v100x8", "v100x8-dgx1like-1node_allreduce_konnase.txt", ["--topology", "dgx1-v100"]),
    ("a100x8", "azure-nda100v4-a100x8_allreduce_azurebench.txt", ["--topology", "dgx-a100"]),
    ("h100x8-nvls", "azure-ndh100v5-h100x8_allreduce_azurebench.txt", ["--topology", "dgx-h100"]),
    ("h100x16-A", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "1", "--topology", "dgx-h100", "--nodes", "2"]),
    ("h100x32-B", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "2", "--topology", "dgx-h100", "--nodes", "4"]),
    ("h100x64-C", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "3", "--topology", "dgx-h100", "--nodes", "8"] + GJ_AION),
    ("h100x16-D", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "4", "--topology", "dgx-h100", "--nodes", "2"] + GJ_AION),
    ("h100x32-E", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "5", "--topology", "dgx-h100", "--nodes", "4"] + GJ_AION),
    ("h100x64-F", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "6", "--topology", "dgx-h100", "--nodes", "8"] + GJ_AION),
    ("h100x16-G-ring", "h100x8-2to8node-ib400_allreduce_ncclt309.txt", ["--section", "7", "--topology", "dgx-h100", "--nodes", "2"] + GJ_AION),
    ("a100x16-p4d", "p4d-a100x8-2node-efa_allreduce_awsdlami.txt",
     # the aws-p4d preset: 4 EFA devices of 100 Gb/s, the 75 us aws-ofi-nccl advertises to NCCL (documented);
     # each device's goodput of EFA's 2020 stack (NCCL 2.7.8), 7.34e9 of its 12.5e9, is FITTED to this log
     # (busbw plateau 28.7 GB/s = 4 x 7.17): no AWS document gives it and no other EFA log validates it
     ["--topology", "aws-p4d", "--nodes", "2", "--topology-opt", "nic_bandwidth=7.34e9"]),
    ("b200x16-allgather", "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt",
     ["--topology", "dgx-b200", "--nodes", "2", "--topology-opt", "nics_per_node=8", "--topology-opt", "nic_bandwidth=50e9"]),
]


def run(outdir: Path) -> int:
    outdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for name, log, args in RUNS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            # NCCL 2.30's tuner for every log (the calibration's); nccl_versions.py: each log's own version
            code = main(["compare", str(LOGS / log), *args, "--nccl-version", "2.30",
                         "--json", str(outdir / f"{name}.json"), "--plot", str(outdir / f"{name}.png")])
        (outdir / f"{name}.txt").write_text(buf.getvalue())
        summary = [ln.strip() for ln in buf.getvalue().splitlines()
                   if ln.startswith("sim/measured") or ln.startswith("  where the log agrees")]
        print(f"{name}: exit {code}; " + " | ".join(summary))
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(os.path.relpath(HERE / "results" / "nccl"))))
