"""The verdict per published log and band of the targets, from the JSON files `nccl_compare.py` writes.

    python experiments/nccl_compare.py            # simulate every log (minutes)
    python experiments/nccl_summary.py [DIR]      # read DIR/*.json (default experiments/results/nccl), < 1 s
    python experiments/nccl_summary.py [DIR] --doc docs/validation.md   # also refresh that file's tables

Prints (and writes DIR/summary.md) one markdown table with, per log, the simulated and
published busbw at 1 MiB, 64 MiB and the largest size, and for each band of the targets
(time within 30 % at <= 64 KiB, busbw within 25 % from 1 MiB to below 64 MiB, busbw within
10 % from 64 MiB) "met" or the sizes outside it with the worst ratio; then, per log, the
rows docs/validation.md shows. Ratios are simulated / measured. Rows where the log's own
out-of-place and in-place columns disagree by more than the band (``log_disagrees`` in
the JSON, when `compare` records it) are counted apart, never dropped.

With ``--doc PATH`` (``--readme PATH``: the same option) the tables between the markers
``<!-- nccl:summary -->`` / ``<!-- /nccl:summary -->`` and ``<!-- nccl:rows NAME -->`` / ``<!-- /nccl:rows -->`` (NAME:
a run of `nccl_compare.py`) of that file are replaced by the ones computed here, so the
document shows exactly what the last run printed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from simcollective.validation.compare import band as tolerance
from simcollective.units import format_bytes

HERE = Path(__file__).parent
KiB, MiB = 1024, 1024 * 1024

#: the bands of the targets: (name, applies to size, measured quantity); the allowed ratio is
#: 1 -+ the tolerance `compare` uses for its marks (:func:`simcollective.validation.compare.band`:
#: 30 % of the time, 25 % and 10 % of busbw)
BANDS = (
    ("<= 64 KiB time", lambda s: s <= 64 * KiB, "time_ratio"),
    ("1-64 MiB busbw", lambda s: MiB <= s < 64 * MiB, "busbw_ratio"),
    (">= 64 MiB busbw", lambda s: s >= 64 * MiB, "busbw_ratio"),
)
#: rows docs/validation.md shows per log (the others are in the .txt tables)
SHOWN = (8, KiB, 64 * KiB, MiB, 8 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
LABELS = {
    "v100x8": "8 x V100 (1 node, 2019 NCCL)",
    "a100x8": "8 x A100 (1 node, NCCL 2.18.5)",
    "h100x8-nvls": "8 x H100 (1 node, NVLS forced, NCCL 2.18.5)",
    "h100x16-A": "2 x 8 H100 default (A)",
    "h100x16-D": "2 x 8 H100 default (D)",
    "h100x16-G-ring": "2 x 8 H100 Ring forced, tuned (G)",
    "h100x32-B": "4 x 8 H100 default, VMs (B)",
    "h100x32-E": "4 x 8 H100 default (E)",
    "h100x64-C": "8 x 8 H100 default (C)",
    "h100x64-F": "8 x 8 H100 tuned (F)",
    "a100x16-p4d": "2 x 8 A100 p4d EFA (NCCL 2.7.8, Ring forced)",
    "b200x16-allgather": "2 x 8 B200 allgather (NCCL 2.25.1)",
}


def fmt_size(b: int) -> str:
    """The project's ``format_bytes`` without a trailing ``.0`` ('1 MiB', '1.5 KiB', '8 B')."""
    return format_bytes(b).replace(".0 ", " ")


def ranges(sizes: list[int], all_sizes: list[int]) -> str:
    """'16-256 MiB, 1 GiB': runs of consecutive log sizes."""
    out, run = [], []
    for s in all_sizes:
        if s in sizes:
            run.append(s)
        elif run:
            out.append(run)
            run = []
    if run:
        out.append(run)
    return ", ".join(fmt_size(r[0]) if len(r) == 1 else f"{fmt_size(r[0])}-{fmt_size(r[-1])}" for r in out)


def band_verdict(res: dict, band) -> str:
    name, applies, key = band
    rows = [r for r in res["rows"] if applies(r["size"]) and r.get(key) is not None]
    if not rows:
        return "-"

    def excess(r):   # > 1: outside the band, by that factor
        tol = tolerance(r["size"])
        return max(r[key] / (1 + tol), (1 - tol) / r[key])

    bad = [r for r in rows if excess(r) > 1]
    if not bad:
        return "met"
    worst = max(bad, key=excess)
    sizes = [r["size"] for r in res["rows"]]
    noisy = [r for r in bad if r.get("log_disagrees")]
    note = f" ({len(noisy)} where the log disagrees with itself)" if noisy else ""
    return f"missed at {ranges([r['size'] for r in bad], sizes)} (worst {worst[key]:.2f}){note}"


