"""Regenerate the notebooks of this directory (outputs cleared): python notebooks/_generate.py"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

def parameters(values: str) -> "nbformat.NotebookNode":
    """The first code cell, tagged ``parameters``: the one place the environment is read.
    Every other cell uses only these names, so the tests (SIMCOLLECTIVE_SMALL=1) run the
    notebook exactly as shipped, with smaller numbers."""
    cell = new_code_cell("""\
# Parameters: the only values the cells below depend on. SIMCOLLECTIVE_SMALL=1 in the
# environment (the test suite sets it) makes the numbers small; every cell runs either way.
import os

SMALL = os.environ.get("SIMCOLLECTIVE_SMALL", "0") == "1"
""" + values)
    cell.metadata["tags"] = ["parameters"]
    return cell


SETUP = '''\
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import simcollective as sc

ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "experiments").is_dir())
RESULTS = ROOT / "experiments" / "results"
plt.rcParams["figure.dpi"] = 90
print("repository:", ROOT)'''

SCALING = [
    new_markdown_cell("""\
# Scaling curves, speedups and phase breakdowns

This notebook loads the allreduce results tables of the experiments (`experiments/results/
fig_a_gpus.csv`, `fig_b_size.csv`, `fig_c_density.csv`, written by `python experiments/fig_*.py`)
and draws, with `sc.plot` (the function behind `simcollective plot`; both from the Python API,
`import simcollective as sc`):

1. allreduce time against the number of GPUs, one line per algorithm, one panel per topology;
2. the speedup of every algorithm over the dense `ring` at the same inputs;
3. where the time goes: the phases of each algorithm, stacked.

Then it runs a sweep of its own with `sc.sweep` and draws it the same way."""),
    parameters("""\
TABLES = ["fig_a_gpus.csv", "fig_b_size.csv", "fig_c_density.csv"]   # in experiments/results/
SWEEP_GPUS = [4, 8] if SMALL else [4, 8, 16, 32]                     # the sweep of the last cells
SWEEP_ELEMENTS = "64K" if SMALL else "4M\""""),
    new_code_cell(SETUP),
    new_code_cell('''\
df = sc.load_results(*[RESULTS / name for name in TABLES]).drop_duplicates("key")
print(f"loaded {len(df)} rows from", ", ".join(TABLES))
ok = df[df["ok"].astype(bool)]
print(f"{len(ok)} successful rows, {len(df) - len(ok)} failed")
ok[["topology", "gpus", "algorithm", "elements", "density", "profile", "time_s", "busbw"]].head(10)'''),
    new_markdown_cell("We plot one slice of the table: one profile, one vector length and one density "
                      "(the most common ones in the table)."),
    new_code_cell('''\
profile = "smpi" if "smpi" in set(ok["profile"]) else ok["profile"].mode()[0]
sl = ok[ok["profile"] == profile]
elements = int(sl["elements"].mode()[0])
density = float(sl["density"].dropna().mode()[0]) if sl["density"].notna().any() else None
where = {"profile": profile, "elements": elements}
if density is not None:
    where["density"] = density
sl = sl[(sl["elements"] == elements) & ((sl["density"] == density) if density is not None else True)]
# keep the topologies with several GPU counts
topos = [t for t, g in sl.groupby("topology") if g["gpus"].nunique() > 1] or list(sl["topology"].unique())
where["topology"] = ",".join(topos)
print(where)
fig = sc.plot(ok, x="gpus", y="time_s", hue="algorithm", facet="topology", where=where, logx=True, logy=True)'''),
    new_code_cell('''\
fig = sc.plot(ok, x="gpus", y="time_s", hue="algorithm", facet="topology", where=where, logx=True,
              speedup_over="ring")'''),
    new_code_cell('''\
largest = int(sl["gpus"].max())
fig = sc.plot(ok, x="topology", hue="algorithm", breakdown=True, where={**where, "gpus": largest},
              title=f"phases at {largest} GPUs")'''),
    new_markdown_cell("A sweep of your own: `sc.sweep` takes lists (or `from`/`to` ranges) of any "
                      "input and returns the same table, ready for `sc.plot`."),
    new_code_cell('''\
mine = sc.sweep(topology=["abci", "dgx1"], gpus=SWEEP_GPUS, nodes="auto",
                algorithm=["ring", "ring-ring", "sparse-ring", "sparse-ring-ring", "topk-allgather",
                           "ssar-split-allgather"],
                elements=SWEEP_ELEMENTS, density="1/128", profile="smpi", placement="study", workers=1,
                progress=False)
print(mine.attrs["summary"])
fig = sc.plot(mine, x="gpus", y="time_s", hue="algorithm", facet="topology", logx=True, logy=True)'''),
]

