"""(d) Beyond the study: 128 -> 1024 GPUs on abci and a fat-tree (smpi): time vs GPUs, N and density.

    python experiments/fig_d_large_scale.py [--scheduler ADDRESS] [--workers N] [--reduced]

Writes experiments/results/fig_d_large_scale.csv and scaling, speedup-over-ring and
phase-breakdown figures (PNG and PDF) next to it; prints how long it took. The largest
points (1024 ranks, dense ring: ~2M messages) take minutes each: use a Dask cluster.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_experiment  # noqa: E402

M = 2**20
FIGURES = [
    {"tag": "gpus_time", "x": "gpus", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "logy": True, "at": {"elements": 32 * M, "density": 1 / 128}},
    {"tag": "gpus_speedup", "x": "gpus", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "speedup_over": "ring", "at": {"elements": 32 * M, "density": 1 / 128}},
    {"tag": "size_time", "x": "elements", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "logy": True, "at": {"gpus": 256, "density": 1 / 128}},
    {"tag": "density_time", "x": "density", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "logy": True, "at": {"gpus": 256, "elements": 32 * M}},
    {"tag": "breakdown", "x": "gpus", "hue": "algorithm", "facet": "topology", "breakdown": True,
     "at": {"elements": 32 * M, "density": 1 / 128}},
]
REDUCED = {"gpus": [16, 32], "elements": "1M", "density": "1/128"}

if __name__ == "__main__":
    sys.exit(run_experiment("fig_d_large_scale", FIGURES, REDUCED, __doc__.splitlines()[0]))
