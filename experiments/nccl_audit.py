"""Every rented-machine preset against what its documented figures imply NCCL reaches.

    python experiments/nccl_audit.py [OUT.md]    # default: print the table only
    python experiments/nccl_audit.py --routing [RACKS ...]   # NVL72 racks per routing policy (default 2 3)

For each preset of ``topologies/hardware/shapes.toml`` (and GB200/GB300 NVL72 racks), on one
and two nodes (two and four hosts of 4 GPUs; two racks of 72 GPUs for the NVL72 presets), the
allreduce of the ``nccl`` algorithm (NCCL's pick per call, ``--profile nccl``) is simulated
at 8 B and 8 GiB. Beside it, from the preset's own figures (the graph it builds):

* ``NVLink/GPU``: the GPU's NVLink bandwidth per direction as NCCL counts it (links x NCCL's
  per-link speed for the architecture, ``machine_of``);
* ``net/GPU``: the network bandwidth one GPU drives: its NICs' line rate summed (its share
  when GPUs share a NIC), capped by its PCIe link (NCCL's PCIe figure);
* ``expected``: NCCL's own busbw formula for the algorithm it picks at 8 GiB (ring, tree,
  NVLS, NVLSTree of ``simcollective.nccl.model.bandwidth``) and the bound of the documented
  figures: a ring's busbw is at most ``min(NVLink/GPU, the node's NICs in all)``; NVLSTree on
  two nodes at most ``ppn x net/GPU x 2(n-1)/n`` (each head sends and receives its ``1/ppn``
  share once); none for NVLS on one node (the switch reduces);
* ``floor``: NCCL's latency model for its pick at 8 B, the transport's advertised latency in.

The simulated busbw and time are the ``nccl`` algorithm's (flows on the preset's graph).

``--routing``: a 1 GiB allreduce on 2, 3 (or the given counts of) GB300 NVL72 racks, each
routing policy (``first``, ``hash``, ``dest``; ``auto`` is ``dest`` on the presets) against
NCCL's own model of the call (``nccl_predicted_us``). From 2 racks (36 hosts) on, the hosts
span two 32-host scalable units and the flows between them cross the spines, where the
policies differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

import simcollective as sc
from simcollective.nccl.model import bandwidth, graphs_of, latency, machine_of
from simcollective.network.routing import nics_of
from topologies.registry import build

#: (preset, node counts): 8-GPU hosts on 1 and 2 nodes, 4-GPU hosts on 2 and 4, racks on 1 and 2
PRESETS = [(p, (1, 2)) for p in (
    "dgx-h200", "dgx-b300", "aws-p3dn", "aws-p4d", "aws-p4de", "aws-p5", "aws-p5en", "aws-p6-b200",
    "gcp-a3-high", "gcp-a3-mega", "gcp-a3-ultra", "gcp-a4", "azure-nd-a100-v4", "azure-nd-h100-v5",
    "azure-nd-h200-v5", "oci-bm-gpu4-8", "oci-bm-gpu-a100-v2-8", "oci-bm-gpu-h100-8", "oci-bm-gpu-h200-8")]
PRESETS += [(p, (2, 4)) for p in ("gcp-a4x", "azure-nd-gb200-v6", "oci-bm-gpu-gb200-4", "oci-bm-gpu-gb300-4",
                                  "gb300-nvl72")]
PRESETS += [(p, (18, 36)) for p in ("gb300-nvl72", "gb200-nvl72", "oci-bm-gpu-gb200-4", "oci-bm-gpu-gb300-4")]
SMALL, LARGE = 8, 8 << 30


def figures(graph, machine) -> dict:
    """The preset's per-GPU figures (GB/s) NCCL's formulas start from."""
    g0 = machine.gpus[machine.nodes[0][0]]
    nics = nics_of(graph, g0)
    sharing = {}
    for r in machine.nodes[0]:
        for n in nics_of(graph, machine.gpus[r]):
            sharing[n] = sharing.get(n, 0) + 1
    line = sum(max((d["bandwidth"] for _, v, d in graph.out_edges(n, data=True)
                    if d.get("link_type") in ("infiniband", "ethernet")), default=0.0) / sharing.get(n, 1)
               for n in nics) / 1e9
    pcie = max((d["bandwidth"] for _, _, d in graph.out_edges(g0, data=True) if d.get("link_type") == "pcie"),
               default=0.0) / 1e9
    node = sum(max((d["bandwidth"] for _, v, d in graph.out_edges(n, data=True)
                    if d.get("link_type") in ("infiniband", "ethernet")), default=0.0) for n in sharing) / 1e9
    return {"nvlink": machine.nvlink_total, "net": min(line, pcie) if pcie else line, "nics": len(nics),
            "line": line, "pcie": pcie, "node_net": node}


def audit(preset: str, nodes: int) -> dict:
    graph = build(preset, nodes=nodes)
    gpus = [g for g in graph.nodes if graph.nodes[g].get("kind") == "gpu"]
    m = machine_of(graph, gpus)
    f = figures(graph, m)
    big = sc.run(topology=preset, nodes=nodes, algorithm="nccl", profile="nccl", bytes=LARGE).to_dict()
    small = sc.run(topology=preset, nodes=nodes, algorithm="nccl", profile="nccl", bytes=SMALL).to_dict()
    graphs = graphs_of(m)
    algo, proto = big["nccl_model_choice"]["algorithm"], big["nccl_model_choice"]["protocol"]
    sa, sp = small["nccl_model_choice"]["algorithm"], small["nccl_model_choice"]["protocol"]
    n = m.nranks
    model_bus = bandwidth(m, graphs, algo, proto) * 2 * (n - 1) / n   # algbw -> nccl-tests busbw
    # a ring crosses each node boundary once each way: its busbw is at most the node's NICs'
    # line rate in all (and a GPU's NVLink); NVLSTree on two nodes: each head sends and receives
    # its 1/ppn share once over its own NICs
    bound = f["nvlink"] if m.nnodes == 1 else min(f["nvlink"], f["node_net"])
    if algo == "nvlstree" and m.nnodes == 2:
        bound = m.ppn * f["net"] * 2 * (n - 1) / n
    if algo in ("nvls",) and m.nnodes == 1:
        bound = float("nan")   # NVLS reduces in the switch: no per-GPU NVLink bound of this form
    return {
        "preset": preset, "nodes": nodes, "ranks": n, "ppn": m.ppn, "nnodes": m.nnodes, **f,
        "pick_large": f"{algo}/{proto}", "pick_small": f"{sa}/{sp}", "model_busbw": model_bus, "bound": bound,
        "sim_busbw": big["busbw"] / 1e9, "model_floor": latency(m, graphs, sa, sp),
        "sim_floor": small["time_s"] * 1e6, "net_latency": m.net_latency_us, "network": big.get("nccl_network"),
        "model_large_us": big["nccl_predicted_us"], "sim_large_us": big["time_s"] * 1e6,
    }


def row(a: dict) -> str:
    gap = a["sim_busbw"] / a["model_busbw"] - 1
    fgap = a["sim_floor"] / a["model_floor"] - 1
    nodes = f"{a['nodes']}" + (f" ({a['nnodes']} NVLink domain{'s' if a['nnodes'] > 1 else ''})"
                               if a["nnodes"] != a["nodes"] else "")
    bound = "-" if a["bound"] != a["bound"] else f"{a['bound']:.0f}"
    return (f"| `{a['preset']}` | {nodes} | {a['ranks']} | {a['nvlink']:.0f} | "
            f"{a['net']:.1f} ({a['nics']} NIC{'s' if a['nics'] != 1 else ''}) | "
            f"{a['pick_large']} | {a['model_busbw']:.0f} | {bound} | {a['sim_busbw']:.0f} | {gap:+.0%} | "
            f"{a['pick_small']} | {a['model_floor']:.1f} | {a['sim_floor']:.1f} | {fgap:+.0%} |")


HEADER = ("| preset | nodes | ranks | NVLink/GPU GB/s | net/GPU GB/s | NCCL's pick 8 GiB | expected busbw "
          "(NCCL formula) | bound of the figures | simulated busbw | gap | NCCL's pick 8 B | expected floor us | "
          "simulated 8 B us | gap |\n|---|---|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|")


RACK_POLICIES = ("first", "hash", "dest")


def routing_rows(racks) -> list[str]:
    """The ``--routing`` table: one row per rack count and policy (1 GiB allreduce, GB300 NVL72)."""
    lines = ["| racks | hosts | routing | simulated ms | NCCL's model ms | simulated / model |",
             "|---:|---:|---|---:|---:|---:|"]
    for k in racks:
        for policy in RACK_POLICIES:
            r = sc.run(topology="gb300-nvl72", nodes=18 * k, algorithm="nccl", profile="nccl", bytes=1 << 30,
                       routing=policy).to_dict()
            sim, model = r["time_s"] * 1e3, r["nccl_predicted_us"] / 1e3
            lines.append(f"| {k} | {18 * k} | {policy} | {sim:.2f} | {model:.2f} | {sim / model:.2f} |")
    return lines


def main(argv) -> int:
    if argv[:1] == ["--routing"]:
        for line in routing_rows([int(k) for k in argv[1:]] or [2, 3]):
            print(line, flush=True)
        return 0
    lines = [HEADER]
    print(HEADER, flush=True)
    for preset, counts in PRESETS:
        for nodes in counts:
            a = audit(preset, nodes)
            lines.append(row(a))
            print(lines[-1], "   ", a["network"] or "", flush=True)
    if argv:
        Path(argv[0]).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