EXPLORE = [
    new_markdown_cell("""\
# Explore a topology

Draw a hardware model, simulate one allreduce on it (with real data, verified against NumPy),
and see which links it loads: per-link bytes and utilization (bytes / capacity / run time),
and the same drawn on the topology. A Chrome/Perfetto trace of the run is written too."""),
    parameters("""\
TOPOLOGY, NODES = "abci", 2
ALGORITHM = "ring-ring"
ELEMENTS = "64K" if SMALL else "16M\""""),
    new_code_cell(SETUP),
    new_code_cell('''\
fig = sc.draw_topology(TOPOLOGY, NODES)'''),
    new_code_cell('''\
result = sc.run(topology=TOPOLOGY, nodes=NODES, algorithm=ALGORITHM, elements=ELEMENTS, profile="smpi",
                trace=True)
print(result)            # the summary `simcollective run` prints
result'''),
    new_code_cell('''\
links = result.links                          # a DataFrame, busiest first
links = links[links["link_type"] != "switch"]     # switch crossings: huge capacities, ~0 utilization
links.head(12)'''),
    new_code_cell('''\
# the busiest links, in the colours the drawing above gives their types
from simcollective.drawings import draw_link_bars

fig = draw_link_bars(links, top=20, title=f"busiest links: {ALGORITHM} on {TOPOLOGY} ({NODES} nodes)")'''),
    new_code_cell('''\
# every link coloured by its utilization (the "links" form of a run's JSON)
fig = sc.draw_topology(TOPOLOGY, NODES, utilization=result)'''),
    new_code_cell('''\
trace_path = Path(tempfile.mkdtemp()) / "trace.json"
result.write_trace(trace_path)
print(f"trace: {trace_path} ({trace_path.stat().st_size} bytes): open it in https://ui.perfetto.dev")'''),
]


WHICH = [
    new_markdown_cell("""\
# Which allgather / all-to-all on which machine

Time against size (nccl-tests bytes) for every algorithm of a collective, one figure per
collective, one panel per machine: `dgx-h100` with 1, 2, 4 and 8 nodes and `abci`. The data
are the table of `python experiments/fig_f_collectives.py` (`experiments/results/
fig_f_collectives.csv`; `--reduced` writes a small one to `results/reduced/`). Every point
was verified on every rank."""),
    parameters("""\
TABLE = "fig_f_collectives.csv"       # in experiments/results/ (or "reduced/fig_f_collectives.csv")"""),
    new_code_cell(SETUP),
    new_code_cell('''\
df = sc.load_results(RESULTS / TABLE)
print(f"loaded {len(df)} rows from {TABLE}")
ok = df[df["ok"].astype(bool)]
ok = ok.assign(machine=[f"{t}, {n} node{'s' if n > 1 else ''} ({r} GPUs)"
                        for t, n, r in zip(ok["topology"], ok["nodes"], ok["ranks"])])
# one colour per algorithm in every figure below, whichever collectives a figure shows
COLOURS = dict(zip(sorted(ok["algorithm"].unique()), plt.get_cmap("tab10").colors))
ok[["collective", "algorithm", "machine", "bytes", "time_s", "busbw"]].head()'''),
    new_code_cell('''\
# one figure per collective: time vs size, one line per algorithm, one panel per machine
for coll, part in ok.groupby("collective", sort=False):
    fig = sc.plot(part, x="bytes", y="time_s", hue="algorithm", facet="machine", logx=True, logy=True,
                  sharey=True, colors=COLOURS, title=f"{coll}: time vs size per algorithm (profile {part['profile'].iloc[0]})")
    plt.show()'''),
    new_code_cell('''\
# bus bandwidth (nccl-tests definition) against size on the largest machine of each collective:
# each panel's legend naming its algorithms, in the colours of the figures above
big = ok[ok["ranks"] == ok.groupby("collective")["ranks"].transform("max")]
machines = "; ".join(f"{c}: {int(g['ranks'].iloc[0])} GPUs ({g['topology'].iloc[0]})"
                     for c, g in big.groupby("collective", sort=False))
fig = sc.plot(big, x="bytes", y="busbw", hue="algorithm", facet="collective", logx=True, sharey=True,
              colors=COLOURS, title=f"bus bandwidth against size, {machines}")'''),
    new_code_cell('''\
# the fastest algorithm at each size and machine
best = ok.loc[ok.groupby(["collective", "topology", "nodes", "bytes"])["time_s"].idxmin()]
best.pivot_table(index=["collective", "topology", "nodes"], columns="bytes", values="algorithm", aggfunc="first")'''),
]

