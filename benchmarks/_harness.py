"""Run a benchmark scenario in a fresh subprocess and collect its figures.

Each scenario runs in its own Python process so that its peak resident memory
(``ru_maxrss``) is its own, not the largest of all scenarios run so far.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import queue as queue_module
import resource
import sys
import time

__all__ = ["measure", "peak_rss_bytes", "simpy_event_rate", "simpy_event_cpu_rate"]


def peak_rss_bytes() -> int:
    """Peak resident set size of this process in bytes."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def _child(target, args, kwargs, queue):
    try:
        t0 = time.perf_counter()
        out = target(*args, **kwargs)
        out.setdefault("wall_s", time.perf_counter() - t0)
        out["peak_rss"] = peak_rss_bytes()
        # CPU time of the whole process (imports included): on a shared machine the wall
        # time depends on the other users' load, the CPU time much less
        ru = resource.getrusage(resource.RUSAGE_SELF)
        out["cpu_s"] = ru.ru_utime + ru.ru_stime
        queue.put(json.dumps(out))
    except BaseException as exc:  # report, do not hang the parent
        queue.put(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))


def measure(target, *args, **kwargs) -> dict:
    """Run ``target(*args, **kwargs) -> dict`` in a fresh process; add ``wall_s``,
    ``cpu_s`` and ``peak_rss``."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(target, args, kwargs, queue))
    proc.start()
    while True:
        try:
            out = json.loads(queue.get(timeout=1.0))
            break
        except queue_module.Empty:
            if not proc.is_alive():   # died before reporting (killed, e.g. out of memory)
                proc.join()
                return {"error": f"the benchmark process exited with status {proc.exitcode} before "
                                 "reporting (a negative status is the signal that killed it, e.g. 9 "
                                 "when out of memory)"}
    proc.join()
    return out


def _simpy_rate(clock, n: int) -> float:
    import simpy

    env = simpy.Environment()

    def proc(env):
        for _ in range(n):
            yield env.timeout(1.0)

    env.process(proc(env))
    t0 = clock()
    env.run()
    return n / (clock() - t0)


def simpy_event_rate(n: int = 200_000) -> float:
    """Bare SimPy events per second on this machine: a process yielding timeouts."""
    return _simpy_rate(time.perf_counter, n)


def simpy_event_cpu_rate(n: int = 200_000) -> float:
    """Bare SimPy events per second of CPU time (:func:`simpy_event_rate` on
    ``time.process_time``: on a shared machine the wall time moves with the other users'
    load, the CPU time much less)."""
    return _simpy_rate(time.process_time, n)
