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
NODES = [2, 4] if SMALL else [2, 4, 8]          # DGX H100 nodes of the 3D-parallel step
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
    for layout in LAYOUTS:
        table = three_d_parallel(nodes=nodes, layers=LAYERS, microbatches=MICROBATCHES, layout=layout,
                                 verify="symbolic")
        f = sc.job(table, alone=False).fields
        rows.append({"gpus": 8 * nodes, "layout": layout, "step_ms": f["makespan_s"] * 1e3,
                     "messages": f["messages"]})
df3 = pd.DataFrame(rows)
ax = df3.pivot(index="gpus", columns="layout", values="step_ms").plot(marker="o", logx=True)
ax.set(ylabel="step time (ms)", title="3D-parallel step: TP inside the nodes or across them")
df3'''),
    new_markdown_cell("TP inside the nodes keeps the per-layer allreduces on NVLink; with DP inside "
                      "instead, every layer's allreduce crosses the NICs. At 2 nodes DP is 1 and the "
                      "two layouts are the same machine order."),
    new_code_cell('''\
def ring16(**disturb):
    return {"topology": "dgx-h100", "nodes": 2, "communicators": {"world": {"rule": "tp", "size": 16}},
            "steps": [{"name": "ar", "communicator": "world", "algorithm": "ring", "bytes": RING_BYTES}],
            **disturb}

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
a1.set(xlabel="rank 5 late by (us)", ylabel="cost (us)"); a1.legend()
d = faults.dropna(subset=["capacity_left"])
a2.plot(d["capacity_left"], d["time_ms"], "o-")
a2.set(xlabel="capacity left on n0/nic0 <-> su0/leaf0", ylabel="allreduce (ms)", xscale="log")
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
                           "background": True}], alone=False).fields
        rows.append({"oversubscription": over, "routing": routing, "alone_ms": f["undisturbed_makespan_s"] * 1e3,
                     "together_ms": f["makespan_s"] * 1e3})
two = pd.DataFrame(rows)
two["slowdown"] = two["together_ms"] / two["alone_ms"]
ax = two.pivot(index="oversubscription", columns="routing", values="slowdown").plot.bar(rot=0)
ax.set(ylabel="job A: together / alone", title="two jobs on one fat-tree (16 hosts, 4 per leaf)")
two'''),
    new_code_cell('''\
# the committed study (python experiments/study_jobs.py), if it is there
for name in ("jobs_3d.csv", "jobs_faults.csv", "jobs_two_jobs.csv"):
    path = RESULTS / name
    print(name, "->", f"{len(pd.read_csv(path))} rows" if path.exists() else "not written yet")'''),
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
    print("wrote", HERE / "scaling_curves.ipynb", HERE / "explore_topology.ipynb", HERE / "which_collective.ipynb")
