"""The compiled execution path: record every rank's program, replay it compiled.

:func:`run_compiled` is :func:`~simcollective.runtime.run.run_ranks` for programs whose
communication does not depend on time: the per-rank programs run once against a
recording communicator (:mod:`.record`), and the compiled event loop
(:mod:`simcollective.network.replay`) gives every operation its simulated time, the same
to the last bit as the SimPy path. It raises :class:`~.record.NotCompilable` (saying why)
for what it cannot run; callers then take the SimPy path.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from contextlib import contextmanager

import numpy as np

from ..network.engine import Network, SimEnvironment
from ..network.replay import Unsupported, replay, unsupported_model
from .record import MARK, TIMEOUT, NotCompilable, record
from .run import RunResult

__all__ = ["run_compiled", "NotCompilable", "small_pages"]


def run_compiled(graph, placement, main, args_for_rank, profile, routing: str = "first",
                 network: Network | None = None) -> RunResult:
    """Run ``main(comm, *args_for_rank(rank))`` on every rank through the compiled path."""
    t0, c0 = time.perf_counter(), time.process_time()
    model = profile.network
    net = network if network is not None else Network(SimEnvironment(), model.effective_graph(graph), model, routing)
    why = unsupported_model(net)
    if why:
        err = NotCompilable(why)
        err.network = net  # not used yet: the SimPy path runs on it (at 16,384 GPUs a second one costs 1.5 s)
        raise err
    with small_pages():
        try:
            prog = record(net.router.graph, placement, main, args_for_rank, profile)
        except NotCompilable as e:
            e.network = net  # (the recording reads only its graph)
            raise
        arrays = prog.arrays()
        messages, message_bytes = len(arrays["bytes"]), int(arrays["bytes"].sum())   # (replay takes these columns)
        try:
            out = replay(net, list(placement), arrays, prog.events, model.small_messages == "smpi",
                         model.eager_threshold)
        except Unsupported as e:
            err = NotCompilable(str(e))
            err.network = net  # its routes and path parameters serve the SimPy path (nothing else changed)
            raise err from None
    acc = _phases(prog, arrays, out.op_time, out.finish)
    finish = out.finish.tolist()
    P = len(finish)
    last = max(range(P), key=lambda r: (finish[r], -r))
    phases_max: dict = {}
    for a in acc:
        for k, v in a.items():
            phases_max[k] = max(phases_max.get(k, 0.0), v)
    by_type: dict = defaultdict(int)
    for ls in out.links:
        by_type[ls.link_type] += ls.bytes
    return RunResult(
        makespan=max(finish) if finish else 0.0, finish=finish, outputs=prog.outputs, phases=dict(acc[last]),
        phases_max=phases_max, messages=messages, message_bytes=message_bytes,
        links=out.links, bytes_by_link_type=dict(by_type), wall_s=time.perf_counter() - t0, events=out.events,
        flows=out.flows, recomputations=out.recomputations, placement=list(placement), starts=[0.0] * P,
        cpu_s=time.process_time() - c0, engine="compiled")


@contextmanager
def small_pages():
    """Run the block with NumPy's advice of transparent huge pages off (and then as it was).

    NumPy advises the kernel to back every large array with 2 MiB pages; where the kernel
    compacts memory to find them on a fault (``defrag = madvise``, a common default), the
    compiled path's arrays (hundreds of MB, made once and written once) cost seconds of
    system time. The command line turns the advice off before NumPy loads; this does it for
    the Python API, where NumPy is usually loaded first (``sc.run`` of the ring on 1,024
    ranks: 1.6-1.7 s of sys with the advice, 0.45-0.47 s without it, the same user time;
    measured on this project's 2-core machine). A user's own setting,
    ``NUMPY_MADVISE_HUGEPAGE`` in the environment, is kept."""
    # NOTE: NumPy's switch for its huge-page advice is underscored (its environment variable is read once, at
    # import); where a NumPy lacks it, nothing changes
    switch = getattr(np._core.multiarray if hasattr(np, "_core") else np.core.multiarray,
                     "_set_madvise_hugepage", None)
    if switch is None or "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        yield
        return
    was = switch(False)
    try:
        yield
    finally:
        switch(was)


def _phases(prog, arrays, op_time, finish) -> list:
    """Each rank's time per phase, as ``World.attribute`` accounts it: phase marks, and
    compute timeouts (the time from their start to their end is ``compute``)."""
    ops, ptr, seconds = arrays["ops"], arrays["rank_ptr"], arrays["seconds"]
    sel = np.flatnonzero((ops[:, 0] == MARK) | ((ops[:, 0] == TIMEOUT) & (ops[:, 3] == 1)))
    bounds = np.searchsorted(sel, ptr)
    out = []
    for r in range(prog.P):
        acc: dict = defaultdict(float)
        stack: list = []
        mark = 0.0
        for i in sel[bounds[r]:bounds[r + 1]].tolist():
            now = float(op_time[i])
            name = stack[-1] if stack else "other"
            acc[name] += now - mark
            mark = now
            kind, a = int(ops[i, 0]), int(ops[i, 2 if ops[i, 0] == TIMEOUT else 1])
            if kind == TIMEOUT:
                end = now + float(seconds[a])
                acc["compute"] += end - mark
                mark = end
            elif prog.marks[a][1]:
                stack.append(prog.marks[a][0])
            else:
                stack.pop()
        now = float(finish[r])
        acc[stack[-1] if stack else "other"] += now - mark
        out.append(acc)
    return out
