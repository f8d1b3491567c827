"""(e) Beyond the study: the rail-optimized dgx-h100 preset: time vs GPUs (8 -> 256), N and density.

    python experiments/fig_e_dgx_h100.py [--scheduler ADDRESS] [--workers N] [--reduced]

Writes experiments/results/fig_e_dgx_h100.csv and, per profile, scaling, speedup-over-ring
and phase-breakdown figures (PNG and PDF) next to it; prints how long it took.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_experiment  # noqa: E402

M = 2**20
FIGURES = [
    {"tag": "gpus_time", "x": "gpus", "y": "time_s", "hue": "algorithm", "logx": True, "logy": True,
     "at": {"elements": 32 * M, "density": 1 / 128}},
    {"tag": "gpus_speedup", "x": "gpus", "y": "time_s", "hue": "algorithm", "logx": True, "speedup_over": "ring",
     "at": {"elements": 32 * M, "density": 1 / 128}},
    {"tag": "size_time", "x": "elements", "y": "time_s", "hue": "algorithm", "logx": True, "logy": True,
     "at": {"gpus": 32, "density": 1 / 128}},
    {"tag": "density_time", "x": "density", "y": "time_s", "hue": "algorithm", "logx": True, "logy": True,
     "at": {"gpus": 32, "elements": 32 * M}},
    {"tag": "breakdown", "x": "gpus", "hue": "algorithm", "breakdown": True,
     "at": {"elements": 32 * M, "density": 1 / 128}},
]
REDUCED = {"gpus": [8, 16], "elements": "1M", "density": "1/128", "profile": ["ideal"]}

if __name__ == "__main__":
    sys.exit(run_experiment("fig_e_dgx_h100", FIGURES, REDUCED, __doc__.splitlines()[0]))
