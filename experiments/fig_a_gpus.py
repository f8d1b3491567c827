"""(a) Allreduce time vs number of GPUs (8 -> 64) at N = 32M, d = 1/128 on abci, dgx1, dgx2.

    python experiments/fig_a_gpus.py [--scheduler ADDRESS] [--workers N] [--reduced]

Writes experiments/results/fig_a_gpus.csv and, per profile, scaling, speedup-over-ring
and phase-breakdown figures (PNG and PDF) next to it; prints how long it took.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_experiment  # noqa: E402

FIGURES = [
    {"tag": "time", "x": "gpus", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True, "logy": True},
    {"tag": "speedup", "x": "gpus", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "speedup_over": "ring"},
    {"tag": "breakdown", "x": "topology", "hue": "algorithm", "breakdown": True, "at": {"gpus": 32}},
]
REDUCED = {"gpus": [4, 8], "elements": "1M", "profile": ["ideal"]}

if __name__ == "__main__":
    sys.exit(run_experiment("fig_a_gpus", FIGURES, REDUCED, __doc__.splitlines()[0]))
