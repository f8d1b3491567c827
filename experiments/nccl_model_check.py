"""NCCL's own cost model against the published allreduce logs (no simulation).

    python experiments/nccl_model_check.py

For every log of experiments/nccl_compare.py, prints the busbw that NCCL 2.30.7's tuner
model (simcollective.nccl.model: the algorithm, protocol and time NCCL predicts) gives at
1 MiB, 64 MiB and the largest size, next to the published busbw and the ratio. Logs of one
process driving N GPUs get the profile's launch cost, as `simcollective compare` adds it.
Where NCCL's own model misses a log by as much as the simulation does, the gap is not
something the simulator leaves out of NCCL's documented behaviour. Takes a few seconds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import topologies
from simcollective.nccl import model
from simcollective.nccl.nccltests import parse_log
from simcollective.profile import load_profile

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from nccl_compare import LOGS, RUNS  # noqa: E402

MiB = 1 << 20
FORCED = {"nvls": ("nvls", "nvlstree"), "ring": ("ring",), "tree": ("tree",)}


def _opts(args):
    out = {"topology": "dgx-h100", "nodes": 1, "section": 1, "topt": {}}
    it = iter(args)
    for a in it:
        v = next(it)
        if a == "--topology":
            out["topology"] = v
        elif a == "--nodes":
            out["nodes"] = int(v)
        elif a == "--section":
            out["section"] = int(v)
        elif a == "--topology-opt":
            k, val = v.split("=", 1)
            out["topt"][k] = float(val) if "." in val or "e" in val else int(val)
    return out


def check() -> list:
    launch = load_profile("nccl").nccl["launch_us_per_extra_gpu"]
    lines = []
    for name, log, args in RUNS:
        o = _opts(args)
        table = parse_log((LOGS / log).read_text())[o["section"] - 1]
        g = topologies.build(o["topology"], o["nodes"], o["topt"])
        gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                      key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
        m = model.machine_of(g, gpus)
        n = m.nranks
        gpp = table.gpus_per_process
        gpp = n if gpp == -1 else (gpp or 1)
        extra = (min(gpp, n) - 1) * launch[m.arch]
        algos = FORCED.get((table.forced_algorithm or "").lower(), model.ALGOS)
        rows = {r.size: r for r in table.rows}
        cells = []
        for size in (MiB, 64 * MiB, max(rows)):
            r = rows.get(size)
            if r is None:
                continue
            meas = r.busbw if r.busbw is not None else r.busbw_ip
            a, p, _, t = model.choose(m, size, algos=algos)
            bus = size / ((t + extra) * 1e-6) * 2 * (n - 1) / n / 1e9
            cells.append(f"{size / MiB:g} MiB {a}/{p} {bus:.1f} / {meas:.1f} ({bus / meas:.2f})")
        lines.append(f"{name}: " + " | ".join(cells))
    return lines


if __name__ == "__main__":
    print("NCCL 2.30.7 model busbw / published busbw (ratio), GB/s")
    print("\n".join(check()))
