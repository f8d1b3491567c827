"""The ring pipeline-fill rules tried against the two single-node logs (8 x A100, 8 x V100).

    python experiments/nccl_ring_fill_candidates.py

Simulates both logs once, takes the ring fill the runs spent back out of every call (the fill
is spent after the flows as a fraction of their bandwidth time, ``plan.fill`` of the plan the
call ran, :mod:`simcollective.nccl.fill`), then applies every candidate rule to the fill-less
calls: adding a fill to a fill-less run is exact, and the flows of a ring are link-limited, so
another NVLink2 rate for V100 scales its bandwidth time exactly.
Prints busbw sim / published per size from 1 MiB. About 30 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import topologies
from simcollective.nccl.fill import ring_fill
from simcollective.nccl.plans import make_plan
from simcollective.nccl.protocols import step_bytes
from simcollective.validation.compare import compare
from simcollective.profiles import load_profile

LOGS = Path(__file__).parent / "nccl-tests"
MiB = 1 << 20
KiB = 1 << 10
#: the nccl profile's NVLink2 (direct cable) fraction, which the simulated V100 calls ran at
NVLINK_NOW = dict(load_profile("nccl").network.link_efficiency)["nvlink"]


def _steps(steps):
    """The chosen rule's form: ``steps`` more ring steps of min(block, FIFO step)."""
    def fill(S, C, P, proto):
        return ring_fill(S, C, P, proto, steps=steps if proto != "ll" else 0)
    return fill


def _chunk_per_channel(S, C, P, proto):
    """One chunk per channel over one link: min(S / C, chunk) / b."""
    if proto == "ll":
        return 0.0
    chunk = {"simple": 2 * MiB, "ll128": step_bytes("ll128")}[proto]
    return P / (2 * (P - 1)) * min(1.0, C * chunk / S)


def _nvls_style(unit):
    """NVLS's form: 1 row of C x unit, rows x min(1, row / S) of the bandwidth time."""
    def fill(S, C, P, proto):
        return 0.0 if proto == "ll" else min(1.0, C * unit / S)
    return fill


CANDIDATES = [  # label, fill(S, C, P, protocol) -> fraction of the bandwidth time, V100 NVLink2 fraction
    ("main: no fill, V100 NVLink2 0.86", lambda *a: 0.0, 0.86),
    ("no fill, V100 0.95", lambda *a: 0.0, 0.95),
    ("CHOSEN 4 steps of min(S/(C P), FIFO step), row C x P x step; V100 0.95", _steps(4), 0.95),
    ("same, V100 0.86", _steps(4), 0.86),
    ("same, V100 1.00 (25 GB/s)", _steps(4), 1.00),
    ("2 steps, V100 0.95", _steps(2), 0.95),
    ("8 steps (the whole FIFO), V100 0.95", _steps(8), 0.95),
    ("one chunk per channel: min(S/C, chunk)/b, V100 0.95", _chunk_per_channel, 0.95),
    ("one chunk per channel, V100 1.00", _chunk_per_channel, 1.00),
    ("NVLS-style 1 row of C x 1 MiB slice, V100 0.95", _nvls_style(MiB), 0.95),
    ("NVLS-style 1 row of C x 512 KiB step, V100 0.95", _nvls_style(512 * KiB), 0.95),
]


def _calls(log, topology):
    """Per size of the log: (size, published us, latency us, bandwidth us without the fill,
    protocol, channels)."""
    res = compare(str(LOGS / log), topology=topology, nodes=1, min_size=MiB)
    g = topologies.build(topology, 1, {})
    gpus = sorted((n for n, d in g.nodes(data=True) if d.get("kind") == "gpu"),
                  key=lambda n: (g.nodes[n]["server"], g.nodes[n]["local"]))
    prof = load_profile("nccl")
    out = []
    for r in res["rows"]:
        plan = make_plan(g, gpus, prof, "auto", r["size"])
        lat = res["launch_overhead_us"] + plan.latency_s * 1e6
        ran = make_plan(g, gpus, prof, r["algorithm_chosen"].removeprefix("nccl-"), r["size"], r["protocol"],
                        r["channels"])   # the plan of the call as it ran: its fill
        out.append((r["size"], r["measured_time_us"], lat, (r["simulated_time_us"] - lat) / (1 + ran.fill),
                    r["protocol"], r["channels"]))
    return out


def table() -> list:
    a100 = _calls("azure-nda100v4-a100x8_allreduce_azurebench.txt", "dgx-a100")
    v100 = _calls("v100x8-dgx1like-1node_allreduce_konnase.txt", "dgx1-v100")
    lines = ["sizes: A100 " + " ".join(_label(c[0]) for c in a100), "       V100 " + " ".join(_label(c[0]) for c in v100)]
    for label, fill, v_eff in CANDIDATES:
        lines.append(label)
        for name, calls, scale in (("A100", a100, 1.0), ("V100", v100, NVLINK_NOW / v_eff)):
            cells = []
            for S, meas, lat, bw, proto, C in calls:
                bw = bw * scale
                cells.append(meas / (lat + bw * (1 + fill(S, C, 8, proto))))
            lines.append(f"  {name}: " + " ".join(f"{c:5.2f}" for c in cells))
    return lines


def _label(b):
    return f"{b // MiB}M" if b < 1 << 30 else f"{b >> 30}G"


if __name__ == "__main__":
    print("busbw sim / published per size from 1 MiB, every candidate ring fill rule")
    print("\n".join(table()))
    sys.exit(0)
