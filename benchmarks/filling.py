"""Max-min solver benchmark: the compiled progressive filling.

Run: ``python -m benchmarks.filling``. Prints, for synthetic problems shaped like the bulk
solves of the allreduce scenarios, the number of passes and the microseconds per solve
of the compiled filling (:func:`simcollective.network.kernels.fill`, best of 5):

* ``racks G``: G independent groups (racks) of 24 flows, each flow crossing 2 of its
  rack's 4 shared uplinks with unequal loads (S4 at 256 abci nodes has 8 racks and about
  190 flows per solve): the filling needs a pass per distinct level (here 3 per rack).
* ``all-to-all``: 1,500 flows over 24 resources, each crossing 2 of them, as in the
  split-allgather solves of S2: the levels depend on one another, many passes.

Compiled, a pass costs a few nanoseconds per entry, so the NumPy-era "parallel" filling
(fixing independent bottlenecks in one pass) does not pay. Both problems have unit weights
and coefficients with their entries in flow order, so the filling walks the unfixed flows in
order, each over its own entries (``filling.fill_unit``); problems of other weights visit
the unfixed flows, the resources still in use and the remaining entries of the resources
whose flows a pass fixed, the entries grouped by resource and by flow first (same sums,
same order).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from simcollective.network.kernels import fill as _fill


def racks(groups: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    w, b, fi, rj, av, caps = [], [], [], [], [], []
    for g in range(groups):
        caps += rng.uniform(60e9, 75e9, 4).tolist()
        for _ in range(24):
            i = len(w)
            w.append(1.0)
            b.append(12.5e9)
            for r in sorted(rng.choice(4, size=2, replace=False).tolist()):
                fi.append(i)
                rj.append(4 * g + r)
                av.append(1.0)
    return _arrays(w, b, fi, rj, av, caps)


def all_to_all(seed: int = 1):
    rng = np.random.default_rng(seed)
    n, m = 24, 1500
    caps = rng.uniform(40e9, 80e9, n).tolist()
    w, b, fi, rj, av = [1.0] * m, [12.5e9] * m, [], [], []
    for i in range(m):
        for r in sorted(rng.choice(n, size=2, replace=False).tolist()):
            fi.append(i)
            rj.append(r)
            av.append(1.0)
    return _arrays(w, b, fi, rj, av, caps)


def _arrays(w, b, fi, rj, av, caps):
    return (np.array(w), np.array(b), np.array(fi, dtype=np.intp), np.array(rj, dtype=np.intp),
            np.array(av), np.array(caps))


def time_fill(problem, repeat: int = 5, number: int = 20):
    w, b, fi, rj, av, caps = problem
    _fill(w, b, fi, rj, av, caps.copy(), np.zeros(w.shape[0]), 1e-12)  # (compile outside the timing)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            rates = np.zeros(w.shape[0])
            passes = _fill(w, b, fi, rj, av, caps.copy(), rates, 1e-12)
        best = min(best, (time.perf_counter() - t0) / number)
    return rates, passes, best * 1e6


def main(argv=None) -> None:
    argparse.ArgumentParser(prog="python -m benchmarks.filling", description=__doc__.split("\n\n")[0]).parse_args(argv)
    print(f"{'problem':<12} {'flows':>6} {'entries':>8} {'passes':>7} {'us':>8}")
    cases = [(f"racks {g}", racks(g)) for g in (1, 2, 4, 8, 16)] + [("all-to-all", all_to_all())]
    for name, problem in cases:
        _, k, t = time_fill(problem)
        print(f"{name:<12} {problem[0].shape[0]:>6} {problem[2].shape[0]:>8} {k:>7} {t:>8.1f}")


if __name__ == "__main__":
    main()
