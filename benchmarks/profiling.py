"""The measured profile of a benchmark point: where a missed target's time goes.

:func:`profile_point` runs one point (a :func:`benchmarks.allreduce.run_point` point, or
scenario E's :func:`benchmarks.engine.ring_messages`) under :mod:`cProfile` in the process
it is called in (the caller runs it in a fresh process, :func:`benchmarks._harness.measure`,
after the scenarios, so that profiling never counts in their timings) and returns a
JSON-able summary:

* ``phases``: wall seconds (under the profiler) of each phase of the run, in order:
  ``resolve`` (topology, placement, plan), ``inputs`` (the input generator; ranks draw
  their data lazily, inside the simulation), ``simulation`` (:func:`~simcollective.runtime.run_ranks`),
  ``verification`` and ``report``; scenario E has only ``setup`` and ``simulation``;
* ``layers``: cProfile's own time (``tottime``) grouped by layer (:func:`group_layers`),
  over the whole run, and ``sim_layers`` over the simulation phase alone (the difference
  of two snapshots of the profiler's statistics, taken with it paused);
* ``top``: the 8 functions with the largest own time in the simulation phase;
* ``calls`` (function calls seen by the profiler), ``sim_calls`` (those of the simulation
  phase) and ``messages``: calls per message are the simulation's calls per message, so
  that imports and setup do not count in them.

A compiled (numba) kernel called from Python appears in cProfile under its Python name
(numba reports its calls to an active profiler; what a kernel calls inside compiled code
does not appear): :func:`compiled_names` finds these in the profiled process, and their
own time is the ``compiled kernels`` layer, with numba's and llvmlite's Python-level
dispatch (type resolution, cache loading, compilation).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time

__all__ = ["LAYERS", "compiled_names", "layer_of", "group_layers", "top_functions", "profile_point", "format_profile"]

#: layers in the order printed; "imports/other" takes whatever matches no other
LAYERS = ("network engine", "compiled kernels", "runtime", "data", "algorithms", "SimPy",
          "NumPy", "imports/other")

# (substring of the normalised file name, layer), first match wins
_FILE_LAYERS = (
    ("/numba/", "compiled kernels"),
    ("/llvmlite/", "compiled kernels"),
    ("simcollective/network/", "network engine"),
    ("simcollective/runtime", "runtime"),
    ("simcollective/data/", "data"),
    ("simcollective/algorithms/", "algorithms"),
    ("/simpy/", "SimPy"),
    ("/numpy/", "NumPy"),
)


def layer_of(filename: str, funcname: str = "") -> str | None:
    """The layer of a cProfile entry from its file name (``~`` for built-ins, whose
    layer is ``None`` unless its name says NumPy or numba: the caller's layer decides)."""
    f = filename.replace(os.sep, "/")
    if f == "~":
        if "numpy" in funcname:
            return "NumPy"
        if "numba" in funcname:
            return "compiled kernels"
        return None
    for part, layer in _FILE_LAYERS:
        if part in f:
            return layer
    return "imports/other"


def compiled_names() -> set:
    """``(file name, function name)`` of every numba-compiled function in this process."""
    import gc
    import sys

    if "numba" not in sys.modules:
        return set()
    from numba.core.dispatcher import Dispatcher

    def dispatcher(o) -> bool:
        try:
            return isinstance(o, Dispatcher)
        except ReferenceError:   # a weak proxy whose object is gone
            return False

    return {(o.py_func.__code__.co_filename, o.py_func.__code__.co_name)
            for o in gc.get_objects() if dispatcher(o)}


def group_layers(stats: dict, compiled: set = frozenset()) -> dict:
    """Own time (seconds) per layer of a ``pstats.Stats(...).stats`` mapping
    ``{(file, line, func): (cc, nc, tt, ct, callers)}``. A built-in (file ``~``) that is
    not NumPy's or numba's goes to the layer of its caller with the largest cumulative
    time through it (``heapq.heappush`` called by SimPy is SimPy's), or to
    ``imports/other`` if it has none. An entry whose ``(file, function)`` is in
    ``compiled`` (:func:`compiled_names`) is a compiled kernel's."""
    out = dict.fromkeys(LAYERS, 0.0)
    for (file, _line, func), (_cc, _nc, tt, _ct, callers) in stats.items():
        layer = "compiled kernels" if (file, func) in compiled else layer_of(file, func)
        if layer is None:
            layer = "imports/other"
            if callers:
                (cfile, _cl, cfunc), _ = max(callers.items(), key=lambda kv: (kv[1][3], kv[0]))
                layer = layer_of(cfile, cfunc) or "imports/other"
        out[layer] += tt
    return out


def _short(key) -> str:
    file, line, func = key
    if file == "~":
        return func
    f = file.replace(os.sep, "/")
    for root in ("simcollective/", "site-packages/"):
        if root in f:
            f = f[f.rindex(root) + (len(root) if root == "site-packages/" else 0):]
            break
    else:
        f = f.rsplit("/", 1)[-1]
    return f"{f}:{line}({func})"


def top_functions(stats: dict, n: int = 8) -> list:
    """The ``n`` entries with the largest own time: ``[name, tottime, calls]``."""
    items = sorted(stats.items(), key=lambda kv: (-kv[1][2], _short(kv[0])))[:n]
    return [[_short(k), v[2], v[1]] for k, v in items]


class _Laps:
    """Phase timer: ``lap(name)`` ends phase ``name`` (wall seconds since the previous
    lap) and records the function calls the profiler saw in it (the count is taken with
    the profiler paused, outside the timed span)."""

    def __init__(self, prof):
        self.prof, self.phases, self.calls, self.seen = prof, {}, {}, 0
        self.before_sim = self.sim = None   # pstats mappings at the simulation's start and end
        self.t = time.perf_counter()

    def __call__(self, name: str) -> None:
        self.phases[name] = time.perf_counter() - self.t
        self.prof.disable()
        seen = sum(e.callcount for e in self.prof.getstats())
        self.calls[name], self.seen = seen - self.seen, seen
        if name == "simulation":
            self.sim = pstats.Stats(self.prof).stats
        elif self.sim is None:
            self.before_sim = pstats.Stats(self.prof).stats
        self.prof.enable()
        self.t = time.perf_counter()

    def simulation_stats(self) -> dict:
        """The simulation phase's own entries: the difference of the two snapshots
        (callers as at the simulation's end)."""
        before = self.before_sim or {}
        out = {}
        for key, (cc, nc, tt, ct, callers) in (self.sim or {}).items():
            b = before.get(key, (0, 0, 0.0, 0.0, {}))
            if nc - b[1] > 0 or tt - b[2] > 0:
                out[key] = (cc - b[0], nc - b[1], tt - b[2], ct - b[3], callers)
        return out


def _run_point_phases(lap, **kw) -> int:
    from simcollective.simulate import RunConfig, make_inputs, measure, resolve, simulate, verify

    cfg = RunConfig(topology=kw["topology"], nodes=kw["nodes"], algorithm=kw["algorithm"], elements=kw["elements"],
                    dtype=kw.get("dtype", "int32"), density=kw.get("density"), gpus=kw.get("gpus"),
                    topology_opts=dict(kw.get("topology_opts") or {}), options=dict(kw.get("options") or {}))
    t_start = time.perf_counter()
    plan = resolve(cfg)
    lap("resolve")
    inputs = make_inputs(plan)
    lap("inputs")
    result = simulate(plan, inputs)
    lap("simulation")
    how = verify(plan, result)
    lap("verification")
    measure(plan, result, how, t_start)
    lap("report")
    return result.messages


def profile_point(kind: str, kwargs: dict) -> dict:
    """Run a point under cProfile here; ``kind`` is ``"run"`` (a :func:`run_point` point)
    or ``"E"`` (``ring_messages(P)``). Returns the summary described in the module docstring."""
    from .engine import ring_messages

    prof = cProfile.Profile()
    lap = _Laps(prof)
    prof.enable()
    try:
        if kind == "E":
            messages = ring_messages(kwargs["P"], warm=False, lap=lap)["messages"]
        else:
            messages = _run_point_phases(lap, **kwargs)
    finally:
        prof.disable()
    stats = pstats.Stats(prof).stats
    compiled = compiled_names()
    sim = lap.simulation_stats()
    return {
        "phases": lap.phases,
        "layers": group_layers(stats, compiled),
        "sim_layers": group_layers(sim, compiled),
        "top": top_functions(sim),
        "calls": sum(v[1] for v in stats.values()),
        "sim_calls": lap.calls.get("simulation", 0),
        "messages": messages,
    }


def format_profile(p: dict, indent: str = "    ") -> list:
    """The summary as ~12 printable lines."""
    lines = [indent + "phases (wall under cProfile): "
             + ", ".join(f"{k} {v:.2f} s" for k, v in p["phases"].items())]
    for what, layers in (("whole run", p["layers"]), ("simulation", p["sim_layers"])):
        total = sum(layers.values()) or 1.0
        shares = sorted(((k, v) for k, v in layers.items() if v > 0), key=lambda kv: -kv[1])
        lines.append(indent + f"own time by layer, {what} ({total:.2f} s): "
                     + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in shares))
    total = sum(p["sim_layers"].values()) or 1.0
    per_msg = p["sim_calls"] / p["messages"] if p["messages"] else float("nan")
    lines.append(indent + f"function calls: {p['calls']:,} in all, {p['sim_calls']:,} in the simulation for "
                 f"{p['messages']:,} messages: {per_msg:.1f} calls per message; top own time in the simulation:")
    for name, tt, calls in p["top"]:
        lines.append(indent + f"  {100 * tt / total:5.1f}%  {tt * 1e3:8.1f} ms  {calls:>10,} calls  {name}")
    return lines
