"""Every published log compared as a careful new user would: the shape's preset, the log's NCCL version.

    python experiments/nccl_presets.py [DIR]     # default DIR: experiments/results/nccl

Each log of experiments/nccl-tests/ (and each section of a multi-section log) is compared
with only what its header says: the preset of the machine it names (``--topology``), its
node count and section, and the NCCL version it prints (`compare`'s default; a log that
names none runs the newest modelled). No figure fitted to a log is passed: no
``--topology-opt``, the ``nccl`` profile as shipped. Band hits (`band_hits`: busbw 10 % at
>= 64 MiB, 25 % at 1-64 MiB, time 30 % at <= 64 KiB, each row judged by the better of its
out-of-place and in-place figures) are listed per log beside the in-sample run of
`nccl_compare.py` (its machine options and fitted figures, NCCL 2.30's tuner).

Writes DIR/presets.md and DIR/presets/<run>.json. About 4-8 min on a 2-core machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from simcollective.validation.compare import compare, read_table
from simcollective.validation.heldout import BANDS, band_hits

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from nccl_compare import LOGS  # noqa: E402

TITLE = "Band hits with the shape's preset and the log's NCCL version (nothing fitted)"
_IB = "h100x8-2to8node-ib400_allreduce_ncclt309.txt"
#: name (as in nccl_compare.RUNS), log, the options its header gives: preset, nodes, section
PRESET_RUNS = [
    ("v100x8", "v100x8-dgx1like-1node_allreduce_konnase.txt", {"topology": "dgx1-v100"}),
    ("a100x8", "azure-nda100v4-a100x8_allreduce_azurebench.txt", {"topology": "azure-nd-a100-v4"}),
    ("h100x8-nvls", "azure-ndh100v5-h100x8_allreduce_azurebench.txt", {"topology": "azure-nd-h100-v5"}),
    ("h100x16-A", _IB, {"section": 1, "topology": "dgx-h100", "nodes": 2}),
    ("h100x32-B", _IB, {"section": 2, "topology": "dgx-h100", "nodes": 4}),
    ("h100x64-C", _IB, {"section": 3, "topology": "dgx-h100", "nodes": 8}),
    ("h100x16-D", _IB, {"section": 4, "topology": "dgx-h100", "nodes": 2}),
    ("h100x32-E", _IB, {"section": 5, "topology": "dgx-h100", "nodes": 4}),
    ("h100x64-F", _IB, {"section": 6, "topology": "dgx-h100", "nodes": 8}),
    ("h100x16-G-ring", _IB, {"section": 7, "topology": "dgx-h100", "nodes": 2}),
    ("a100x16-p4d", "p4d-a100x8-2node-efa_allreduce_awsdlami.txt", {"topology": "aws-p4d", "nodes": 2}),
    ("b200x16-allgather", "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt", {"topology": "gcp-a4", "nodes": 2}),
]


def _cell(h) -> str:
    return f"{h[0]}/{h[1]}" if h[1] else "-"


def command(log: str, kw: dict) -> str:
    """The command line a user types for one run of :data:`PRESET_RUNS`."""
    parts = [f"simcollective compare experiments/nccl-tests/{log}"]
    parts += [f"--{k} {v}" for k, v in kw.items()]
    return " ".join(parts)


def run_one(name: str, log: str, kw: dict, outdir: Path) -> dict:
    """Compare one log with its preset; the result's band hits (and its JSON under DIR/presets/)."""
    res = compare(str(LOGS / log), **kw)
    (outdir / "presets").mkdir(parents=True, exist_ok=True)
    (outdir / "presets" / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
    return band_hits(res["rows"])


def main(outdir: Path) -> int:
    names = [b[0] for b in BANDS]
    lines = ["| run | preset | log's NCCL | " + " | ".join(f"{n}: preset | in-sample" for n in names) + " |",
             "|---|---|---|" + "---:|---:|" * len(names)]
    total_p, total_i = {n: [0, 0] for n in names}, {n: [0, 0] for n in names}
    for name, log, kw in PRESET_RUNS:
        version = read_table(str(LOGS / log), kw.get("section")).nccl_version
        hits = run_one(name, log, kw, outdir)
        insample = band_hits(json.loads((outdir / f"{name}.json").read_text())["rows"])
        for n in names:
            total_p[n] = [total_p[n][0] + hits[n][0], total_p[n][1] + hits[n][1]]
            total_i[n] = [total_i[n][0] + insample[n][0], total_i[n][1] + insample[n][1]]
        lines.append(f"| {name} | {kw['topology']} | {version or 'not named (2.30)'} | "
                     + " | ".join(f"{_cell(hits[n])} | {_cell(insample[n])}" for n in names) + " |")
        print(lines[-1], flush=True)
    lines.append("| all | | | " + " | ".join(f"{_cell(total_p[n])} | {_cell(total_i[n])}" for n in names) + " |")
    lines += ["", "Commands:", ""] + [f"    {command(log, kw)}" for _, log, kw in PRESET_RUNS]
    out = outdir / "presets.md"
    out.write_text(f"## {TITLE}\n\n" + "\n".join(lines) + "\n")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "nccl"))
