"""``python -m benchmarks [--only S1,S2,...] [--flows] [--jobs] [--no-jit] [--no-profile] [--update-baseline]``

Prints the JIT compile time of the compiled kernels (first run with an empty cache, then
cached), then warms the real kernel cache once so that no scenario pays a compilation; for
each scenario (S1-S6, E: the engine without data operations, ST: start-up, the CPU time
of 16-rank command lines to their first event and the README's first command, see
benchmarks/startup.py), wall time, CPU time, simulated events per second, peak resident
memory and the simulated time; the bare SimPy
event rate measured in the same run; the measured exponent of wall time versus P (S5).
Simulated times are compared with ``benchmarks/baseline.json``: any difference beyond
float rounding fails the run. At the end, the targets for the scenarios that ran
(``benchmarks/targets.py``): measured, met or NOT MET; and for each missed target the
measured profile of a representative point, run under cProfile in a fresh process after
the scenarios (not counted in their timings): time by phase, own time by layer, the top
8 functions and calls per message (``benchmarks/profiling.py``; ``--no-profile`` skips it).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

# as the command line runs (simcollective/cli.py): one BLAS thread, so that no scenario's
# CPU time counts OpenBLAS's pool spinning on the other core; set before NumPy is imported
# here or in the scenarios' processes, which inherit it
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ._harness import simpy_event_cpu_rate, simpy_event_rate
from .allreduce import fit_exponent, run_scenarios, scenarios
from .targets import Context, evaluate, format_table

BASELINE = Path(__file__).with_name("baseline.json")

# Relative tolerance of the comparison with the baseline: float rounding. S4 (ring-ring
# over 1024 ranks with contention on every hop) amplifies rounding: a 1e-15 change of one
# link's capacity moves its simulated time by about 1e-5 (measured; see docs/performance.md), so
# any change of summation order in the engine does too. Its check is at 1e-4.
TOLERANCE = {"S4/": 1e-4}
DEFAULT_TOLERANCE = 1e-9


def tolerance(key: str) -> float:
    return next((t for prefix, t in TOLERANCE.items() if key.startswith(prefix)), DEFAULT_TOLERANCE)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[1])
    ap.add_argument("--only", help="comma-separated scenarios: S1,S2,S3,S4,S5,S6,E,ST,MOE,C,XE,X (default: all but X)")
    ap.add_argument("--flows", action="store_true", help="also run the engine flow benchmark")
    ap.add_argument("--jobs", action="store_true", help="also run the job benchmark (a 3D-parallel step)")
    ap.add_argument("--no-jit", action="store_true", help="skip the JIT compile time measurement")
    ap.add_argument("--no-profile", action="store_true", help="do not profile the points of missed targets")
    ap.add_argument("--update-baseline", action="store_true", help="record simulated times as the new baseline")
    args = ap.parse_args(argv)
    only = None
    if args.only is not None:
        only = {name.strip() for name in args.only.split(",")}
        known = list(scenarios()) + ["X"]
        bad = sorted(only - set(known))
        if bad or not only:
            ap.error(f"--only {args.only!r}: unknown scenario(s) {', '.join(bad) or '(none given)'}; "
                     f"choose from {','.join(known)}")

    rate = simpy_event_rate()
    cpu_rate = simpy_event_cpu_rate()
    print(f"bare SimPy: {rate:,.0f} events/s ({1e6 / rate:.2f} us per event; {1e6 / cpu_rate:.2f} us of CPU); "
          "overhead = wall (cpu) per message event / bare event's wall (cpu)")
    jit = None
    if not args.no_jit:
        from .jit import jit_times

        jit = first, cached = jit_times()
        for what, r in (("first run, empty cache", first), ("cached", cached)):
            if "error" in r:
                print(f"JIT ({what}): ERROR {r['error']}")
            else:
                print(f"JIT kernels ({what}): wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s (imports {r['import_s']:.2f} s wall)")
    from .jit import warm_cache

    w = warm_cache()
    print("kernel cache warmed before the scenarios (compiles what is stale, so no scenario pays it): "
          + (f"ERROR {w['error']}" if "error" in w else f"wall {w['wall_s']:.2f} s, cpu {w['cpu_s']:.2f} s"))
    if args.flows:
        from .flows import main as flows_main

        flows_main([])
    if args.jobs:
        from .jobs import main as jobs_main

        print()
        jobs_main([])
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
    checked = sum(1 for k in results if k in baseline)
    print(f"\nsimulated times: {len(same)} of {len(same) + len(differ)} points bit-identical to the baseline"
          + (" (before the update)" if args.update_baseline else ""))
    for k, rel in differ:
        print(f"  {k}: relative difference {rel:.1e}")
    if not failed:
        print(f"simulated times: {checked} of {len(results)} points match the baseline"
              + ("" if checked == len(results) else " (others have no baseline yet: --update-baseline)"))

    ctx = Context(results, bare_rate=rate, bare_cpu_rate=cpu_rate, jit=jit, same=len(same),
                  within=len(differ) - sum(1 for k, _ in differ if any(f.startswith(k + ":") for f in failed)),
                  failed=failed, unchecked=len(results) - checked)
    report_targets(ctx, profile=not args.no_profile)
    return 1 if failed else 0


def report_targets(ctx: Context, profile: bool = True, printer=print, run=None) -> list:
    """Print the targets table and, unless ``profile`` is false, the measured profile of
    each missed target's representative point (each distinct point run once, in a fresh
    process: ``run``, default :func:`benchmarks._harness.measure`). Returns the table's rows."""
    rows = evaluate(ctx)
    printer("\ntargets (CPU-judged: overheads and cost per message, see benchmarks/targets.py):")
    for line in format_table(rows):
        printer(line)
    missed = [t for t, _, met in rows if not met]
    printer(f"  {len(rows) - len(missed)} of {len(rows)} met" + (f"; NOT MET: {', '.join(t.name for t in missed)}" if missed else ""))
    if not profile or not missed:
        return rows
    from ._harness import measure
    from .profiling import format_profile, profile_point

    run = run or measure

    done = {}
    for t in missed:
        point = t.profile(ctx) if t.profile else None
        if point is None:
            printer(f"\nprofile for {t.name}: none (nothing to profile for this target)")
            continue
        if point.key() in done:
            printer(f"\nprofile for {t.name}: {point.label}, printed above for {done[point.key()]}")
            if t.why:
                printer(f"    why (measured, docs/performance.md 'Where the time goes'): {t.why}")
            continue
        done[point.key()] = t.name
        how = "its imports under -X importtime" if point.kind == "startup" else "fresh process under cProfile"
        printer(f"\nprofile for {t.name}: {point.label} ({point.why}), {how}")
        if t.why:
            printer(f"    why (measured, docs/performance.md 'Where the time goes'): {t.why}")
        if point.kind == "startup":
            from .startup import format_import_profile, import_profile

            for line in format_import_profile(import_profile(point.kwargs["command"])):
                printer(line)
            continue
        p = run(profile_point, point.kind, point.kwargs)
        if "error" in p:
            printer(f"    ERROR {p['error']}")
            continue
        printer(f"    wall {p['wall_s']:.2f} s, cpu {p['cpu_s']:.2f} s, peak {p['peak_rss'] / 2**30:.2f} GiB (under the profiler)")
        for line in format_profile(p):
            printer(line)
    return rows

if __name__ == "__main__":
    sys.exit(main())
