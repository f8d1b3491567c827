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
ok[["collective", "algorithm", "machine", "bytes", "time_s", "busbw"]].head()'''),
    new_code_cell('''\
# one figure per collective: time vs size, one line per algorithm, one panel per machine
for coll, part in ok.groupby("collective", sort=False):
    fig = sc.plot(part, x="bytes", y="time_s", hue="algorithm", facet="machine", logx=True, logy=True,
                  sharey=True, title=f"{coll}: time vs size per algorithm (profile {part['profile'].iloc[0]})")
    plt.show()'''),
    new_code_cell('''\
# bus bandwidth (nccl-tests definition) against size on the largest machine of each collective:
# one colour per algorithm in both panels, each panel's legend naming its algorithms
big = ok[ok["ranks"] == ok.groupby("collective")["ranks"].transform("max")]
machines = "; ".join(f"{c}: {int(g['ranks'].iloc[0])} GPUs ({g['topology'].iloc[0]})"
                     for c, g in big.groupby("collective", sort=False))
fig = sc.plot(big, x="bytes", y="busbw", hue="algorithm", facet="collective", logx=True, sharey=True,
              title=f"bus bandwidth against size, {machines}")'''),
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
