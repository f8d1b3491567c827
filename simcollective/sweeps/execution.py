"""Running a sweep: the points not yet in the table, on local processes or a Dask cluster,
each finished row journalled at once; the table locked while a sweep writes it.

A point whose worker is lost (killed, out of memory, Dask worker or scheduler gone) is
retried up to :data:`MAX_ATTEMPTS` times and never recorded as a result.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

from ..errors import UserInputError
from ..parsing import check_output_path, resolve_output, writing
from .config import load_config, with_engine
from .checks import validate_grid
from .grid import expand_grid, grid_size, iter_points
# module globals looked up when called (tests replace them)
from .points import failed_rows, group_points, run_group as _run_group
from .lock import TableLock
from .table import existing_rows, journal_path, journal_rows, read_results, write_results

__all__ = ["run_sweep", "MAX_ATTEMPTS", "LARGE_GRID", "REWRITE_SECONDS"]

#: said when the table cannot be written mid-run (disk full, read-only): every finished row
#: is in the table or its fsync'ed journal, and the next run resumes from them
KEPT = "the rows finished so far are kept (the table and its journal); run the same command again to resume"
#: attempts of a point whose worker (process, Dask worker or scheduler) was lost
MAX_ATTEMPTS = 3
#: grids larger than this need ``max_points`` or ``yes=True`` (``--max-points``/``--yes``)
LARGE_GRID = 10_000
#: the table is rewritten from the journal at most this often while a sweep runs (and at its end)
REWRITE_SECONDS = 30.0


#: the ``--plugin`` modules of the sweep running in this process (set by :func:`run_sweep`):
#: every worker process, local or Dask, loads them before its first point
_PLUGINS: tuple = ()


def _load_plugins(plugins) -> None:
    from ..algorithms.plugins import load_plugins

    load_plugins(plugins)


def _dask_run_group(points, base, plugins):
    """:func:`_run_group` on a Dask worker, the sweep's plugins loaded first (their files must
    be readable there at the same absolute paths, or their modules installed)."""
    _load_plugins(plugins)
    return _run_group(points, base)


def _worker_init(parent_pid: int, plugins=()) -> None:
    """Local worker processes end when the sweep process dies, even by SIGKILL: the kernel's
    parent-death signal where there is one (Linux), and a watchdog thread everywhere. The
    sweep's plugins are loaded first."""
    import threading

    _load_plugins(plugins)

    try:
        import ctypes
        import signal

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)          # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch():
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(0.5)

    threading.Thread(target=watch, name="simcollective-parent-watchdog", daemon=True).start()


def _worker_run_group(points, base):
    return _run_group(points, base)      # looked up in the worker (tests replace it)



def _execute_local(groups, base, workers, on_rows):
    """Run groups in local processes; a group whose worker died is retried (in a process of
    its own after the first loss) up to :data:`MAX_ATTEMPTS` times. Returns the groups that
    could not be finished (never recorded as results)."""
    if workers <= 1:
        for g in groups:
            on_rows(_run_group(g, base))
        return []
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    lost, pending, attempt = [], list(groups), 1
    while pending:
        retry = []
        batches = [pending] if attempt == 1 else [[g] for g in pending]     # isolate after a loss
        for batch in batches:
            pool = ProcessPoolExecutor(max_workers=min(workers, len(batch)), initializer=_worker_init,
                                       initargs=(os.getpid(), _PLUGINS))
            futures = {pool.submit(_worker_run_group, g, base): g for g in batch}
            try:
                for fut in as_completed(futures):
                    try:
                        rows = fut.result()
                    except BrokenProcessPool:         # the worker was lost (killed, out of memory)
                        retry.append(futures[fut])
                        continue
                    except Exception as exc:          # not the simulation's fault either: say what
                        rows = failed_rows(futures[fut], f"{type(exc).__name__}: {' '.join(str(exc).split())}")
                    on_rows(rows)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
        attempt += 1
        if attempt > MAX_ATTEMPTS:
            lost += retry
            break
        pending = retry
    return lost



def _execute_dask(groups, base, scheduler, on_rows):
    """Run groups on a Dask cluster; a group whose worker or scheduler was lost is resubmitted
    up to :data:`MAX_ATTEMPTS` times. Returns the groups that could not be finished."""
    import logging

    try:
        from dask.distributed import Client
    except ImportError:  # pragma: no cover - dask is a dependency
        raise UserInputError("--scheduler needs dask.distributed (pip install 'dask[distributed]')") from None
    names = ["distributed", "tornado", "asyncio",
             *(n for n in logging.root.manager.loggerDict if n.startswith(("distributed.", "tornado.")))]
    quiet = {name: logging.getLogger(name).level for name in names}
    for name in quiet:                        # no third-party tracebacks when the cluster fails
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        try:
            client = Client(scheduler, timeout="10s")
        except Exception as exc:
            raise UserInputError(f"cannot connect to the Dask scheduler at {scheduler!r}: "
                                 f"{' '.join(str(exc).split())}") from None
        try:
            return _dask_rounds(client, groups, base, on_rows)
        finally:
            try:
                client.close(timeout=5)
            except Exception:
                pass
    finally:
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)


