"""The Python API: the command line's names, from Python and notebooks.

>>> import simcollective as sc
>>> r = sc.run(topology="abci", nodes=2, algorithm="ring", elements="64K")
>>> r                                                       # doctest: +ELLIPSIS
<Result ring allreduce on abci (2 nodes): 8 ranks, 65536 x float32, 165.259 us, busbw 2.776 GB/s, verified>
>>> r.to_dict()["ranks"], list(r.phases.columns), "utilization" in r.links.columns
(8, ['phase', 'time_s', 'share'], True)

* :func:`run` takes every field of :class:`~simcollective.simulate.RunConfig` by its name
  (every one, e.g. ``collective`` or ``root``, passes through unchanged), plus the
  algorithm options (``group_size``, ``chunk_size``, ...) as plain keywords, with text
  accepted where the CLI takes text: ``elements="32M"``, ``density="1/128"``.
* :func:`job` runs a job (several collectives on sub-communicators at once): a TOML path,
  a dict, or the same keys as keywords (``job(topology="dgx-h100", nodes=2,
  communicators={...}, steps=[...])``); it returns a :class:`~simcollective.jobs.JobReport`.
* :func:`sweep` runs a grid (a TOML path, a config dict, or keywords: lists are the grid,
  scalars are fixed) and returns the results table as a pandas DataFrame.
* :func:`plot` draws results (a DataFrame or paths) and returns the matplotlib Figure; it
  takes ``ax=`` to draw into an existing Axes. :func:`draw_topology` draws a machine.

Nothing here changes the matplotlib backend.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from .errors import UserInputError
from .parsing import check_exclusive
from .simulate import Report, RunConfig, run_allreduce

__all__ = ["run", "sweep", "plot", "draw_topology", "load_results", "Result", "job", "load_plugins"]


class Result(Report):
    """The result of :func:`run`: ``r["time_s"]``, ``r.to_dict()``, ``r.phases``, ``r.links``."""

    def __repr__(self) -> str:
        from .parsing import format_rate, format_time

        f = self.fields
        where = f["topology"] + (f" ({f['nodes']} node{'s' if f['nodes'] != 1 else ''})" if f.get("nodes") else "")
        bw = "effective busbw" if f.get("kind") == "sparse" else "busbw"
        return (f"<Result {f['algorithm']} {f.get('collective', 'allreduce')} on {where}: {f['ranks']} ranks, {f['elements']} x {f['dtype']}, "
                f"{format_time(f['time_s'])}, {bw} {format_rate(f['busbw'])}, verified>")

    def __str__(self) -> str:
        from .summary import format_report

        return format_report(self)

    def to_dict(self) -> dict:
        """The run's fields as strict JSON data (the keys of ``simcollective run --json``)."""
        return self.to_json()

    def write_trace(self, path) -> None:
        """Write the Chrome/Perfetto trace of a run made with ``trace=True``."""
        from .parsing import check_output_path
        from .trace import write_trace

        check_output_path(path, "trace")
        write_trace(self, path)

    @property
    def phases(self):
        """Time per phase of the last rank to finish: columns ``phase, time_s, share``."""
        import pandas as pd

        t = self.fields["time_s"] or 1.0
        rows = [{"phase": k, "time_s": v, "share": v / t} for k, v in self.fields["phases"].items()]
        return pd.DataFrame(rows, columns=["phase", "time_s", "share"])

    @property
    def links(self):
        """Every link that carried data: ``link, link_type, bytes, busy_s, utilization``, busiest first."""
        import pandas as pd

        df = pd.DataFrame(self.fields["links"], columns=["link", "link_type", "bytes", "busy_s", "utilization"])
        return df.sort_values(["utilization", "link"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _config_fields() -> list:
    return [f.name for f in dataclasses.fields(RunConfig)]


def run(**kwargs) -> Result:
    """Simulate one collective; keywords are ``simcollective run``'s options with ``_`` for ``-``.

    ``run(topology="dgx1", nodes=2, algorithm="ring-ring", elements="32M", profile="smpi")``.
    An unknown keyword is an error that lists the allowed ones. Where numba compiles its
    kernels (their first use after installing or upgrading: up to about a minute), this prints
    nothing (the command line prints a notice): ``r["compile_s"]`` is the part of ``r["wall_s"]``
    it took, and ``print(r)`` says it on its engine line.
    """
    from .algorithms.registry import OPTION_FLAGS

    fields = _config_fields()
    config_kw, options = {}, dict(kwargs.pop("options", None) or {})
    for key, value in kwargs.items():
        name = key.replace("-", "_")
        if name in fields:
            config_kw[name] = value
        elif name in OPTION_FLAGS:
            if value is not None:
                options[name] = value
        else:
            allowed = ", ".join([*fields, *OPTION_FLAGS])
            raise UserInputError(f"run(): unknown keyword {key!r}; allowed: {allowed}")
    if "algorithm" not in config_kw:
        raise UserInputError("run(): give algorithm= (see `simcollective algorithms`)")
    check_exclusive(config_kw.get("density"), config_kw.get("k"), ("density", "k"), "run(): ")
    config = RunConfig(**config_kw, options=options)
    report = run_allreduce(config)
    return Result(report.fields, report.result)


def sweep(config=None, out=None, *, workers: int | None = 1, scheduler: str | None = None, progress: bool = False,
          max_points: int | None = None, retry_failed: bool = False, plugins=(), **grid):
    """Run a sweep and return its results table (a pandas DataFrame).

    ``config``: a TOML path or a dict (``{"fixed": {...}, "grid": {...}}``); or leave it out
    and give the inputs as keywords: list values form the grid, scalars are fixed
    (``sweep(algorithm=["ring", "ring-ring"], elements="1M", nodes=[1, 2])``). ``out``: a
    ``.csv``/``.parquet`` path to keep (and resume) the table; by default a temporary file.
    ``workers``: local processes (default 1: in this process). ``plugins``: modules or ``.py``
    files registering algorithms (as :func:`load_plugins`), loaded here and by every worker.
    """
    from .sweeps import run_sweep

    if config is None:
        if not grid:
            raise UserInputError("sweep(): give a config (TOML path or dict) or the inputs as keywords")
        config = {"fixed": {k: v for k, v in grid.items() if not isinstance(v, (list, tuple))},
                  "grid": {k: list(v) for k, v in grid.items() if isinstance(v, (list, tuple))}}
    elif grid:
        raise UserInputError(f"sweep(): give either a config or keywords, not both ({', '.join(grid)})")
    if out is None:
        out = Path(tempfile.mkdtemp(prefix="simcollective-sweep-")) / "results.csv"
    return run_sweep(config, out, workers=workers, scheduler=scheduler, progress=progress,
                     max_points=max_points, retry_failed=retry_failed, plugins=tuple(plugins))


def load_plugins(*specs) -> list:
    """Import plugin modules (``"mypkg.algos"``) or ``.py`` files that register algorithms
    with ``@simcollective.algorithms.register``, as ``--plugin`` does; return the
    ``(collective, name)`` keys they registered. An import error is a
    :class:`~simcollective.errors.UserInputError` naming the plugin."""
    from .algorithms.plugins import load_plugins as load

    return load(specs)


def plot(data, x, y="time_s", *, ax=None, out=None, **kwargs):
    """Draw results (a DataFrame from :func:`sweep` or results paths); return the Figure.

    Keywords as ``simcollective plot``: ``hue, facet, logx, logy, speedup_over, breakdown,
    where, title, sharey``; ``ax=`` draws into that Axes; ``out=`` also saves the file;
    ``colors={hue value: colour}`` keeps one colour per value across figures.
    """
    from .figures import plot_results

    return plot_results(data, x=x, y=y, ax=ax, out=out, **kwargs)


def draw_topology(topology: str = "abci", nodes: int | str = 1, *, topology_opts=None, topology_file=None,
                  utilization=None, out=None, title=None, labels=None):
    """Draw a machine (a preset and node count, or a topology file); return the Figure.

    ``utilization``: a :class:`Result`, its ``to_dict()``, or a ``run --json`` path.
    """
    from .drawings import draw_topology as _draw
    from .simulate import build_graph

    config = RunConfig(topology=topology, nodes=nodes, topology_opts=topology_opts or {},
                       topology_file=topology_file)
    graph = build_graph(config)
    if isinstance(utilization, Report):
        utilization = utilization.to_json()
    return _draw(graph, out, utilization=utilization, title=title, labels=labels)


def load_results(*paths):
    """Results tables (CSV/Parquet written by ``simcollective sweep``) as one DataFrame."""
    from .figures import load_results as _load

    return _load(list(paths))


def job(spec=None, *, alone: bool = True, **table):
    """Run a job and return its :class:`~simcollective.jobs.JobReport` (``str()`` is what
    ``simcollective job`` prints, ``to_json()`` its ``--json``).

    ``spec``: a TOML path or a dict with the job's keys (see :mod:`simcollective.jobs.spec`);
    or leave it out and give the keys as keywords. ``alone=False`` skips the alone runs.
    """
    from .jobs import job_from_dict, load_job, run_job

    if spec is None:
        if not table:
            raise UserInputError("job(): give a job (TOML path or dict) or its keys as keywords")
        spec = job_from_dict(table, "job()")
    elif table:
        raise UserInputError(f"job(): give either a job or keywords, not both ({', '.join(table)})")
    elif isinstance(spec, dict):
        spec = job_from_dict(spec, "job()")
    else:
        spec = load_job(spec)
    return run_job(spec, alone=alone)
