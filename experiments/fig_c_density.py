"""(c) Allreduce time vs density (1/512 -> 1/16) at 32 GPUs, N = 32M on abci, dgx1, dgx2.

    python experiments/fig_c_density.py [--scheduler ADDRESS] [--workers N] [--reduced]

Writes experiments/results/fig_c_density.csv and, per profile, scaling, speedup-over-ring
and phase-breakdown figures (PNG and PDF) next to it; prints how long it took.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_experiment  # noqa: E402

FIGURES = [
    {"tag": "time", "x": "density", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "logy": True},
    {"tag": "speedup", "x": "density", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "speedup_over": "ring"},
    {"tag": "breakdown", "x": "topology", "hue": "algorithm", "breakdown": True, "at": {"density": 1 / 128}},
]
REDUCED = {"gpus": 8, "elements": "1M", "density": ["1/128", "1/16"], "profile": ["ideal"]}

if __name__ == "__main__":
    sys.exit(run_experiment("fig_c_density", FIGURES, REDUCED, __doc__.splitlines()[0]))
