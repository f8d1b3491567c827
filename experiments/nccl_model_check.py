"""NCCL's own cost model against the published allreduce and allgather logs (no simulation).

    python experiments/nccl_model_check.py

For every log of experiments/nccl_compare.py, prints the busbw that NCCL 2.30.7's tuner
model (simcollective.nccl.model: the algorithm, protocol and time NCCL predicts) gives at
1 MiB, 64 MiB and the largest size, next to the published busbw and the ratio. Logs of one
process driving N GPUs get the profile's launch cost, as `simcollective compare` adds it.
Where NCCL's own model misses a log by as much as the simulation does, the gap is not
something the simulator leaves out of NCCL's documented behaviour. Takes a few seconds.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import topologies
from simcollective.nccl import model
from simcollective.validation.compare import SUPPORTED as COLLECTIVE
from simcollective.validation.nccltests import BUS_FACTOR, parse_log
from simcollective.nccl.coll_model import coll_choose
from simcollective.profiles import load_profile

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


def _table_and_machine(log: str, args: list):
    """The log's table (its section) and NCCL's view of the machine the run names."""
    o = _opts(args)
    table = parse_log((LOGS / log).read_text())[o["section"] - 1]
    g = topologies.build(o["topology"], o["nodes"], o["topt"])
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    return table, model.machine_of(g, gpus)


def check() -> list:
    launch = load_profile("nccl").nccl.launch_us_per_extra_gpu
    lines = []
    for name, log, args in RUNS:
        table, m = _table_and_machine(log, args)
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
            if table.collective == "all_reduce":
                a, p, _, t = model.choose(m, size, algos=algos)
            else:   # allgather & co.: NCCL's model for that collective (bytes = the printed size)
                a, p, _, t = coll_choose(m, COLLECTIVE[table.collective], size)
            bus = size / ((t + extra) * 1e-6) * BUS_FACTOR(table.collective, n) / 1e9
            cells.append(f"{size / MiB:g} MiB {a}/{p} {bus:.1f} / {meas:.1f} ({bus / meas:.2f})")
        lines.append(f"{name}: " + " | ".join(cells))
    return lines


# -- NCCL 2.18 (the v2.18.3 constants of src/graph/tuning.cc; 2.18.5 is a patch release of the same tuner) ----------
#: baseLatencies and hwLatencies that differ from 2.30.7; NVLink ring hops are not listed for 2.18
#: (2.12 had LL 0.47): 2.30's are kept, and the LL pick is also checked with 0.47
#: (2.18's NVLS latency is a base latency of 23 us, 2.30's a 25 us NVLink hop; model.latency reads NVLS's
#: from the hop table, so 2.18's 23 us is put there)
BASE_LAT_218 = {**model.BASE_LAT, "tree": (6.8, 14.0, 0.0)}
HW_LAT_218 = {
    "nvlink": {**model.HW_LAT["nvlink"], "tree": (0.6, 1.25, 4.0), "nvls": (0.0, 0.0, 23.0),
               "nvlstree": (0.0, 0.0, 23.0)},
    "pci": {**model.HW_LAT["pci"], "tree": (1.0, 1.9, 6.0)},
    "net": {**model.HW_LAT["net"], "tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
            "nvlstree": (0.0, 0.0, 19.0)},
}
#: ring LL: busBw / 3 on one node (2.21 on: / 2; both logs here are single-node); the Hopper llMaxBws row
#: equal to Ampere's until 2.21
RING_LL_FACTOR_218 = 1 / 3
LL_MAX_218 = {**model.LL_MAX_BW, "hopper": model.LL_MAX_BW["ampere"]}


def predict_218(m, graphs, algo, proto, nbytes, ring_ll_hop=None):
    """NCCL 2.18's predicted time (us): 2.30's formulas with the 2.18 constants above. NVLS
    bandwidth is left at 2.30's (nvlsEfficiency did not exist in 2.18: only its latency is used)."""
    bw = model.bandwidth(m, graphs, algo, proto)
    if bw <= 0:
        return float("inf")
    if algo == "ring" and proto == "ll":
        g = graphs["ring"]
        bus = min(LL_MAX_218[m.arch][0 if m.nnodes == 1 else 1], RING_LL_FACTOR_218 * g.nchannels * g.bw_intra)
        bw = bus * m.nranks / (2 * (m.nranks - 1))
    hop = HW_LAT_218
    if ring_ll_hop is not None:
        ring = (ring_ll_hop,) + HW_LAT_218["nvlink"]["ring"][1:]
        hop = {**HW_LAT_218, "nvlink": {**HW_LAT_218["nvlink"], "ring": ring}}
    lat = model.latency(m, graphs, algo, proto, table={"base": BASE_LAT_218, "hop": hop})
    log_size = int(math.floor(math.log2(nbytes / 64))) if nbytes >= 64 else -1
    if algo == "tree" and 0 <= log_size < 23:
        bw *= model.TREE_CORRECTION[proto][log_size]
    return lat + nbytes / (1000.0 * bw)


def choose_218(m, nbytes, algos=model.ALGOS, ring_ll_hop=None):
    graphs = model.graphs_of(m)
    best = None
    for algo in model.ALGOS:
        if algo not in algos:
            continue
        for proto in model.PROTOCOLS:
            t = predict_218(m, graphs, algo, proto, nbytes, ring_ll_hop)
            if best is None or t < best[2]:
                best = (algo, proto, t)
    return best


def version_check() -> list:
    """Per NCCL 2.18.5 log: the sizes where 2.18's constants pick differently from 2.30's."""
    lines = []
    for name in ("a100x8", "h100x8-nvls"):
        _, log, args = next(r for r in RUNS if r[0] == name)
        table, m = _table_and_machine(log, args)
        graphs = model.graphs_of(m)
        algos = FORCED.get((table.forced_algorithm or "").lower(), model.ALGOS)
        diffs = []
        for r in table.rows:
            a30, p30, _, _ = model.choose(m, r.size, algos=algos)
            picks = {choose_218(m, r.size, algos, hop)[:2] for hop in (None, 0.47)}
            if picks != {(a30, p30)}:
                diffs.append(f"{_size(r.size)} {a30}/{p30} -> " + " or ".join(f"{a}/{p}" for a, p in sorted(picks)))
        a, p, _, _ = model.choose(m, table.rows[0].size, algos=algos)
        l30 = model.latency(m, graphs, a, p)
        l18 = model.latency(m, graphs, a, p, table={"base": BASE_LAT_218, "hop": HW_LAT_218})
        lines.append(f"{name}: picks that differ: {'; '.join(diffs) or 'none'}; latency of the smallest size's pick "
                     f"{a}/{p}: 2.30 {l30:.1f} us, 2.18 {l18:.1f} us")
    return lines


def _size(b: int) -> str:
    return f"{b / MiB:g} MiB" if b >= MiB else f"{b / 1024:g} KiB" if b >= 1024 else f"{b} B"


if __name__ == "__main__":
    print("NCCL 2.30.7 model busbw / published busbw (ratio), GB/s")
    print("\n".join(check()))
    print("\nNCCL 2.18 constants against 2.30.7's, on the two NCCL 2.18.5 logs")
    print("\n".join(version_check()))