JOBS = [
    new_markdown_cell("""\
# Jobs: a 3D-parallel step, a straggler, a degraded link, two jobs on one fabric

`sc.job(...)` runs the collectives of a training step together on one machine (the same
tables as `simcollective job JOB.toml`; see docs/jobs.md). This notebook:

1. runs a 3D-parallel transformer step (`simcollective.jobs.examples.three_d_parallel`:
   TP 8 allreduce per layer, PP sends between two stages, DP reduce-scatter + allgather
   overlapped with compute) on DGX H100 nodes, with TP inside the nodes against TP across;
2. puts one straggler, then one degraded NIC cable, on a ring allreduce and reads what each
   cost against the same job without it;
3. runs two jobs on one fat-tree, with and without oversubscription."""),
    parameters("""\
NODES = [2, 4] if SMALL else [2, 4, 8, 16]      # DGX H100 nodes of the 3D-parallel step
LAYERS = 2 if SMALL else 16                     # layers (two pipeline stages)
MICROBATCHES = 2 if SMALL else 4
RING_BYTES = 2**22 if SMALL else 2**26          # the ring allreduce of part 2
DELAYS = [0.0, 1e-4, 5e-4] if SMALL else [0.0, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3]   # straggler (s)
FRACTIONS = [1.0, 0.5, 0.1] if SMALL else [1.0, 0.75, 0.5, 0.25, 0.1]       # capacity left
OVERSUBSCRIPTION = [1, 4] if SMALL else [1, 2, 4]"""),
    new_code_cell(SETUP + """
from simcollective.jobs.examples import LAYOUTS, three_d_parallel"""),
    new_code_cell('''\
rows = []
for nodes in NODES:
    for layout, schedule in [(layout, "forward") for layout in LAYOUTS] + [("tp-inside", "1f1b")]:
        table = three_d_parallel(nodes=nodes, layers=LAYERS, microbatches=MICROBATCHES, layout=layout,
                                 verify="symbolic", schedule=schedule)
        f = sc.job(table, alone=False).fields
        rows.append({"gpus": 8 * nodes, "layout": layout, "schedule": schedule, "step_ms": f["makespan_s"] * 1e3,
                     "messages": f["messages"]})
df3 = pd.DataFrame(rows)
df3["run"] = df3["layout"].map({"tp-inside": "TP inside the nodes", "dp-inside": "TP across, DP inside"}) + \
    df3["schedule"].map({"forward": ", forward only", "1f1b": ", forward + backward (1F1B)"})
ax = df3.pivot(index="gpus", columns="run", values="step_ms").plot(marker="o", figsize=(7, 4))
ax.set_xscale("log", base=2)
ax.set_xticks(df3["gpus"].unique(), [str(g) for g in df3["gpus"].unique()])
ax.minorticks_off()
ax.set(xlabel="GPUs (DGX H100 nodes x 8; TP 8, PP 2, DP = nodes / 2)", ylabel="step time (ms)",
       title=f"3D-parallel step: {LAYERS} layers, {MICROBATCHES} micro-batches")
ax.grid(True, alpha=0.3)
ax.legend(title=None, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize="small")
df3'''),
    new_code_cell('''\
# the timeline of a 1F1B step on 4 nodes: a row per communicator group (the first two of each), a bar per collective
from simcollective.job_command import draw_timeline

step = sc.job(three_d_parallel(nodes=NODES[1], layers=LAYERS, microbatches=MICROBATCHES, verify="symbolic",
                               schedule="1f1b"), alone=False)
fig = draw_timeline(step.fields, max_groups=2,
                    title=f"1F1B step on {8 * NODES[1]} GPUs: TP per stage (tp0, tp1), PP sends (pp), DP (dp0, dp1)")'''),
    new_markdown_cell("TP inside the nodes keeps the per-layer allreduces on NVLink; with DP inside "
                      "instead, every layer's allreduce crosses the NICs. At 2 nodes DP is 1 and the "
                      "two layouts are the same machine order. The 1F1B schedule adds the backward pass "
                      "(twice the forward's compute, a TP allreduce per layer, the gradients sent back "
                      "between the stages); the DP sync then follows the last backward through each layer."),
    new_code_cell('''\
def ring16(**disturb):
    return {"topology": "dgx-h100", "nodes": 2, "communicators": {"world": {"rule": "tp", "size": 16}},
            "steps": [{"name": "ar", "communicator": "world", "algorithm": "ring", "bytes": RING_BYTES}],
            "verify": "symbolic", **disturb}   # symbolic data: the times are those of real data

rows = []
for d in DELAYS:
    f = sc.job(ring16(stragglers=[{"rank": 5, "delay": d}] if d else []), alone=False).fields
    rows.append({"delay_us": d * 1e6, "cost_us": f.get("cost_s", 0.0) * 1e6})
for frac in FRACTIONS:
    faults = [{"link": "n0/nic0<->su0/leaf0", "capacity": frac}] if frac < 1 else []
    f = sc.job(ring16(faults=faults), alone=False).fields
    rows.append({"capacity_left": frac, "time_ms": f["makespan_s"] * 1e3})
faults = pd.DataFrame(rows)
fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.5))
s = faults.dropna(subset=["delay_us"])
a1.plot(s["delay_us"], s["cost_us"], "o-", label="cost")
a1.plot(s["delay_us"], s["delay_us"], "k:", label="cost = delay")
a1.set(xlabel="rank 5 late by (us)", ylabel="cost (us)", title="one straggler"); a1.legend()
d = faults.dropna(subset=["capacity_left"])
a2.plot(d["capacity_left"], d["time_ms"], "o-")
a2.set_xticks(FRACTIONS)
a2.set(xlabel="capacity left on n0/nic0 <-> su0/leaf0", ylabel="allreduce (ms)", title="one degraded NIC cable")
for a in (a1, a2):
    a.grid(True, alpha=0.3)
fig.suptitle(f"ring allreduce of {RING_BYTES // 2**20} MiB on 16 GPUs (2 DGX H100 nodes)")
fig.tight_layout()
faults'''),
    new_markdown_cell("A straggler costs less than its delay here: the ring is paced by its two hops "
                      "between the nodes, and rank 5's NVLink hops have slack. The degraded cable is on "
                      "the ring's path: every step waits for it."),
    new_code_cell('''\
even = [0 if i % 2 == 0 else -1 for i in range(16)]
odd = [-1 if c == 0 else 0 for c in even]
rows = []
for over in OVERSUBSCRIPTION:
    for routing in ("first", "hash"):
        f = sc.job(topology="fat-tree", nodes=16, routing=routing,
                   topology_opts={"hosts_per_leaf": 4, "oversubscription": over},
                   communicators={"a": {"rule": "split", "colour": even}, "b": {"rule": "split", "colour": odd}},
                   steps=[{"name": "a", "communicator": "a", "algorithm": "ring", "bytes": 2**24},
                          {"name": "b", "communicator": "b", "algorithm": "ring", "bytes": 2**24,
                           "background": True}], verify="symbolic", alone=False).fields
        rows.append({"oversubscription": over, "routing": routing, "alone_ms": f["undisturbed_makespan_s"] * 1e3,
                     "together_ms": f["makespan_s"] * 1e3})
two = pd.DataFrame(rows)
two["slowdown"] = two["together_ms"] / two["alone_ms"]
ax = two.pivot(index="oversubscription", columns="routing", values="slowdown").plot.bar(rot=0, figsize=(7, 4))
ax.set_ylim(0, 1.25 * two["slowdown"].max())
ax.axhline(1.0, color="k", lw=0.8)
ax.legend(title="routing", loc="upper left", ncol=2)
ax.set(xlabel="oversubscription (leaf down : up)", ylabel="job A: together / alone",
       title="two jobs on one fat-tree: 16 MiB rings on the even and the odd hosts")
two'''),
    new_code_cell('''\
# the committed study (python experiments/study_jobs.py), if it is there
for name in ("jobs_3d.csv", "jobs_faults.csv", "jobs_two_jobs.csv"):
    path = RESULTS / name
    print(name, "->", f"{len(pd.read_csv(path))} rows" if path.exists() else "not written yet")'''),
]

