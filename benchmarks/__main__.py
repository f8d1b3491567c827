"""``python -m benchmarks [--only S1,S2,...] [--flows] [--no-jit] [--update-baseline]``

Prints the JIT compile time of the compiled kernels (first run with an empty cache, then
cached); for each scenario (S1-S6, and E: the engine without data operations), wall
time, CPU time, simulated events per second, peak resident memory and the simulated
time; the bare SimPy event rate measured in the same run; the measured
exponent of wall time versus P (S5). Simulated times are compared with
``benchmarks/baseline.json``: any difference beyond float rounding fails the run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ._harness import simpy_event_cpu_rate, simpy_event_rate
from .allreduce import fit_exponent, run_scenarios, scenarios

BASELINE = Path(__file__).with_name("baseline.json")

# Relative tolerance of the comparison with the baseline: float rounding. S4 (ring-ring
# over 1024 ranks with contention on every hop) amplifies rounding: a 1e-15 change of one
# link's capacity moves its simulated time by about 1e-5 (measured; see the README), so
# any change of summation order in the engine does too. Its check is at 1e-4.
TOLERANCE = {"S4/": 1e-4}
DEFAULT_TOLERANCE = 1e-9


def tolerance(key: str) -> float:
    return next((t for prefix, t in TOLERANCE.items() if key.startswith(prefix)), DEFAULT_TOLERANCE)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    ap.add_argument("--only", help="comma-separated scenarios: S1,S2,S3,S4,S5,S6,E (default: all)")
    ap.add_argument("--flows", action="store_true", help="also run the engine flow benchmark")
    ap.add_argument("--no-jit", action="store_true", help="skip the JIT compile time measurement")
    ap.add_argument("--update-baseline", action="store_true", help="record simulated times as the new baseline")
    args = ap.parse_args(argv)
    only = None
    if args.only is not None:
        only = {name.strip() for name in args.only.split(",")}
        known = list(scenarios())
        bad = sorted(only - set(known))
        if bad or not only:
            ap.error(f"--only {args.only!r}: unknown scenario(s) {', '.join(bad) or '(none given)'}; "
                     f"choose from {','.join(known)}")

    rate = simpy_event_rate()
    cpu_rate = simpy_event_cpu_rate()
    print(f"bare SimPy: {rate:,.0f} events/s ({1e6 / rate:.2f} us per event; {1e6 / cpu_rate:.2f} us of CPU); "
          "overhead = wall (cpu) per message event / bare event's wall (cpu)")
    if not args.no_jit:
        from .jit import jit_times

        first, cached = jit_times()
        for what, r in (("first run, empty cache", first), ("cached", cached)):
            if "error" in r:
                print(f"JIT ({what}): ERROR {r['error']}")
            else:
                print(f"JIT kernels ({what}): wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s (imports {r['import_s']:.2f} s wall)")
    if args.flows:
        from .flows import main as flows_main

        flows_main([])
    results = run_scenarios(only, bare_rate=rate, bare_cpu_rate=cpu_rate)

    s5 = {k: v for k, v in results.items() if k.startswith("S5/") and "error" not in v}
    big = {k: v for k, v in results.items() if k[:2] in ("S3", "S4") and "error" not in v}
    for algo, big_key in (("ring", "S3/"), ("sparse-ring-ring", "S4/")):
        pts = [(v["ranks"], v["wall_s"]) for k, v in s5.items() if k.split("/")[1].startswith(algo + " ")]
        pts += [(v["ranks"], v["wall_s"]) for k, v in big.items() if k.startswith(big_key)]
        if len(pts) >= 2:
            pts.sort()
            print(f"\nS5 {algo}: wall time ~ P^{fit_exponent(*zip(*pts)):.2f} over P = {[p for p, _ in pts]}"
                  f" (walls {', '.join(f'{w:.2f}' for _, w in pts)} s)")

    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    failed = []
    for key, r in results.items():
        if "error" in r:
            failed.append(f"{key}: {r['error']}")
            continue
        ref = baseline.get(key)
        if ref is not None and not math.isclose(r["time_s"], ref, rel_tol=tolerance(key), abs_tol=0.0):
            failed.append(f"{key}: simulated time {r['time_s']!r} differs from baseline {ref!r}")
    # (before any update of the baseline: compared with the one the run started from)
    same = [k for k in results if k in baseline and results[k].get("time_s") == baseline[k]]
    differ = [(k, abs(results[k]["time_s"] / baseline[k] - 1)) for k in results
              if k in baseline and k not in same and "error" not in results[k]]
    if args.update_baseline:
        baseline.update({k: r["time_s"] for k, r in results.items() if "error" not in r})
        BASELINE.write_text(json.dumps(dict(sorted(baseline.items())), indent=1) + "\n")
        print(f"\nbaseline updated: {BASELINE}")
    if failed:
        print("\nFAILED:\n  " + "\n  ".join(failed))
        return 1
    checked = sum(1 for k in results if k in baseline)
    print(f"\nsimulated times: {len(same)} of {len(same) + len(differ)} points bit-identical to the baseline"
          + (" (before the update)" if args.update_baseline else ""))
    for k, rel in differ:
        print(f"  {k}: relative difference {rel:.1e}")
    print(f"simulated times: {checked} of {len(results)} points match the baseline"
          + ("" if checked == len(results) else " (others have no baseline yet: --update-baseline)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
