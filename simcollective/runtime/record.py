"""Recording a collective's per-rank programs as arrays of operations.

The algorithm's one file stays its definition: every rank's generator runs here, in zero
simulated time, against a :class:`RecordingComm` that has the communicator's public
interface. What each rank posts, waits for and computes becomes rows of an operation
array; the payloads are the run's own inputs (real or size-only), so every rank's result
is the one the SimPy path would return, and verification is unchanged. The compiled event
loop (:mod:`simcollective.network.replay`) then gives each operation its simulated time.

Only programs whose communication does not depend on time can be recorded: a program
that asks for the time (``comm.now``) or reacts to whichever message comes first
(``waitany``) raises :class:`NotCompilable`, and the caller runs the SimPy path.

Operations (one row of four integers each; ``ev`` are event ids, ``-1`` none):

* ``POST ev send recv``: one posting (``isend``, ``irecv`` or ``sendrecv``) of message
  ``send`` and/or the receive of message ``recv``;
* ``WAITALL ev first count``: a ``waitall`` over ``members[first:first + count]``;
* ``TIMEOUT ev seconds compute``: a ``compute`` (``compute`` 1) or ``delay`` of
  ``seconds[...]``;
* ``YIELD ev``: the rank waits for event ``ev``;
* ``MARK index``: a phase boundary (``marks[index]``: ``(name, entering)``);
* ``NOW``: the rank reads the time (``start = comm.now``), and ``DELAY_SINCE ev f j``: a
  ``delay(fraction * (comm.now - start))`` (the one use of the time a recording allows:
  NCCL's pipeline fill), ``fraction = seconds[f]``, the two times those of the operations
  ``members[j]`` and ``members[j + 1]`` rows before this one.

Messages are numbered as they are sent; the k-th send on a (receiver, source, tag,
communicator) channel is matched with the k-th receive on it, as MPI's ordered matching
does whatever the timing.
"""

from __future__ import annotations

import gc
from collections import deque
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np

from ..errors import SimCollectiveError
from .comm import Comm
from .messages import payload_bytes
from .program import MSG_FIELDS, Program

__all__ = ["NotCompilable", "Program", "RecordingComm", "record", "POST", "WAITALL", "TIMEOUT", "YIELD", "MARK",
           "DELAY_SINCE", "NOW"]

POST, WAITALL, TIMEOUT, YIELD, MARK, DELAY_SINCE, NOW = range(7)


class NotCompilable(SimCollectiveError):
    """The run cannot take the compiled path (the message says why)."""


class _Token:
    """A recorded event: ``done`` once its value is known (zero-time recording)."""

    __slots__ = ("ev", "done", "value", "rank", "waiters", "group")


