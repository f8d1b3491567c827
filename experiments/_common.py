"""Shared driver of the experiment scripts: run a sweep config, then draw its figures.

Each ``fig_*.py`` script names its config (``configs/<name>.toml``), its figures and a
reduced grid (``--reduced``: a few seconds to minutes, to check that everything works).
Results go to ``results/<name>.csv`` (``results/reduced/`` with ``--reduced``), figures next
to them as PNG and PDF. A re-run resumes the sweep (points already in the table are
skipped) and redraws the figures; ``--figures-only`` just redraws.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _only_registered(cfg: dict) -> tuple[dict, list]:
    """Drop algorithms that are not registered (yet) from every grid; return the dropped."""
    from simcollective.algorithms import load_all

    known = set(load_all())
    cfg = copy.deepcopy(cfg)
    dropped = []
    tables = [cfg.get("fixed", {})] + (cfg["grid"] if isinstance(cfg.get("grid"), list) else [cfg.get("grid", {})])
    for t in tables:
        algos = t.get("algorithm")
        if algos is None:
            continue
        if isinstance(algos, list):
            keep = [a for a in algos if a in known]
            dropped += [a for a in algos if a not in known]
            t["algorithm"] = keep
        elif algos not in known:
            dropped.append(algos)
    if isinstance(cfg.get("grid"), list):
        cfg["grid"] = [g for g in cfg["grid"] if g.get("algorithm") != []]
    return cfg, sorted(set(dropped))


def _override(cfg: dict, overrides: dict) -> dict:
    """Set keys of the config in every grid block (as lists), taking them out of [fixed]."""
    cfg = copy.deepcopy(cfg)
    if not isinstance(cfg.get("grid"), list):
        cfg["grid"] = [cfg.get("grid", {})]
    fixed = cfg.setdefault("fixed", {})
    for key, value in overrides.items():
        fixed.pop(key, None)
        for g in cfg["grid"]:
            g[key] = list(value) if isinstance(value, (list, tuple)) else [value]
    return cfg


def _closest(values, wanted):
    vals = sorted(set(values))
    if wanted in vals:
        return wanted
    try:
        return min(vals, key=lambda v: abs(float(v) - float(wanted)))
    except (TypeError, ValueError):
        return vals[0]


def draw_figures(df, name: str, figures: list, outdir: Path) -> list:
    """Draw every figure spec for every profile in the results; return the written paths."""
    from simcollective.errors import SimCollectiveError
    from simcollective.figures import plot_results

    ok = df[df["ok"].astype(bool)]
    written = []
    if ok.empty:
        print(f"{name}: no successful points, no figures", file=sys.stderr)
        return written
    profiles = sorted(ok["profile"].unique())
    for spec in figures:
        spec = dict(spec)
        tag = spec.pop("tag")
        at = spec.pop("at", {})
        for profile in profiles:
            sub = ok[ok["profile"] == profile]
            where = {"profile": profile}
            for col, wanted in at.items():
                where[col] = _closest(sub[col].dropna().tolist(), wanted)
                sub = sub[sub[col] == where[col]]
            if sub.empty:
                continue
            title = f"{name}: " + ", ".join(f"{k} = {_show(k, v)}" for k, v in where.items())
            for ext in (".png", ".pdf"):
                out = outdir / f"{name}_{profile}_{tag}{ext}"
                try:
                    plot_results(ok, where=where, out=out, title=title, **spec)
                except SimCollectiveError as exc:
                    print(f"{name}: figure {out.name} skipped: {exc}", file=sys.stderr)
                    break
                written.append(out)
    return written


def _show(col, v):
    from simcollective.parsing import format_count as _fmt_count, format_fraction as _fmt_fraction

    if col == "density":
        return _fmt_fraction(float(v))
    if col == "elements":
        return _fmt_count(int(v))
    return str(v)


def run_experiment(name: str, figures: list, reduced: dict, description: str = "") -> int:
    ap = argparse.ArgumentParser(description=description or f"run {name} and draw its figures")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (default: local processes)")
    ap.add_argument("--workers", type=int, metavar="N", help="local worker processes (default: all CPUs)")
    ap.add_argument("--reduced", action="store_true",
                    help=f"a small version of the grid to check that it works ({', '.join(reduced)})")
    ap.add_argument("--figures-only", action="store_true", help="only redraw the figures from the results")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args()

    from simcollective.errors import SimCollectiveError
    from simcollective.sweeps import expand_grid, read_results, run_sweep

    t0 = time.perf_counter()
    with open(HERE / "configs" / f"{name}.toml", "rb") as fh:
        cfg = tomllib.load(fh)
    outdir = HERE / "results"
    if args.reduced:
        cfg = _override(cfg, reduced)
        outdir = outdir / "reduced"
    cfg, dropped = _only_registered(cfg)
    if dropped:
        print(f"{name}: not registered (yet), left out: {', '.join(dropped)}", file=sys.stderr)
    outdir.mkdir(parents=True, exist_ok=True)
    out = outdir / f"{name}.csv"
    try:
        if args.figures_only:
            df = read_results(out)
        else:
            print(f"{name}: {len(expand_grid(cfg))} points -> {out.relative_to(HERE.parent)}", file=sys.stderr)
            df = run_sweep(cfg, out, workers=args.workers, scheduler=args.scheduler, progress=not args.quiet)
        t_sweep = time.perf_counter() - t0
        written = draw_figures(df, name, figures, outdir)
    except SimCollectiveError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return 2
    total = time.perf_counter() - t0
    s = df.attrs.get("summary")
    if s:
        print(f"{name}: {s['points']} points ({s['ran']} run now: {s['ok']} ok, {s['failed']} failed; "
              f"{s['skipped']} already done) in {t_sweep:.1f} s")
    failed = int((~df["ok"].astype(bool)).sum())
    if failed:
        print(f"{name}: {failed} failed point(s) in the table; see its 'error' column")
    print(f"{name}: results {out.relative_to(HERE.parent)}; {len(written)} figure files in "
          f"{outdir.relative_to(HERE.parent)}; total {total:.1f} s")
    return 0
