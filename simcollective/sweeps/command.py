"""``simcollective sweep CONFIG.toml [--out results.csv] [--workers N] [--scheduler ADDRESS]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..algorithms.registry import COLLECTIVES
from ..arguments import add_plugin_argument, refuse_unused
from ..parsing import parse_int
from ..run_config import ENGINES
from .config import DEFAULTS, INPUT_KEYS, load_config, with_engine
from .execution import LARGE_GRID, MAX_ATTEMPTS, run_sweep
from .grid import expand_grid, grid_size

__all__ = ["add_parser", "cmd_sweep", "EPILOG"]

EPILOG = """\
configuration format (TOML; data only, never executed):

  name = "smoke"                  # optional, also: description
  [fixed]                         # scalars shared by every point
  topology = "abci"
  profile = "ideal"
  [grid]                          # lists; the sweep is their cartesian product
  nodes = [1, 2]
  algorithm = ["ring", "ring-ring"]
  elements = ["64K", "1M"]        # sizes accept K, M, G suffixes
  density = ["1/128"]             # fractions accepted

  Use [[grid]] blocks (array of tables) for a union of several products.
  keys: """ + ", ".join(INPUT_KEYS) + """
  nodes = "auto" uses ceil(gpus / GPUs per node of the topology).
  collective = ["allgather"]; bytes = {from = "8", to = "128M", factor = 2} (ranges
  also for elements and gpus; step = N adds instead of multiplying).
  topology_opts = {oversubscription = 3} (or a list of such tables in a grid).
  Relative topology_file/inputs/placement paths are relative to the config file.
  Inputs an algorithm does not use are not passed to it (column 'ignored').
  engine = ["compiled", "simpy"] runs each point on both execution paths (default
  auto, or sweep --engine for the points that do not set it); the row's engine
  column is the path that ran (a failed point keeps the one asked for).

output: one row per point (CSV, or Parquet if --out ends in .parquet). The file is
locked while a sweep writes it (a second sweep on it refuses). Rows are appended
to a journal (.NAME.journal) as points finish and the table is rewritten
atomically at most every 30 s and at the end; a re-run skips points already in
the table or journal (a truncated row runs again), so an interrupted or killed
sweep resumes where it stopped. A point that fails is recorded with ok=False and
its error; the sweep goes on and exits 0, printing the number of failed points.
A point whose worker is lost (killed, out of memory, Dask worker or scheduler
gone) is retried up to 3 times and never recorded; if some still cannot finish,
the sweep says how many and exits 5. Exit 2: a bad configuration or out file.
Grids of more than 10000 points need --max-points or --yes.
"""



def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "sweep", help=f"run a grid of collective simulations ({', '.join(COLLECTIVES)}) in parallel into one "
                      "results table",
        description=f"Run every point of a TOML grid (topology x collective x size x algorithm x ...;\n"
                    f"collectives: {', '.join(COLLECTIVES)}) in parallel\n"
                    "(local processes or a Dask cluster), verify each, and collect one row per point.\n"
                    "An option given that the chosen mode does not use is an error.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="CONFIG.toml", help="the sweep configuration")
    p.add_argument("--out", metavar="PATH", help="results table, .csv or .parquet (default: CONFIG's name + .csv)")
    p.add_argument("--workers", metavar="N",
                   help="local worker processes (default: number of CPUs; not with --scheduler)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask distributed cluster, e.g. tcp://host:8786")
    p.add_argument("--max-points", metavar="N", help="run at most N new points now (the rest on a re-run)")
    p.add_argument("--retry-failed", action="store_true", help="run again the points whose row failed")
    p.add_argument("--yes", action="store_true",
                   help=f"run a grid of more than {LARGE_GRID} points, and points estimated beyond the wall limit (10 min)")
    p.add_argument("--dry-run", action="store_true",
                   help=f"count the points (and list them, up to {LARGE_GRID}) and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--engine", choices=ENGINES,
                   help="execution path of every point whose configuration sets no engine (as run --engine; "
                        "default auto: the compiled path where it applies)")
    add_plugin_argument(p)
    p.set_defaults(func=cmd_sweep)


def _describe_point(p: dict) -> str:
    shown = [f"{k}={p[k]}" for k in INPUT_KEYS if p.get(k) is not None and p[k] != DEFAULTS[k]
             or k in ("topology", "algorithm", "elements")]
    return " ".join(shown)


def _unused(args) -> dict:
    """``{dest: why}`` of the options the chosen mode (``--dry-run``, ``--scheduler``) does not use."""
    if args.dry_run:
        return {dest: "with --dry-run (it only counts and lists the points)"
                for dest in ("out", "workers", "scheduler", "max_points", "retry_failed", "yes", "quiet", "plugin")}
    if args.scheduler is not None:
        return {"workers": "with --scheduler (the Dask cluster's own workers run the points)"}
    return {}


def cmd_sweep(args) -> int:
    refuse_unused(args, _unused(args))
    _int = parse_int
    out = args.out or f"{Path(args.config).stem}.csv"
    workers = _int(args.workers, "--workers", 1) if args.workers is not None else None
    max_points = _int(args.max_points, "--max-points", 0) if args.max_points is not None else None
    if args.dry_run:
        cfg = with_engine(load_config(args.config), args.engine)
        size = grid_size(cfg)
        if size > LARGE_GRID:
            print(f"{size} points (counted from the grid, duplicates included; not listed: more than {LARGE_GRID}; "
                  "running them needs --max-points N or --yes)")
            return 0
        points = expand_grid(cfg)
        for p in points:
            print(f"{p['key']}  {_describe_point(p)}")
        print(f"{len(points)} points")
        return 0
    try:
        df = run_sweep(args.config, out, workers=workers, scheduler=args.scheduler,
                       progress=not args.quiet and sys.stderr.isatty(),   # (a bar on a terminal only, as run)
                       max_points=max_points, retry_failed=args.retry_failed, yes=args.yes,
                       plugins=args.plugin or (), engine=args.engine)
    except KeyboardInterrupt:
        print(f"sweep interrupted: the points that finished are in {out}; run the same command again to "
              "resume", file=sys.stderr)
        raise
    s = df.attrs["summary"]
    line = (f"sweep {s['name']}: {s['points']} points; ran {s['ran']} now ({s['ok']} ok, {s['failed']} failed), "
            f"{s['skipped']} already in {out}")
    if s["left"] - s["lost"]:
        line += f", {s['left'] - s['lost']} left for a re-run"
    if s["lost"]:
        line += f", {s['lost']} lost (worker lost)"
    print(line + f"; {s['seconds']:.1f} s")
    failed = df[~df["ok"].astype(bool)] if "ok" in df.columns else df.iloc[:0]
    if len(failed):
        print(f"  {len(failed)} failed point(s) in the table (ok = False), e.g.:")
        for _, r in failed.head(3).iterrows():
            print(f"    {r['algorithm']} on {r['topology']}: {r['error']}")
    print(f"  results: {out}")
    if s["lost"]:
        who = "Dask worker or scheduler" if args.scheduler else "worker process"
        print(f"simcollective: error: {s['lost']} point(s) could not be finished: their {who} was lost "
              f"(killed, out of memory, unreachable; tried up to {MAX_ATTEMPTS} times); they are not in {out}: "
              "run the same command again to retry them", file=sys.stderr)
        return 5
    return 0