class _Recorder:
    """The shared state of one recording: matching, the runnable ranks, the program."""

    def __init__(self, P: int, world_like):
        self.prog = Program(P)
        self.world = world_like
        self.sends: dict = {}     # channel -> deque of (message, payload) not yet received
        self.recvs: dict = {}     # channel -> deque of (token, op position, rank) not yet matched
        self.ready: deque = deque(range(P))
        self.queued = [True] * P
        self.blocked: list = [None] * P

    def token(self, rank: int, done: bool, value=None) -> _Token:
        t = _Token()
        t.ev = self.prog.events
        self.prog.events += 1
        t.done, t.value, t.rank, t.waiters, t.group = done, value, rank, 0, None
        return t

    def post(self, me: int, cid: int, dst, payload, tag, src, rtag, via=None) -> _Token:
        # (once per message: written out flat, one array extend per message and per operation)
        prog = self.prog
        ops = prog.ops[me]
        t = _Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.rank, t.waiters, t.group = me, 0, None
        send = recv = -1
        if dst is not None:
            t.done = src is None
            msgs = prog.msgs
            send = len(msgs) // MSG_FIELDS
            try:
                nbytes = int(payload.nbytes)
            except AttributeError:
                nbytes = payload_bytes(payload)
            v = 0
            if via is not None:
                v = prog.via_ids.get(via)
                if v is None:
                    v = prog.via_ids[via] = len(prog.vias)
                    prog.vias.append(via)
            key = (dst, me, tag, cid)
            waiting = self.recvs.get(key)
            if waiting:
                rt, pos, rrank = waiting.popleft()
                msgs.extend((me, dst, nbytes, ev, rt.ev, v))
                prog.ops[rrank][pos + 3] = send
                rt.done, rt.value = True, payload
                b = self.blocked[rrank]
                if b is not None and not self.queued[rrank] and _done(b):
                    self.queued[rrank] = True
                    self.ready.append(rrank)
            else:
                msgs.extend((me, dst, nbytes, ev, -1, v))
                q = self.sends.get(key)
                if q is None:
                    q = self.sends[key] = deque()
                q.append((send, payload))
        else:
            t.done = False
        if src is not None:
            key = (me, src, rtag, cid)
            queued = self.sends.get(key)
            if queued:
                recv, value = queued.popleft()
                prog.msgs[recv * MSG_FIELDS + 4] = ev
                t.done, t.value = True, value
            else:
                t.value = None
                q = self.recvs.get(key)
                if q is None:
                    q = self.recvs[key] = deque()
                q.append((t, len(ops), me))
        else:
            t.value = None
        ops.extend((POST, ev, send, recv))
        return t

    def timeout(self, rank: int, seconds: float, value, compute: bool) -> _Token:
        t = self.token(rank, True, value)
        prog = self.prog
        prog.ops[rank].extend((TIMEOUT, t.ev, len(prog.seconds), int(compute)))
        prog.seconds.append(seconds)
        return t

    def delay_since(self, rank: int, since, value) -> _Token:
        if not since.scaled:
            raise NotCompilable("the program computes with the simulated time (comm.now)")
        t = self.token(rank, True, value)
        prog = self.prog
        ops = prog.ops[rank]
        row = len(ops) // 4
        ops.extend((DELAY_SINCE, t.ev, len(prog.seconds), len(prog.members)))
        prog.seconds.append(since.fraction)
        prog.members.extend((row - since.a, row - since.b))
        return t

    def waitall(self, rank: int, reqs, value_index) -> _Token:
        reqs = list(reqs)
        prog = self.prog
        t = self.token(rank, False)
        first = len(prog.members)
        for q in reqs:
            if q.ev >= 0:
                q.waiters += 1
                if q.waiters > 1:
                    raise NotCompilable("an event is waited for twice")
            prog.members.append(q.ev)
        prog.ops[rank].extend((WAITALL, t.ev, first, len(reqs)))
        t.group = (reqs, value_index)
        return t

    def run(self, gens: list) -> None:
        """Run every rank's generator until all have returned (or none can go on)."""
        ready, queued = self.ready, self.queued
        while ready:
            r = ready.popleft()
            queued[r] = False
            self._step(r, gens)
        if any(t is not None for t in self.blocked):
            raise NotCompilable("the recorded ranks block (deadlock or unmatched messages)")
        if any(self.sends.values()) or any(self.recvs.values()):
            raise NotCompilable("messages are sent but never received")

    def _step(self, r: int, gens) -> None:
        gen, ops = gens[r], self.prog.ops[r]
        t = self.blocked[r]
        value = None if t is None else _value(t)
        self.blocked[r] = None
        send = gen.send
        while True:  # (once per yield: plain tokens are read inline, waitall groups by _done/_value)
            try:
                t = send(value)
            except StopIteration as stop:
                self.prog.outputs[r] = stop.value
                gens[r] = None
                return
            if t.__class__ is not _Token:
                raise NotCompilable(f"the program yields a {type(t).__name__}")
            if t.ev >= 0:
                ops.extend((YIELD, t.ev, 0, 0))
                if t.waiters:
                    raise NotCompilable("an event is waited for twice")
                t.waiters = 1
            if t.group is None:
                if not t.done:
                    self.blocked[r] = t
                    return
                value = t.value
            elif _done(t):
                value = _value(t)
            else:
                self.blocked[r] = t
                return


def _done(t: _Token) -> bool:
    if t.group is not None:  # a waitall: done when all its members are
        return all(_done(q) for q in t.group[0])
    return t.done


def _value(t: _Token):
    if t.group is not None:
        reqs, index = t.group
        vals = [_value(q) for q in reqs]
        return vals if index is None else vals[index]
    return t.value


class _Clock:
    """``comm.now`` while recording: the time of a ``NOW`` operation (``row``) of ``rank``.
    Only ``fraction * (comm.now - start)`` can be made of it (:class:`_Since`)."""

    __slots__ = ("rank", "row")

    def __init__(self, rank: int, row: int):
        self.rank, self.row = rank, row

    def __sub__(self, other):
        if other.__class__ is not _Clock or other.rank != self.rank:
            raise NotCompilable("the program computes with the simulated time (comm.now)")
        return _Since(1.0, self.row, other.row, False)

    def _refuse(self, *_):
        raise NotCompilable("the program computes with the simulated time (comm.now)")

    __add__ = __radd__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __float__ = __bool__ = _refuse


class _Since(_Clock):
    """``fraction * (time of row a - time of row b)``."""

    __slots__ = ("fraction", "a", "b", "scaled")

    def __init__(self, fraction: float, a: int, b: int, scaled: bool):
        self.fraction, self.a, self.b, self.scaled = fraction, a, b, scaled

    def __rmul__(self, f):
        if self.scaled or not isinstance(f, float):
            raise NotCompilable("the program computes with the simulated time (comm.now)")
        return _Since(f, self.a, self.b, True)

    __sub__ = _Clock._refuse