def _dask_rounds(client, groups, base, on_rows) -> list:
    """Submit every group, resubmit those whose worker was lost; the groups lost for good."""
    from dask.distributed import as_completed

    attempts, lost = {}, []

    def submit(g):
        n = attempts.get(g[0]["key"], 0) + 1
        attempts[g[0]["key"]] = n
        if _PLUGINS:
            return client.submit(_dask_run_group, g, base, _PLUGINS, pure=False,
                                 key=f"simcollective-point-{g[0]['key']}-{n}")
        return client.submit(_run_group, g, base, pure=False, key=f"simcollective-point-{g[0]['key']}-{n}")

    futures = {}
    for g in groups:
        futures[submit(g)] = g
    ac = as_completed(list(futures))
    try:
        for fut in ac:
            g = futures.pop(fut)
            try:
                rows = fut.result()
            except Exception:             # lost worker (KilledWorker) or scheduler
                if attempts[g[0]["key"]] < MAX_ATTEMPTS and client.status == "running":
                    try:
                        nf = submit(g)
                    except Exception:
                        lost.append(g)
                        continue
                    futures[nf] = g
                    ac.add(nf)
                else:
                    lost.append(g)
                continue
            on_rows(rows)
    except BaseException:
        try:
            client.cancel(list(futures))
        except Exception:
            pass
        raise
    return lost + list(futures.values())


def run_sweep(config, out, workers: int | None = None, scheduler: str | None = None, progress: bool = True,
              max_points: int | None = None, retry_failed: bool = False, yes: bool = False, plugins=(),
              engine: str | None = None):
    """Run every point of ``config`` not yet in ``out``; return the whole table.

    ``config``: a TOML path or a parsed dict. ``out``: ``.csv`` or ``.parquet`` path, locked
    while the sweep runs; each finished point is appended to a journal next to it
    (``.NAME.journal``) and the table is rewritten atomically at most every
    :data:`REWRITE_SECONDS` and at the end (a killed sweep's journal is merged by the next).
    ``workers``: local processes (default ``os.cpu_count()``; 1 runs in this process);
    ``scheduler``: the address of a Dask distributed scheduler to run on instead.
    ``max_points``: stop after that many new points (the rest on the next run).
    ``retry_failed``: run again points whose row failed. Grids above :data:`LARGE_GRID` points
    need ``max_points`` or ``yes=True``. ``plugins``: modules or ``.py`` files registering
    algorithms (:mod:`simcollective.algorithms.plugins`), loaded here and by every worker.
    ``engine``: the engine (``auto``, ``compiled``, ``simpy``) of every point whose
    configuration does not set ``engine`` (``sweep --engine``).

    Points whose worker was lost are retried and never recorded; those that still cannot be
    finished are counted in ``attrs["summary"]["lost"]``. The returned DataFrame's
    ``attrs["summary"]`` holds ``points, skipped, ran, ok, failed, lost, left, seconds``.
    """
    global _PLUGINS
    from ..algorithms.plugins import load_plugins, plugin_path

    t0 = time.perf_counter()
    load_plugins(plugins)
    _PLUGINS = tuple(plugin_path(p) for p in plugins)
    cfg = with_engine(load_config(config), engine)
    if out is None:
        raise UserInputError("no output file given")
    out = str(out)
    if not (out.endswith(".csv") or out.endswith(".parquet")):
        raise UserInputError(f"--out {out!r} must end in .csv or .parquet")
    check_output_path(out, "--out")
    shown, out = out, resolve_output(out)      # a symlink's target is the table (and is locked)
    if os.path.exists(out) and not os.path.isfile(out):     # /dev/full, a FIFO: no table to resume
        raise UserInputError(f"--out {shown!r} is not a regular file ({out}); give a file name")
    size = grid_size(cfg)
    if size > LARGE_GRID and max_points is None and not yes:
        raise UserInputError(f"the sweep has {size} points (more than {LARGE_GRID}); give --max-points N to run N of "
                             "them now, or --yes to run them all")
    validate_grid(cfg)
    # a large grid is never expanded: its points are taken lazily, up to --max-points
    points = expand_grid(cfg) if size <= LARGE_GRID else _LazyPoints(cfg, size)
    with writing(shown, "--out", KEPT), TableLock(out, shown):
        return _run_locked(cfg, points, out, workers, scheduler, progress, max_points, retry_failed, t0)