def at(res: dict, size: int | None) -> str:
    rows = res["rows"]
    row = rows[-1] if size is None else next((r for r in rows if r["size"] == size), None)
    if row is None or not row.get("measured_busbw"):
        return "-"
    tail = f" at {fmt_size(row['size'])}" if size is None else ""
    return (f"{row['simulated_busbw']:.1f} / {row['measured_busbw']:.1f} "
            f"({row['busbw_ratio']:.2f}){tail}")


def summary(results: dict[str, dict]) -> str:
    out = ["| machine (log) | 1 MiB | 64 MiB | largest | " + " | ".join(b[0] for b in BANDS) + " |",
           "|---|---:|---:|---:|" + "---|" * len(BANDS)]
    for name, res in results.items():
        cells = [LABELS.get(name, name), at(res, MiB), at(res, 64 * MiB), at(res, None)]
        cells += [band_verdict(res, b) for b in BANDS]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def rows_table(res: dict) -> str:
    out = ["| size | measured us | simulated us | time ratio | measured busbw | simulated busbw | busbw ratio | simulated as |",
           "|---:|---:|---:|---:|---:|---:|---:|---|"]
    rows = res["rows"]
    keep = [r for r in rows if r["size"] in SHOWN] + ([rows[-1]] if rows[-1]["size"] not in SHOWN else [])

    def f(v, spec):
        return "-" if v is None else format(v, spec)

    for r in keep:
        chosen = f"{r['algorithm_chosen']}/{r['protocol']}/{r['channels']}" if r.get("protocol") else r["algorithm_chosen"]
        star = "*" if r.get("measured_time_derived") else ""
        flag = " (!)" if r.get("log_disagrees") else ""
        out.append(f"| {fmt_size(r['size'])}{flag} | {f(r['measured_time_us'], '.2f')}{star} | "
                   f"{f(r['simulated_time_us'], '.2f')} | {f(r['time_ratio'], '.2f')} | {f(r['measured_busbw'], '.2f')} | "
                   f"{f(r['simulated_busbw'], '.2f')} | {f(r['busbw_ratio'], '.2f')} | {chosen} |")
    return "\n".join(out)


def load(directory: Path) -> dict[str, dict]:
    files = sorted(directory.glob("*.json"))
    if not files:
        raise SystemExit(f"nccl_summary: no *.json in {directory}: run experiments/nccl_compare.py first")
    found = {p.stem: json.loads(p.read_text()) for p in files}
    found = {k: v for k, v in found.items() if isinstance(v, dict) and "rows" in v}   # not heldout.json's folds
    order = [k for k in LABELS if k in found] + sorted(k for k in found if k not in LABELS)
    return {k: found[k] for k in order}


def update_doc(path: Path, results: dict[str, dict]) -> int:
    """Replace the marked tables of ``path``; return how many were replaced."""
    text = path.read_text()
    count = 0

    def block(match: re.Match) -> str:
        nonlocal count
        name = match.group(2)
        if name is None:
            body = summary(results)
        elif name in results:
            body = rows_table(results[name])
        else:
            raise SystemExit(f"nccl_summary: {path} names run {name!r}, which has no JSON here "
                             f"(runs: {', '.join(results)})")
        count += 1
        return f"{match.group(1)}\n{body}\n{match.group(3)}"

    text = re.sub(r"(<!-- nccl:(?:summary|rows (\S+)) -->)\n.*?\n(<!-- /nccl:(?:summary|rows) -->)", block, text,
                  flags=re.S)
    path.write_text(text)
    return count


def main(argv: list[str]) -> int:
    doc = None
    for flag in ("--doc", "--readme"):        # --readme: the option's former name, kept as an alias
        if flag in argv:
            i = argv.index(flag)
            if i + 1 >= len(argv):
                raise SystemExit(f"nccl_summary: {flag} needs a file name")
            doc = Path(argv[i + 1])
            argv = argv[:i] + argv[i + 2:]
    directory = Path(argv[0]) if argv else HERE / "results" / "nccl"
    results = load(directory)
    parts = ["## Against every published log (simulated / published busbw in GB/s, ratio)", "", summary(results), ""]
    for name, res in results.items():
        parts += [f"### {LABELS.get(name, name)}", "", rows_table(res), ""]
    text = "\n".join(parts)
    (directory / "summary.md").write_text(text)
    print(text)
    if doc is not None:
        print(f"{doc}: {update_doc(doc, results)} tables refreshed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