MOE = [
    new_markdown_cell("""\
# An MoE layer's dispatch + combine: NCCL's alltoallv against a DeepEP-style hierarchical one

An expert-parallel mixture-of-experts layer sends each token to the GPUs of the experts its
gate picked (the dispatch) and brings the experts' outputs back (the combine): an all-to-all
with per-pair sizes, `--collective alltoallv` (see docs/moe.md). This notebook draws a seeded
gate of DeepSeek-V3's shape (256 routed experts spread over the GPUs, top-8, hidden 7168,
bfloat16; DeepSeek-V3 technical report, arXiv:2412.19437), uniform (skew 0) and Zipf-skewed
(skew 1) expert popularity, and runs it on DGX H100 nodes (profile `ideal`, size-only data,
every point verified) with

* `nccl`: NCCL's grouped ncclSend/ncclRecv, every peer at once in p2p chunks;
* `hierarchical`: DeepEP's dispatch: one message per node on the rail, then NVLink forwarding
  inside the destination node (the combine retraces it)."""),
    parameters("""\
GPUS = [8, 16] if SMALL else [8, 16, 32, 64, 128, 256]   # 8 GPUs per DGX H100 node
NCCL_MAX_GPUS = 16 if SMALL else 64                        # the largest nccl run (see docs/moe.md)
TOKENS = 16 if SMALL else 128                             # tokens per rank (a decode batch)
SKEWS = [0.0, 1.0]                                        # Zipf exponent of the experts' popularity"""),
    new_code_cell(SETUP),
    new_code_cell('''\
EXPERTS, HIDDEN, TOPK = 256, 7168, 8

def moe_point(algorithm, gpus, skew):
    moe = f"tokens={TOKENS},hidden={HIDDEN},topk={TOPK},experts_per_rank={EXPERTS // gpus},skew={skew}"
    r = sc.run(topology="dgx-h100", nodes=gpus // 8, collective="alltoallv", algorithm=algorithm, moe=moe,
               verify="symbolic")
    ph = r["phases"]
    return {"algorithm": algorithm, "gpus": gpus, "skew": skew, "time_us": r["time_s"] * 1e6,
            "dispatch_us": sum(v for k, v in ph.items() if k.startswith("dispatch")) * 1e6,
            "combine_us": sum(v for k, v in ph.items() if k.startswith("combine")) * 1e6,
            "imbalance": r["imbalance"], "messages": r["messages"], "verified": r["verification"]}

rows = [moe_point(algo, g, skew) for skew in SKEWS for g in GPUS for algo in ("nccl", "hierarchical")
        if algo == "hierarchical" or g <= NCCL_MAX_GPUS]
moe = pd.DataFrame(rows)
moe'''),
    new_code_cell('''\
fig, axes = plt.subplots(1, len(SKEWS), figsize=(11, 4), sharey=True)
for ax, skew in zip(axes, SKEWS):
    part = moe[moe["skew"] == skew].pivot(index="gpus", columns="algorithm", values="time_us")
    part.plot(ax=ax, marker="o", logx=True, logy=True)
    ax.set_xscale("log", base=2)
    ax.set_xticks(GPUS, [str(g) for g in GPUS])
    ax.minorticks_off()
    ax.set(xlabel="GPUs (DGX H100, 8 per node)", ylabel="dispatch + combine (us)",
           title=f"skew {skew:g}: busiest rank / mean = "
                 f"{moe[moe['skew'] == skew]['imbalance'].max():.1f} at {max(GPUS)} GPUs")
    ax.grid(True, alpha=0.3)
fig.suptitle(f"MoE layer: {TOKENS} tokens/rank, top-{TOPK} of {EXPERTS} experts, hidden {HIDDEN}, bfloat16")
fig.tight_layout()'''),
    new_code_cell('''\
# dispatch and combine apart, at the largest size both algorithms ran
g = int(moe.groupby("gpus")["algorithm"].nunique().pipe(lambda s: s[s == 2]).index.max())
part = moe[moe["gpus"] == g].set_index(["skew", "algorithm"])[["dispatch_us", "combine_us"]]
bars = part.rename(columns={"dispatch_us": "dispatch", "combine_us": "combine"})
bars.index = [f"skew {skew:g}, {algo}" for skew, algo in bars.index]
ax = bars.plot.barh(stacked=True, figsize=(8, 3))
ax.set(xlabel="time (us)", ylabel="", title=f"dispatch and combine at {g} GPUs")
part'''),
    new_code_cell('''\
# how far the busiest rank is above the mean, and what it does to nccl against hierarchical
ratio = moe.pivot_table(index="gpus", columns=["skew", "algorithm"], values="time_us")
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.5))
for skew in SKEWS:
    imb = moe[(moe["skew"] == skew) & (moe["algorithm"] == "hierarchical")].set_index("gpus")["imbalance"]
    a1.plot(imb.index, imb.values, "o-", label=f"skew {skew:g}")
    if (skew, "nccl") in ratio:
        r = (ratio[(skew, "nccl")] / ratio[(skew, "hierarchical")]).dropna()
        a2.plot(r.index, r.values, "o-", label=f"skew {skew:g}")
for ax in (a1, a2):
    ax.set_xscale("log", base=2)
    ax.set_xticks(GPUS, [str(g) for g in GPUS])
    ax.minorticks_off()
    ax.set_xlabel("GPUs")
    ax.grid(True, alpha=0.3)
    ax.legend()
a1.set(ylabel="busiest rank's bytes / mean", title="load imbalance of the gate")
a2.axhline(1.0, color="k", lw=0.8)
a2.set(ylabel="nccl / hierarchical", title="above 1: hierarchical is faster")
fig.tight_layout()'''),
    new_markdown_cell("With uniform experts both algorithms move the same bytes through the same NICs "
                      "(every GPU has its own rail) and `nccl` is a little faster: `hierarchical` runs "
                      "its NVLink stage after its rail stage. With hot experts (skew 1) the busiest GPU "
                      "sets the time; `hierarchical` brings a hot GPU's tokens in on all 8 rails of its "
                      "node, while `nccl`'s dispatch converges on the hot GPU's own NIC."),
    new_code_cell('''\
# the committed study (python experiments/fig_g_moe.py), if it is there
path = RESULTS / "fig_g_moe.csv"
print(path.name, "->", f"{len(pd.read_csv(path))} rows" if path.exists() else "not written yet")'''),
]


def _write(cells, name):
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    _write(SCALING, "scaling_curves.ipynb")
    _write(EXPLORE, "explore_topology.ipynb")
    _write(WHICH, "which_collective.ipynb")
    _write(JOBS, "jobs.ipynb")
    _write(MOE, "moe.ipynb")
    print("wrote the notebooks of", HERE)
