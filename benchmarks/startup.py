"""Start-up: the CPU time a ``simcollective run`` command takes to reach its first event.

Each point runs the command line itself (``simcollective.cli.main``) in a fresh Python
interpreter (:func:`cli_point`), as a user's command does: the interpreter's own start,
the imports, parsing the options, building the topology, the routes, the algorithm's plan
(NCCL's search for ``--algorithm nccl``) and the inputs all count. The child records
``time.process_time()`` (CPU of the process since it started) when SimPy's kernel is
first entered (``Environment.run``, the first event), lets the run finish, and reports
both with the simulated time (read from ``--json``), which is compared with the baseline
like every other point's. The command runs ``repeats`` times; the figures are the
smallest (CPU time moves less than wall time on a shared machine, and the minimum is the
run least disturbed by the other users).

:func:`import_profile` is the profile of a missed start-up target: the command under
``python -X importtime`` with every module's own import time added up by package.
:func:`first_compile` (``python -m benchmarks.startup --compile``) is the cost of numba's
first compile on a fresh clone: every kernel compiled into an empty cache, then loaded
from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["STARTUP_COMMANDS", "README_COMMAND", "CHILD", "cli_point", "compile_bytecode", "import_profile",
           "format_import_profile", "main", "COMPILE_CHILD", "first_compile"]

#: the 16-rank commands whose CPU time to the first event is a target
STARTUP_COMMANDS = {
    "dgx-h100 2 nodes nccl 1M nccl profile": "run --topology dgx-h100 --nodes 2 --algorithm nccl --bytes 1M --profile nccl",
    "abci 4 nodes ring 1M": "run --topology abci --nodes 4 --algorithm ring --elements 1M",
}
#: the README's first command (its wall time is a target)
README_COMMAND = "run --topology abci --nodes 2 --algorithm ring --elements 32M --dtype int32 --profile cm02"

# Run in the fresh interpreter: mark the CPU time at the first entry into SimPy's kernel,
# run the command, report. Only simpy.core is imported before the command (the command
# imports it anyway), so the imports counted are the command's own.
CHILD = r"""
import json, sys, time
t_start = time.process_time()
import simpy.core
_run = simpy.core.Environment.run
marks = {}
def run(self, until=None):
    marks.setdefault("first_event_cpu_s", time.process_time())
    return _run(self, until)
simpy.core.Environment.run = run
from simcollective.cli import main
marks["cli_import_cpu_s"] = time.process_time()
status = main(sys.argv[2:])
marks["total_cpu_s"] = time.process_time()
marks["interpreter_cpu_s"] = t_start
marks["status"] = status
import os
# the project's modules without a bytecode cache (compiled again by every command)
marks["uncached_modules"] = sum(1 for name, m in list(sys.modules.items())
                                if name.split(".")[0] in ("simcollective", "topologies")
                                and getattr(m, "__cached__", None) and not os.path.exists(m.__cached__))
with open(sys.argv[1], "w") as f:
    json.dump(marks, f)