class RecordingComm(Comm):
    """The communicator a recorded rank sees: :class:`Comm`'s interface, where every
    primitive appends operations instead of scheduling SimPy events."""

    __slots__ = ()

    @property
    def now(self):
        ops = self.world.rec.prog.ops[self._me]
        row = len(ops) // 4
        ops.extend((NOW, 0, 0, 0))
        return _Clock(self._me, row)

    def isend(self, dst: int, payload, tag=0, via=None):
        if not 0 <= dst < self.size:
            self._check_peer(dst, "destination")
        return self.world.rec.post(self._me, self.cid, self.members[dst], payload, tag, None, None, via)

    def irecv(self, src: int, tag=0):
        if not 0 <= src < self.size:
            self._check_peer(src, "source")
        return self.world.rec.post(self._me, self.cid, None, None, None, self.members[src], tag)

    send = isend
    recv = irecv

    def sendrecv(self, dst: int, payload, src: int, tag=0, recvtag=None, via=None):
        if not (0 <= dst < self.size and 0 <= src < self.size):
            self._check_peer(dst, "destination")
            self._check_peer(src, "source")
        m = self.members
        return self.world.rec.post(self._me, self.cid, m[dst], payload, tag, m[src],
                                   tag if recvtag is None else recvtag, via)

    def waitall(self, reqs, value_index=None):
        return self.world.rec.waitall(self._me, reqs, value_index)

    def waitany(self, reqs):
        raise NotCompilable("the program waits for whichever message comes first (waitany)")

    def compute(self, seconds: float, value=None):
        rec = self.world.rec
        if seconds <= 0:
            return _free(rec, self._me, value)
        return rec.timeout(self._me, seconds, value, True)

    def delay(self, seconds: float, value=None):
        rec = self.world.rec
        if seconds.__class__ is _Since:
            return rec.delay_since(self._me, seconds, value)
        if seconds <= 0:
            return _free(rec, self._me, value)
        return rec.timeout(self._me, seconds, value, False)

    def add(self, a, b, op=None):
        result = a + b if op is None else op(a, b)
        if isinstance(result, np.ndarray):
            result.flags.writeable = False
        world = self.world
        if world.free_sums:
            return _free(world.rec, self._me, result)
        prof = world.compute_model
        if hasattr(a, "nnz") and hasattr(b, "nnz"):
            raise NotCompilable("sparse merges are data-dependent")
        return self.compute(prof.dense_sum_time(payload_bytes(result)), result)

    @contextmanager
    def phase(self, name: str):
        prog = self.world.rec.prog
        ops = prog.ops[self._me]
        ops.extend((MARK, len(prog.marks), 0, 0))
        prog.marks.append((name, True))
        try:
            yield
        finally:
            ops.extend((MARK, len(prog.marks), 0, 0))
            prog.marks.append((name, False))

    def sub(self, ranks, name: str) -> "RecordingComm":
        members = tuple(self.members[r] for r in ranks)
        return RecordingComm(self.world, members, members.index(self._me), name, self.context)


def _free(rec: _Recorder, rank: int, value) -> _Token:
    """A zero-time completion (what ``processed_event`` is on the SimPy path): no event."""
    t = _Token()
    t.ev, t.done, t.value, t.rank, t.waiters, t.group = -1, True, value, rank, 0, None
    return t


class _RecordingWorld:
    """What communicators read of a world, for a recording (no environment, no network)."""

    def __init__(self, graph, placement, profile):
        from .world import World  # (the member and communicator bookkeeping is World's)

        self.placement = list(placement)
        self.size = len(self.placement)
        self.profile = profile
        self.compute_model = profile.compute
        self.free_sums = profile.compute.free
        self.shared: dict = {}
        self.servers = [graph.nodes[g].get("server") for g in self.placement]
        self._comm_ids: dict = {}
        self.comm_names: list = []
        self._world_members = tuple(range(self.size))
        self._members = {self._world_members: self._world_members}
        self.canonical = World.canonical.__get__(self)
        self.comm_id = World.comm_id.__get__(self)
        self.network = SimpleNamespace(router=SimpleNamespace(graph=graph))  # (comm.graph reads it)
        self.rec = _Recorder(self.size, self)


def record(graph, placement, main, args_for_rank, profile) -> Program:
    """Record ``main(comm, *args_for_rank(rank))`` of every rank (see the module doc).

    Raises :class:`NotCompilable` when the program's communication depends on time."""
    world = _RecordingWorld(graph, placement, profile)
    gens = [main(RecordingComm(world, world._world_members, r, "world"), *args_for_rank(r))
            for r in range(world.size)]
    # a few objects a message, none in cycles: the cyclic collector's passes would only cost
    paused = gc.isenabled()
    gc.disable()
    try:
        world.rec.run(gens)
    finally:
        if paused:
            gc.enable()
    return world.rec.prog
