"""Leave one log out: every calibrated figure refitted without the run it predicts.

    python experiments/nccl_compare.py          # the in-sample comparisons (results/nccl/*.json)
    python experiments/nccl_heldout.py [DIR]    # the folds (default DIR: experiments/results/nccl)

For each run of `nccl_compare.py` (one log, or one section of a log), the figures fitted to
published logs (`simcollective.validation.heldout.FIGURES`) are refitted on the in-sample
comparisons of all the *other* runs (`fold_figures`, which is handed those alone); the
held-out run is then simulated with them (NCCL 2.30's tuner, as the in-sample runs). A fold
whose figures are those of the in-sample fit for that run is not simulated again: its
held-out result is its in-sample one. Band hits (`band_hits`: busbw 10 % at >= 64 MiB, 25 %
at 1-64 MiB, time 30 % at <= 64 KiB, each row judged by the better of its out-of-place and
in-place figures) are counted in-sample and held-out, per machine class, each with the median
|simulated / measured - 1| of the rows judged (`band_errors`).

Writes DIR/heldout.md (the tables docs/validation.md and the README show), DIR/heldout.json
and DIR/heldout/<run>.json (the held-out comparisons). About 2-4 min on a 2-core machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


from simcollective.parsing import parse_topology_opts
from simcollective.profiles import load_profile
from simcollective.validation.compare import compare
from simcollective.validation.heldout import (BANDS, FIGURES, add_hits, band_errors, band_hits, fold_options,
                                              fold_profile, fold_values)

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from nccl_compare import LOGS, RUNS  # noqa: E402
#: the machine class of each run
CLASS = {
    "v100x8": "1 node, direct NVLink (DGX-1 V100)",
    "a100x8": "1 node, NVSwitch (A100, H100)",
    "h100x8-nvls": "1 node, NVSwitch (A100, H100)",
    "h100x16-A": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x32-B": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x64-C": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x16-D": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x32-E": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x64-F": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "h100x16-G-ring": "H100 nodes over 400G InfiniBand (2-8 nodes)",
    "a100x16-p4d": "AWS p4d, EFA (2 nodes)",
    "b200x16-allgather": "B200 nodes over RoCE, GCP A4 (2 nodes)",
}


def compare_kwargs(args: list) -> dict:
    """`compare`'s keywords of a run's command-line arguments (`nccl_compare.RUNS`)."""
    kw, opts = {}, []
    it = iter(args)
    for flag in it:
        value = next(it)
        if flag == "--topology-opt":
            opts.append(value)
        else:
            kw[flag[2:]] = int(value) if flag in ("--nodes", "--section") else value
    kw["topology_opts"] = parse_topology_opts(opts)
    return kw


def applies(run: str, values: dict) -> list:
    """The figures of this fold that differ from the in-sample ones and act on ``run``."""
    return [f for f in FIGURES if run in f.applies and values[f.name] != f.value]


def fold(name: str, log: str, args: list, insample: dict, outdir: Path) -> dict:
    values = fold_values(insample, name)   # fitted on the other runs: the held-out one is not read
    changed = applies(name, values)
    if not changed:
        held = insample[name]
    else:
        kw = compare_kwargs(args)
        kw["topology_opts"] = fold_options(kw["topology_opts"], name, values)
        held = compare(str(LOGS / log), profile=fold_profile(load_profile("nccl"), values), nccl_version="2.30", **kw)
        (outdir / "heldout").mkdir(exist_ok=True)
        (outdir / "heldout" / f"{name}.json").write_text(json.dumps(held, indent=1, default=str))
    return {"run": name, "class": CLASS[name], "refitted": {f.name: {"in_sample": f.value, "held_out": values[f.name],
                                                                     "how": f.source} for f in changed},
            "in_sample": band_hits(insample[name]["rows"]), "held_out": band_hits(held["rows"]),
            "in_sample_errors": band_errors(insample[name]["rows"]), "held_out_errors": band_errors(held["rows"])}


def _median(errors: list) -> float:
    e = sorted(errors)
    return (e[(len(e) - 1) // 2] + e[len(e) // 2]) / 2


def _cell(h, errors=None) -> str:
    """Band hits, with the median |sim/measured - 1| of the rows judged when ``errors`` are given."""
    if not h[1]:
        return "-"
    return f"{h[0]}/{h[1]}" + (f" ({_median(errors):.0%})" if errors else "")


def _errors(folds: list, key: str, band: str) -> list:
    return [e for f in folds for e in f[key][band]]


def tables(folds: list) -> str:
    names = [b[0] for b in BANDS]
    classes = list(dict.fromkeys(f["class"] for f in folds))
    lines = ["| machine class | runs | " + " | ".join(f"{n}: in-sample | held-out" for n in names) + " |",
             "|---|---:|" + "---:|---:|" * len(names)]
    total_in, total_out = {}, {}
    for c in classes:
        runs = [f for f in folds if f["class"] == c]
        t_in, t_out = {}, {}
        for f in runs:
            t_in, t_out = add_hits(t_in, f["in_sample"]), add_hits(t_out, f["held_out"])
        total_in, total_out = add_hits(total_in, t_in), add_hits(total_out, t_out)
        cells = " | ".join(f"{_cell(t_in[n], _errors(runs, 'in_sample_errors', n))} | "
                           f"{_cell(t_out[n], _errors(runs, 'held_out_errors', n))}" for n in names)
        lines.append(f"| {c} | {len(runs)} | {cells} |")
    lines.append(f"| all | {len(folds)} | " + " | ".join(
        f"{_cell(total_in[n], _errors(folds, 'in_sample_errors', n))} | {_cell(total_out[n], _errors(folds, 'held_out_errors', n))}"
        for n in names) + " |")
    lines += ["", "Cells: rows inside the band / rows judged (median |simulated / measured - 1| of those rows)."]
    lines += ["", "| held-out run | figures refitted without it (in-sample -> held-out) |", "|---|---|"]
    for f in folds:
        what = "; ".join(f"{k} {v['in_sample']:.4g} -> {v['held_out']:.4g} ({v['how']})" for k, v in f["refitted"].items())
        lines.append(f"| {f['run']} | {what or 'none: every figure acting on it was fitted on other runs; held-out = in-sample'} |")
    return "\n".join(lines) + "\n"


def _pair(runs: list, band: str) -> str:
    """``in-sample hits (median error) -> held-out hits (median error)`` of ``runs`` in ``band``."""
    parts = []
    for key in ("in_sample", "held_out"):
        hits = [sum(f[key][band][0] for f in runs), sum(f[key][band][1] for f in runs)]
        if not hits[1]:
            return "-"
        parts.append(f"{hits[0]}/{hits[1]} ({_median(_errors(runs, key + '_errors', band)):.0%})")
    return " -> ".join(parts)


def compact_table(folds: list) -> str:
    """The README's table: per machine class, in-sample -> held-out hits with median errors."""
    names = [b[0] for b in BANDS]
    lines = ["| machine class | runs | " + " | ".join(n.replace(" (", ", ").rstrip(")") for n in names) + " |",
             "|---|---:|" + "---|" * len(names)]
    for c in dict.fromkeys(f["class"] for f in folds):
        runs = [f for f in folds if f["class"] == c]
        lines.append(f"| {c} | {len(runs)} | " + " | ".join(_pair(runs, n) for n in names) + " |")
    lines.append(f"| all | {len(folds)} | " + " | ".join(_pair(folds, n) for n in names) + " |")
    return "\n".join(lines) + "\n"


def main(outdir: Path) -> int:
    insample = {name: json.loads((outdir / f"{name}.json").read_text()) for name, _, _ in RUNS}
    folds = []
    for name, log, args in RUNS:
        folds.append(fold(name, log, args, insample, outdir))
        print(f"{name}: in-sample {folds[-1]['in_sample']}  held-out {folds[-1]['held_out']}", flush=True)
    (outdir / "heldout.json").write_text(json.dumps(folds, indent=1))
    text = tables(folds)
    (outdir / "heldout.md").write_text("## Leave one log out (band hits: in-sample | held-out)\n\n" + text
                                       + "\n## The same, as the README shows it (in-sample -> held-out)\n\n"
                                       + compact_table(folds))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "nccl"))
