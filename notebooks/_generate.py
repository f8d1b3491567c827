"""Regenerate the notebooks of this directory (outputs cleared): python notebooks/_generate.py"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

SETUP = '''\
import os
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

import simcollective as sc

# SMALL = True: tiny sizes (seconds); set SIMCOLLECTIVE_SMALL=0/1 in the environment to override.
SMALL = os.environ.get("SIMCOLLECTIVE_SMALL", "0") == "1"
ROOT = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "experiments").is_dir())
plt.rcParams["figure.dpi"] = 90
print("SMALL =", SMALL, "| repository:", ROOT)'''

SCALING = [
    new_markdown_cell("""\
# Scaling curves, speedups and phase breakdowns

This notebook loads the results tables of the experiments (`experiments/results/*.csv`, written by
`python experiments/fig_*.py`). If there are none yet (or `SMALL` is set) it runs a small sweep
itself with `sc.sweep`. It then draws, with `sc.plot` (the function behind `simcollective plot`;
both from the Python API, `import simcollective as sc`):

1. allreduce time against the number of GPUs, one line per algorithm, one panel per topology;
2. the speedup of every algorithm over the dense `ring` at the same inputs;
3. where the time goes: the phases of each algorithm, stacked."""),
    new_code_cell(SETUP),
    new_code_cell('''\
files = sorted((ROOT / "experiments" / "results").glob("*.csv"))
if files and not SMALL:
    df = sc.load_results(*files).drop_duplicates("key")
    print(f"loaded {len(df)} rows from", ", ".join(f.name for f in files))
else:
    df = sc.sweep(topology=["abci", "dgx1"], gpus=[4, 8] if SMALL else [4, 8, 16, 32], nodes="auto",
                  algorithm=["ring", "ring-ring", "sparse-ring", "sparse-ring-ring", "topk-allgather",
                             "ssar-split-allgather"],
                  elements="64K" if SMALL else "4M", density="1/128", profile="smpi", placement="study",
                  workers=1 if SMALL else None, progress=not SMALL)
    print(df.attrs["summary"])
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
]

EXPLORE = [
    new_markdown_cell("""\
# Explore a topology

Draw a hardware model, simulate one allreduce on it (with real data, verified against NumPy),
and see which links it loads: per-link bytes and utilization (bytes / capacity / run time),
and the same drawn on the topology. A Chrome/Perfetto trace of the run is written too."""),
    new_code_cell(SETUP),
    new_code_cell('''\
TOPOLOGY, NODES = "abci", 2
fig = sc.draw_topology(TOPOLOGY, NODES)'''),
    new_code_cell('''\
ALGORITHM = "ring-ring"
result = sc.run(topology=TOPOLOGY, nodes=NODES, algorithm=ALGORITHM, elements="64K" if SMALL else "16M",
                profile="smpi", trace=True)
print(result)            # the summary `simcollective run` prints
result'''),
    new_code_cell('''\
links = result.links                          # a DataFrame, busiest first
links = links[links["link_type"] != "switch"]     # switch crossings: huge capacities, ~0 utilization
links.head(12)'''),
    new_code_cell('''\
top = links.head(20)
colors = dict(zip(sorted(links["link_type"].unique()), plt.get_cmap("tab10").colors))
fig, ax = plt.subplots(figsize=(8, 4))
ax.barh(top["link"][::-1], 100 * top["utilization"][::-1],
        color=[colors[lt] for lt in top["link_type"][::-1]])
ax.set_xlabel("utilization over the run (% of capacity)")
ax.set_title(f"busiest links: {ALGORITHM} on {TOPOLOGY} ({NODES} nodes)")
ax.tick_params(axis="y", labelsize=7)
fig.tight_layout()'''),
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
fig_f_collectives.csv`); if it is not there (or `SMALL` is set) a small grid is run here with
the same configuration (`--reduced`). Every point was verified on every rank."""),
    new_code_cell(SETUP),
    new_code_cell('''\
import sys

sys.path.insert(0, str(ROOT / "experiments"))
import fig_f_collectives as exp
from simcollective.sweeps import read_results, run_sweep

table = ROOT / "experiments" / "results" / "fig_f_collectives.csv"
if table.exists() and not SMALL:
    df = read_results(table)
    print(f"loaded {len(df)} rows from {table.name}")
else:
    out = Path(tempfile.mkdtemp()) / "fig_f_small.csv"
    df = run_sweep(exp.config(exp.MAIN, reduced=True), out, workers=1, progress=False)
    print(df.attrs["summary"])
ok = df[df["ok"].astype(bool)]
ok[["collective", "algorithm", "topology", "nodes", "ranks", "bytes", "time_s", "busbw"]].head()'''),
    new_code_cell('''\
# one figure per collective: time vs size, one line per algorithm, one panel per machine
outdir = Path(tempfile.mkdtemp())
for path in exp.figures(ok, outdir):
    if path.suffix == ".png":
        from IPython.display import Image, display
        display(Image(filename=str(path)))'''),
    new_code_cell('''\
# bus bandwidth (nccl-tests definition) against size on the largest machine of the table
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, (coll, part) in zip(axes, ok.groupby("collective", sort=False)):
    big = part[part["ranks"] == part["ranks"].max()]
    for algo, rows in big.groupby("algorithm"):
        rows = rows.sort_values("bytes")
        ax.plot(rows["bytes"], rows["busbw"] / 1e9, marker="o", ms=3, label=algo)
    ax.set_xscale("log", base=2)
    ax.set_title(f"{coll}, {int(big['ranks'].iloc[0])} GPUs ({big['topology'].iloc[0]})", fontsize=9)
    ax.set_xlabel("size (bytes)")
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("busbw (GB/s)")
axes[-1].legend(fontsize=7)
fig.tight_layout()
plt.show()'''),
    new_code_cell('''\
# the fastest algorithm at each size and machine
best = ok.loc[ok.groupby(["collective", "topology", "nodes", "bytes"])["time_s"].idxmin()]
best.pivot_table(index=["collective", "topology", "nodes"], columns="bytes", values="algorithm", aggfunc="first")'''),
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
    print("wrote", HERE / "scaling_curves.ipynb", HERE / "explore_topology.ipynb", HERE / "which_collective.ipynb")
