"""Band hits per published run with the NCCL version its log names, beside NCCL 2.30's tuner.

    python experiments/nccl_compare.py          # NCCL 2.30's tuner (results/nccl/*.json)
    python experiments/nccl_versions.py [DIR]   # the log's own version (default DIR: experiments/results/nccl)

Each run of `nccl_compare.py` is compared again without `--nccl-version`, so `compare` takes
the version from the log's header ("NCCL version: 2.18.5", "NCCL 2.26.2+cuda12.8"; a log
that names none runs the newest modelled, 2.30, and is not simulated again). Writes
DIR/versions.md and DIR/versions/<run>.json. About 3-5 min on a 2-core machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


from simcollective.validation.compare import compare, read_table
from simcollective.validation.heldout import BANDS, band_hits

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from nccl_compare import LOGS, RUNS  # noqa: E402
from nccl_heldout import compare_kwargs  # noqa: E402


def _cell(h) -> str:
    return f"{h[0]}/{h[1]}" if h[1] else "-"


def main(outdir: Path) -> int:
    names = [b[0] for b in BANDS]
    lines = ["| run | log's NCCL | " + " | ".join(f"{n}: log's version | 2.30" for n in names) + " |",
             "|---|---|" + "---:|---:|" * len(names)]
    (outdir / "versions").mkdir(parents=True, exist_ok=True)
    for name, log, args in RUNS:
        base = json.loads((outdir / f"{name}.json").read_text())
        kw = compare_kwargs(args)
        version = read_table(str(LOGS / log), kw.get("section")).nccl_version
        res = compare(str(LOGS / log), **kw) if version else base
        if version:
            (outdir / "versions" / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))
        own, new = band_hits(res["rows"]), band_hits(base["rows"])
        lines.append(f"| {name} | {version or 'not named (2.30)'} | "
                     + " | ".join(f"{_cell(own[n])} | {_cell(new[n])}" for n in names) + " |")
        print(lines[-1], flush=True)
    text = "## Band hits with the log's NCCL version and with 2.30\n\n" + "\n".join(lines) + "\n"
    (outdir / "versions.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "nccl"))