class _LazyPoints:
    """The points of a grid of more than :data:`LARGE_GRID` points, counted by multiplication
    (``len``, duplicates included) and iterated lazily (:func:`~.grid.iter_points`)."""

    def __init__(self, cfg, size: int):
        self.cfg, self.size = cfg, size

    def __len__(self) -> int:
        return self.size

    def __iter__(self):
        return iter_points(self.cfg)


def _todo(points, done: set, max_points):
    """The points not done, the first ``max_points`` of them; and how many were skipped as done
    (of the points looked at: all of them for a list, up to the last one taken for a lazy grid)."""
    if isinstance(points, list):
        todo = [p for p in points if p["key"] not in done]
        skipped = len(points) - len(todo)
        return (todo if max_points is None else todo[:max(0, int(max_points))]), skipped
    todo, skipped = [], 0
    for p in points:
        if max_points is not None and len(todo) >= max_points:
            break
        if p["key"] in done:
            skipped += 1
        else:
            todo.append(p)
    return todo, skipped


class _Recorder:
    """The rows of the table being written: finished rows go to the journal at once (fsync'ed)
    and the table is rewritten from all of them at most every :data:`REWRITE_SECONDS`."""

    def __init__(self, out, rows_by_key: OrderedDict, order: dict, bar):
        self.out, self.rows_by_key, self.order, self.bar = out, rows_by_key, order, bar
        self.journal = journal_path(out)
        self.stats = {"ok": 0, "failed": 0, "lost": 0, "written": time.monotonic()}
        self.jfh = None

    def rewrite(self) -> None:
        rows = sorted(self.rows_by_key.values(), key=lambda r: self.order.get(r["key"], len(self.order)))
        write_results(rows, self.out)
        try:
            self.journal.unlink()
        except FileNotFoundError:
            pass
        self.stats["written"] = time.monotonic()

    def on_rows(self, rows) -> None:
        if self.jfh is None:
            self.jfh = open(self.journal, "ab")
        for row in rows:
            self.rows_by_key[row["key"]] = row
            self.stats["ok" if row.get("ok") else "failed"] += 1
            self.jfh.write(json.dumps(row, default=_json_value, allow_nan=True).encode() + b"\n")
        self.jfh.flush()
        os.fsync(self.jfh.fileno())
        if time.monotonic() - self.stats["written"] > REWRITE_SECONDS:
            self.jfh.close()
            self.jfh = None
            self.rewrite()
        if self.bar is not None:
            self.bar.update(len(rows))
            self.bar.set_postfix(failed=self.stats["failed"])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.jfh is not None:
            self.jfh.close()
        if self.journal.exists() or not os.path.exists(self.out):
            self.rewrite()


def _rows_so_far(out) -> OrderedDict:
    """The rows of the table and of a killed sweep's journal, by key (stale temporaries removed)."""
    for stale in Path(out).parent.glob(f".{Path(out).name}.tmp*"):   # left by a killed sweep
        try:
            stale.unlink()
        except OSError:
            pass
    rows_by_key = OrderedDict((r["key"], r) for r in existing_rows(out))
    for r in journal_rows(out):
        rows_by_key[r["key"]] = r
    return rows_by_key


def _run_locked(cfg, points, out, workers, scheduler, progress, max_points, retry_failed, t0):
    rows_by_key = _rows_so_far(out)
    done = {k for k, r in rows_by_key.items() if not retry_failed or bool(r.get("ok"))}
    todo, skipped = _todo(points, done, max_points)
    bar = None
    if todo and progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), desc=f"sweep {cfg['name']}", unit="pt", file=sys.stderr,
                   dynamic_ncols=True)
        bar.set_postfix(failed=0)
    # the table in grid order (a lazy grid: in the order the rows came)
    order = {p["key"]: i for i, p in enumerate(points)} if isinstance(points, list) else {}
    rec = _Recorder(out, rows_by_key, order, bar)
    if rec.journal.exists():                # a killed sweep's rows: into the table first
        rec.rewrite()
    stats = rec.stats
    try:
        lost = []
        if todo:
            groups = group_points(todo, cfg["base"])
            if scheduler:
                lost = _execute_dask(groups, cfg["base"], scheduler, rec.on_rows)
            else:
                n = workers if workers is not None else (os.cpu_count() or 1)
                if n < 1:
                    raise UserInputError(f"--workers {n} must be >= 1")
                lost = _execute_local(groups, cfg["base"], n, rec.on_rows)
        stats["lost"] = sum(len(g) for g in lost)
    finally:
        rec.close()
    df = read_results(out)
    df.attrs["summary"] = {"name": cfg["name"], "points": len(points), "skipped": skipped,
                           "ran": stats["ok"] + stats["failed"], "ok": stats["ok"], "failed": stats["failed"],
                           "lost": stats["lost"],
                           "left": len(points) - skipped - stats["ok"] - stats["failed"],
                           "seconds": time.perf_counter() - t0}
    return df


def _json_value(o):
    if hasattr(o, "item"):
        return o.item()
    return str(o)
