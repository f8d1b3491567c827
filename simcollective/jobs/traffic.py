"""Synthetic background traffic: seeded flows of a pattern at an offered load for a window.

Each sender of a ``[[background]]`` entry posts one message of ``bytes`` every
``bytes / (load x C)`` seconds from ``start`` until ``end`` (the last one posted before
``end``), ``C`` the smallest route capacity (bytes/s) from it to its destinations: alone
on the fabric it would offer ``load`` of what its routes carry. Destinations:

* ``permutation``: a seeded random permutation of the ranks without fixed points, one
  destination per sender;
* ``incast``: every other rank sends to ``root``;
* ``alltoall``: each sender cycles over the others (i + 1, i + 2, ...).

Messages are posted without waiting for earlier ones (an open-loop offered load); every
receiver posts its receives at the start. The traffic is a task of its own
(:class:`~simcollective.runtime.tasks.Task`): its flows share the fabric with the job's.
"""

from __future__ import annotations

import numpy as np

from ..network.routing import Router
from ..runtime.tasks import Task

__all__ = ["traffic_task", "schedule", "destinations"]


class _Payload:
    """A message's size only (background messages carry no data)."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


def destinations(pattern: str, k: int, seed: int, root: int = 0) -> list:
    """Per sender (0..k-1) its destinations in sending order (empty: it does not send)."""
    if pattern == "incast":
        return [[] if i == root else [root] for i in range(k)]
    if pattern == "alltoall":
        return [[(i + j) % k for j in range(1, k)] for i in range(k)]
    rng = np.random.default_rng(seed)
    while True:  # a derangement: nobody sends to itself
        perm = rng.permutation(k)
        if not np.any(perm == np.arange(k)):
            return [[int(p)] for p in perm]


def schedule(spec, gpus: list, router: Router, seed: int) -> list:
    """Per sender the list of ``(time, destination)`` of its messages (times absolute)."""
    dests = destinations(spec.pattern, len(gpus), spec.seed if spec.seed is not None else seed, spec.root)
    out = []
    for i, ds in enumerate(dests):
        if not ds:
            out.append([])
            continue
        cap = min(router.route(gpus[i], gpus[d]).capacity for d in ds)
        period = spec.bytes / (spec.load * cap)
        n = int(np.ceil((spec.end - spec.start) / period))
        times = [spec.start + j * period for j in range(n)]
        out.append([(t, ds[j % len(ds)]) for j, t in enumerate(times) if t < spec.end])
    return out


def _main(plan: list, incoming: list, nbytes: int):
    payload = _Payload(nbytes)

    def main(comm, _inputs):
        recvs = [comm.irecv(src) for src in incoming[comm.rank]]
        sends = []
        for when, dst in plan[comm.rank]:
            if when > comm.now:
                yield comm.delay(when - comm.now)
            sends.append(comm.isend(dst, payload))
        yield comm.waitall(sends + recvs)
        return None
    return main


def traffic_task(spec, members: tuple, gpus: list, router: Router, seed: int) -> tuple:
    """The :class:`Task` of one background entry over world ranks ``members`` (on ``gpus``)
    and its message count."""
    plan = schedule(spec, gpus, router, seed)
    incoming = [[] for _ in members]
    for i, msgs in enumerate(plan):
        for _, d in msgs:
            incoming[d].append(i)
    task = Task(key=("background", spec.name), name=f"background {spec.name}", members=members,
                main=_main(plan, incoming, spec.bytes), inputs=lambda r: None)
    return task, sum(len(m) for m in plan)
