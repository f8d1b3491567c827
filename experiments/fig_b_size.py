"""(b) Allreduce time vs vector length (4M -> 128M elements) at 32 GPUs, d = 1/128 on abci, dgx1, dgx2.

    python experiments/fig_b_size.py [--scheduler ADDRESS] [--workers N] [--reduced]

Writes experiments/results/fig_b_size.csv and, per profile, scaling, speedup-over-ring
and phase-breakdown figures (PNG and PDF) next to it; prints how long it took.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_experiment  # noqa: E402

FIGURES = [
    {"tag": "time", "x": "elements", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "logy": True},
    {"tag": "speedup", "x": "elements", "y": "time_s", "hue": "algorithm", "facet": "topology", "logx": True,
     "speedup_over": "ring"},
    {"tag": "breakdown", "x": "topology", "hue": "algorithm", "breakdown": True, "at": {"elements": 32 * 2**20}},
]
REDUCED = {"gpus": 8, "elements": ["256K", "1M"], "profile": ["ideal"]}

if __name__ == "__main__":
    sys.exit(run_experiment("fig_b_size", FIGURES, REDUCED, __doc__.splitlines()[0]))