sys.exit(status)
"""


def _once(argv: list, env=None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        marks, report = os.path.join(tmp, "marks.json"), os.path.join(tmp, "report.json")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, marks, *argv, "--quiet", "--json", report],
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if proc.returncode != 0 or not os.path.exists(marks) or not os.path.exists(report):
            raise RuntimeError(f"`simcollective {' '.join(argv)}` exited with status {proc.returncode}: "
                               f"{(proc.stderr.strip().splitlines() or [''])[-1]}")
        with open(marks) as f:
            out = json.load(f)
        with open(report) as f:
            rep = json.load(f)
    out.update(process_wall_s=wall, time_s=rep["time_s"], ranks=rep["ranks"], sim_wall_s=rep["sim_wall_s"])
    return out


def compile_bytecode() -> None:
    """Write the bytecode caches of simcollective's and topologies' modules, as installing the
    package or a first command does (with ``PYTHONDONTWRITEBYTECODE`` set an editable install
    never writes them, and every command compiles its modules again: 0.05-0.1 s more than a
    user's command costs)."""
    import compileall

    import simcollective
    import topologies

    for pkg in (simcollective, topologies):
        compileall.compile_dir(os.path.dirname(pkg.__file__), quiet=2)


def cli_point(command: str, repeats: int = 5) -> dict:
    """Run ``simcollective <command>`` ``repeats`` times, each in a fresh interpreter; the
    smallest of each figure (``first_event_cpu_s``, ``cli_import_cpu_s``,
    ``interpreter_cpu_s``, ``total_cpu_s``, ``process_wall_s``), the simulated time
    (``time_s``, which must be the same in every repeat), ``ranks`` and
    ``uncached_modules``: simcollective's and topologies' modules that had no bytecode
    cache (0: :func:`compile_bytecode` writes them first, as an installation does)."""
    compile_bytecode()
    runs = [_once(command.split()) for _ in range(repeats)]
    times = {r["time_s"] for r in runs}
    if len(times) != 1:
        raise RuntimeError(f"simulated times differ between repeats of the same command: {sorted(times)}")
    keys = ("first_event_cpu_s", "cli_import_cpu_s", "interpreter_cpu_s", "total_cpu_s", "process_wall_s")
    out = {k: min(r[k] for r in runs) for k in keys}
    out.update(time_s=runs[0]["time_s"], ranks=runs[0]["ranks"], repeats=repeats, command=command,
               uncached_modules=max(r["uncached_modules"] for r in runs),
               wall_s=out["process_wall_s"], startup=True)
    return out


def _package(name: str) -> str:
    top = name.split(".")[0]
    if top in ("simcollective", "topologies", "numpy", "networkx", "simpy", "numba", "llvmlite", "pandas",
               "matplotlib", "dask", "scipy", "tomllib"):
        return top
    if top in ("importlib", "email", "zipfile", "csv", "calendar", "datetime", "socket", "urllib"):
        return "importlib.metadata and what it loads"
    return "standard library, other"


def import_profile(command: str) -> dict:
    """``simcollective <command>`` under ``python -X importtime``: seconds of import time
    (each module's own, so nothing counts twice) by package, largest first; measured
    under importtime's own overhead, so the figures add up to more than the plain run."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD, os.path.join(tmp, "m.json"),
                               *command.split(), "--quiet", "--json", os.path.join(tmp, "r.json")],
                              capture_output=True, text=True)
    by: dict = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line[len("import time:"):].split("|")
        key = _package(name.strip())
        by[key] = by.get(key, 0.0) + int(own) * 1e-6
    return dict(sorted(by.items(), key=lambda kv: -kv[1]))


def format_import_profile(prof: dict) -> list:
    total = sum(prof.values())
    lines = [f"    import time by package (own time of each module, under -X importtime): {total:.3f} s"]
    lines += [f"      {k:<40} {v:6.3f} s  {v / total:5.1%}" for k, v in prof.items()]
    return lines


def _verdict(value: float, limit: float) -> str:
    return f"target < {limit:g} s: {'met' if value < limit else 'NOT MET'}"


def main(repeats: int = 5) -> None:
    """Print each command's figures (min of ``repeats`` fresh interpreters) against the
    targets (:data:`.targets.STARTUP_CPU`, :data:`.targets.README_WALL`), with the import
    time by package of the commands that miss theirs."""
    from .targets import README_WALL, STARTUP_CPU

    for label, cmd in {**STARTUP_COMMANDS, "README first command": README_COMMAND}.items():
        r = cli_point(cmd, repeats=repeats)
        readme = cmd == README_COMMAND
        print(f"{label:<40} cpu to first event {r['first_event_cpu_s']:.3f} s (interpreter "
              f"{r['interpreter_cpu_s']:.3f}, `import simcollective.cli` done at {r['cli_import_cpu_s']:.3f}), "
              f"total cpu {r['total_cpu_s']:.2f} s, wall {r['process_wall_s']:.2f} s, sim {r['time_s']:.9g} s; "
              + (_verdict(r["process_wall_s"], README_WALL) + " (wall)" if readme
                 else _verdict(r["first_event_cpu_s"], STARTUP_CPU) + " (cpu to first event)")
              + f"; min of {repeats}, {r['uncached_modules']} modules without a bytecode cache")
        if not readme and r["first_event_cpu_s"] >= STARTUP_CPU:
            for line in format_import_profile(import_profile(cmd)):
                print(line)


#: what :func:`first_compile` runs: every kernel of the array store, the filling and the
#: sparse union (``benchmarks.jit.compile_all``), then the compiled execution loop (a
#: 16-rank ring with ``--engine compiled``)
COMPILE_CHILD = r"""
import json, sys, time
from benchmarks.jit import compile_all
compile_all()
t_kernels = time.process_time()
from simcollective.cli import main
main(["run", "--topology", "abci", "--nodes", "4", "--algorithm", "ring", "--elements", "64K",
      "--engine", "compiled", "--quiet"])
print(json.dumps({"kernels_cpu_s": t_kernels, "total_cpu_s": time.process_time()}))
"""


def first_compile() -> dict:
    """CPU seconds of a fresh process that runs every numba kernel (:data:`COMPILE_CHILD`),
    with an empty kernel cache (``first``: everything compiles) and again with the cache it
    wrote (``cached``); each with the CPU time when the kernels other than the compiled
    execution loop were done (``kernels_cpu_s``)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for key in ("first", "cached"):
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", COMPILE_CHILD], capture_output=True, text=True,
                                  env=env, cwd=root)
            if proc.returncode != 0:
                raise RuntimeError(f"the kernels' run failed: {(proc.stderr.strip().splitlines() or [''])[-1]}")
            out[key] = dict(json.loads(proc.stdout.strip().splitlines()[-1]), wall_s=time.perf_counter() - t0)
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        for key, r in first_compile().items():
            print(f"numba kernels, {key + (' (empty cache)' if key == 'first' else ''):<22} cpu {r['total_cpu_s']:.2f} s "
                  f"(array store, filling, sparse union done at {r['kernels_cpu_s']:.2f} s; then the compiled "
                  f"loop), wall {r['wall_s']:.2f} s")
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
