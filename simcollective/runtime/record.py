"""Recording a collective's per-rank programs as arrays of operations.

The algorithm's one file stays its definition: every rank's generator runs here, in zero
simulated time, against a :class:`RecordingComm` that has the communicator's public
interface. What each rank posts, waits for and computes becomes rows of an operation
array (:mod:`.recorder` lists them); the payloads are the run's own inputs (real or
size-only), so every rank's result is the one the SimPy path would return, and
verification is unchanged. The compiled event loop (:mod:`simcollective.network.replay`)
then gives each operation its simulated time.

Only programs whose communication does not depend on time can be recorded: a program
that asks for the time (``comm.now``) or reacts to whichever message comes first
(``waitany``, ``completions``) raises :class:`NotCompilable`, and the caller runs the SimPy path.
"""

from __future__ import annotations

from collections import deque
from contextlib import contextmanager
from types import SimpleNamespace

from numpy import ndarray

from .collector import collector_paused
from .comm import Comm
from .messages import payload_bytes
from .program import Program, packed
from .recorder import (DELAY_SINCE, MARK, NOW, POST, TIMEOUT, WAITALL, YIELD, NotCompilable, Free,
                       Recorder, Token, free, queue, rest, wait)

__all__ = ["NotCompilable", "Program", "RecordingComm", "record", "POST", "WAITALL", "TIMEOUT", "YIELD", "MARK",
           "DELAY_SINCE", "NOW"]


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
    primitive appends operations instead of scheduling SimPy events.

    (The postings are written out flat, each in one frame: they run once per message.
    A send is matched at once with the receive posted for it, if any, else queued on
    its channel, and the other way round: see :class:`~.recorder.Recorder` for the
    channels' keys and queues.)"""

    __slots__ = ("_rec", "_prog", "_row", "_msg", "_free", "_P", "_into", "_from", "_to", "_toq", "_fr", "_frq")

    def __init__(self, world, members: tuple, rank: int, name: str, context=None):
        super().__init__(world, members, rank, name, context)
        self._rec = world.rec
        self._prog = world.rec.prog
        self._row = world.rec.prog.ops[self._me].extend   # appends this rank's rows (its list is emptied in place)
        self._msg = world.rec.prog.msgs.extend            # and the messages'
        self._free = world.free_sums
        self._P = P = world.size
        base = self.cid * P * P   # channel (receiver d, sender s) of this communicator: base + d P + s
        self._into = base + self._me * P         # + s: the channel into this rank from world rank s
        self._from = base + self._me             # + d P: the channel from this rank to world rank d
        self._to = self._fr = -1                 # the last peers sent to and received from (tag 0),
        self._toq = self._frq = None             # and their channels' deques (:meth:`_out`, :meth:`_in`)

    @property
    def now(self):
        row = self._rec.prog.row(self._me)
        self._row((NOW, 0, 0, 0))
        return _Clock(self._me, row)

    def isend(self, dst: int, payload, tag=0, via=None):
        try:   # (a peer past the last is an IndexError here; below 0 is checked)
            d = self.members[dst]
            if dst < 0:
                raise IndexError
        except IndexError:
            self._check_peer(dst, "destination")
        prog = self._prog
        t = Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.waited, t.done, t.value, t.parent, t.group = False, True, None, None, None
        self._row((POST, ev, self._send(d, payload, tag, via), -1))
        return t

    def _send(self, dst: int, payload, tag, via) -> int:
        """Send ``payload`` to world rank ``dst``: the message's number (its row), handed to
        the receive posted for it if any, else queued on its channel."""
        rec, prog = self._rec, self._prog
        send = rec.nmsgs
        rec.nmsgs = send + 1
        try:
            nbytes = payload.nbytes
            if nbytes.__class__ is not int:
                nbytes = int(nbytes)
        except AttributeError:
            nbytes = payload_bytes(payload)
        self._msg((dst, nbytes, 0 if via is None else prog.via_ids.get(via) or prog.via(via)))
        if tag == 0:
            q = self._toq if dst == self._to else self._out(dst)
            if q and q[0].__class__ is Token:
                rec.deliver(q.popleft(), send, payload)
            else:
                q.append((send, payload))
            return send
        key = (tag, self._from + dst * self._P)
        rt = rec.recvs.pop(key, None)
        if rt is None:
            item = (send, payload)
            q = rec.sends.setdefault(key, item)
            if q is not item:
                queue(rec.sends, key, q, item)
            return send
        if rt.__class__ is deque:
            rt = rest(rec.recvs, key, rt)
        rec.deliver(rt, send, payload)
        return send

    def _out(self, d: int) -> deque:
        """The channel of tag 0 from this rank to world rank ``d``, made at its first use and
        kept as the last one sent to (a ring sends to one peer: no lookup then)."""
        chans = self._rec.chans
        key = self._from + d * self._P
        q = chans.get(key)
        if q is None:
            q = chans[key] = deque()
        self._to, self._toq = d, q
        return q

    def _in(self, s: int) -> deque:
        """The channel of tag 0 into this rank from world rank ``s`` (as :meth:`_out`)."""
        chans = self._rec.chans
        key = self._into + s
        q = chans.get(key)
        if q is None:
            q = chans[key] = deque()
        self._fr, self._frq = s, q
        return q

    def irecv(self, src: int, tag=0):
        try:
            s = self.members[src]
            if src < 0:
                raise IndexError
        except IndexError:
            self._check_peer(src, "source")
        rec, me = self._rec, self._me
        prog = rec.prog
        t = Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.waited, t.parent, t.group = False, None, None
        if tag == 0:
            q = self._frq if s == self._fr else self._in(s)
            if q and q[0].__class__ is tuple:
                recv, t.value = q.popleft()
                t.done = True
            else:
                recv, t.done, t.value, t.rank = -1, False, None, me
                q.append(t)
        else:
            key = (tag, self._into + s)
            got = rec.sends.pop(key, None)
            if got is None:
                recv, t.done, t.value, t.rank = -1, False, None, me
                q = rec.recvs.setdefault(key, t)
                if q is not t:
                    queue(rec.recvs, key, q, t)
            else:
                if got.__class__ is deque:
                    got = rest(rec.sends, key, got)
                recv, t.value = got
                t.done = True
        self._row((POST, ev, -1, recv))
        return t

    send = isend
    recv = irecv

    def sendrecv(self, dst: int, payload, src, tag=0, recvtag=None, via=None):
        # NOTE: repeats _send's and irecv's lines for tag 0, in one frame (the ring's one posting
        # a message: a call costs about as much as a tenth of the rest of this frame)
        m = self.members
        try:   # (a peer past the last is an IndexError here; below 0 is checked)
            d, s = m[dst], m[src]
            if dst < 0 or src < 0:
                raise IndexError
        except IndexError:
            self._check_peer(dst, "destination")
            self._check_peer(src, "source")   # (raises: one of the two is out of range)
        if tag != 0 or recvtag is not None and recvtag != 0:
            return self._sendrecv(d, payload, s, tag, recvtag, via)
        rec = self._rec
        prog = self._prog
        t = Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.waited = False
        t.parent = t.group = None
        send = rec.nmsgs
        rec.nmsgs = send + 1
        try:
            nbytes = payload.nbytes
            if nbytes.__class__ is not int:
                nbytes = int(nbytes)
        except AttributeError:
            nbytes = payload_bytes(payload)
        self._msg((d, nbytes, 0 if via is None else prog.via_ids.get(via) or prog.via(via)))
        q = self._toq if d == self._to else self._out(d)
        if q and q[0].__class__ is Token:
            rec.deliver(q.popleft(), send, payload)
        else:
            q.append((send, payload))
        q = self._frq if s == self._fr else self._in(s)
        if q and q[0].__class__ is tuple:
            recv, t.value = q.popleft()
            t.done = True
        else:
            recv = -1
            t.done, t.rank, t.value = False, self._me, None
            q.append(t)
        self._row((POST, ev, send, recv))
        return t

    def _sendrecv(self, dst: int, payload, src, tag, recvtag, via):
        """:meth:`sendrecv` of other tags than 0, to and from world ranks ``dst`` and ``src``."""
        rec, prog, me = self._rec, self._prog, self._me
        t = Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.waited, t.parent, t.group, t.value = False, None, None, None
        send = self._send(dst, payload, tag, via)
        recv = -1
        tag = tag if recvtag is None else recvtag
        if tag == 0:
            q = self._frq if src == self._fr else self._in(src)
            got = q.popleft() if q and q[0].__class__ is tuple else None
        else:
            key = (tag, self._into + src)
            got = rec.sends.pop(key, None)
            if got.__class__ is deque:
                got = rest(rec.sends, key, got)
        if got is not None:
            recv, t.value = got
            t.done = True
        else:
            t.done, t.rank = False, me
            if tag == 0:
                q.append(t)
            else:
                wait(rec.recvs, key, t)
        self._row((POST, ev, send, recv))
        return t

    def waitall(self, reqs, value_index=None):
        reqs = list(reqs)
        prog = self._rec.prog
        t = Token()
        t.ev = ev = prog.events
        prog.events = ev + 1
        t.value, t.waited, t.parent = None, False, None
        members = prog.members
        first = len(members)
        # (packed at once: an array's append costs about 50 ns an integer, pack and frombytes 20; measured here)
        members.frombytes(packed([q.ev for q in reqs], "i"))  # (Program.members: int32)
        left = 0
        for q in reqs:
            if q.ev >= 0:
                if q.waited:
                    raise NotCompilable("an event is waited for twice")
                q.waited = True
                if not q.done:
                    q.parent = t
                    left += 1
        self._row((WAITALL, ev, first, len(reqs)))
        t.group, t.left, t.rank, t.done = (reqs, value_index), left, self._me, not left
        return t

    def waitany(self, reqs):
        raise NotCompilable("the program waits for whichever message comes first (waitany)")

    def completions(self):
        return self.waitany(())     # the same refusal: completions is waitany over a changing set

    def compute(self, seconds: float, value=None):
        if seconds <= 0:
            return free(value)
        return self._rec.timeout(self._me, seconds, value, True)

    def delay(self, seconds: float, value=None):
        if seconds.__class__ is _Since:
            return self._rec.delay_since(self._me, seconds, value)
        if seconds <= 0:
            return free(value)
        return self._rec.timeout(self._me, seconds, value, False)

    def add(self, a, b, op=None):
        result = a + b if op is None else op(a, b)
        if isinstance(result, ndarray):
            result.flags.writeable = False
        if self._free:  # (once per reduction: the Free written out here)
            f = Free()
            f.value = result
            return f
        if hasattr(a, "nnz") and hasattr(b, "nnz"):
            raise NotCompilable("sparse merges are data-dependent")
        return self.compute(self.world.compute_model.dense_sum_time(payload_bytes(result)), result)

    @contextmanager
    def phase(self, name: str):
        marks, row = self._rec.prog.marks, self._row
        row((MARK, len(marks), 0, 0))
        marks.append((name, True))
        try:
            yield
        finally:
            row((MARK, len(marks), 0, 0))
            marks.append((name, False))

    def sub(self, ranks, name: str) -> "RecordingComm":
        members = tuple(self.members[r] for r in ranks)
        return RecordingComm(self.world, members, members.index(self._me), name, self.context)


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
        self.rec = Recorder(self.size)


def record(graph, placement, main, args_for_rank, profile) -> Program:
    """Record ``main(comm, *args_for_rank(rank))`` of every rank (see the module doc).

    Raises :class:`NotCompilable` when the program's communication depends on time."""
    world = _RecordingWorld(graph, placement, profile)
    gens = [main(RecordingComm(world, world._world_members, r, "world"), *args_for_rank(r))
            for r in range(world.size)]
    # a few objects a message, none in cycles; what the recording leaves (its rows, every
    # rank's list of results: 7 M list entries for the ring at 1,024 ranks, in 0.09 M objects)
    # is left frozen when it is much, as a simulation's run leaves it (each pass of the
    # collector through the replay and the verification would read them all again)
    prog = world.rec.prog
    with collector_paused(freeze=True) as pause:
        world.rec.run(gens)
        pause.held = prog.held()
    return prog
