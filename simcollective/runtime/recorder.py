"""The state of one recording (:mod:`.record`): the program being written, the messages
sent and the receives posted but not yet matched, which ranks can run, and the tokens
the recorded ranks yield.

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
does whatever the timing. A channel's key is one integer, ``cid P^2 + receiver P + sender``
(world ranks, ``cid`` the communicator's id), for tag 0 and ``(tag, that integer)`` for
other tags (tags equal to 0 share the channel, as equal tags do). What waits on a channel
of tag 0 is one deque in posting order, messages sent or receives posted (never both at
once: one is matched with the other), in ``chans`` (kept once made, maybe empty; each
communicator keeps those of the last peers it used). On another tag's channel, in
``sends`` or ``recvs``, a deque while two or more wait there; else that channel holds its
one item, whose entry is popped when it is taken (one lookup; :func:`wait`, :func:`rest`).
"""

from __future__ import annotations

from collections import deque

from .program import FLUSH, NotCompilable, Program

__all__ = ["NotCompilable", "Token", "Free", "Recorder", "wait", "queue", "rest", "POST", "WAITALL", "TIMEOUT",
           "YIELD", "MARK", "DELAY_SINCE", "NOW"]

POST, WAITALL, TIMEOUT, YIELD, MARK, DELAY_SINCE, NOW = range(7)


class Token:
    """A recorded event (zero-time recording): ``done`` once its value is known.

    ``waited``: yielded or in a ``waitall`` already (an event is waited for once);
    ``parent``: the not yet done ``waitall`` that holds it; ``rank``: the rank that
    waits (a receive not yet matched, a ``waitall``), woken when the token is done. A
    ``waitall``'s own token has ``group`` ``(requests, value_index)`` and ``left`` its
    members not yet done. A send's token is done at once, with no value (one class for
    every posting: the loops over a ``waitall``'s sends and receives see one type, which
    CPython's attribute caches keep to; two classes cost about 4 % of the instructions of
    NCCL's recording)."""

    __slots__ = ("ev", "done", "value", "waited", "parent", "group", "left", "rank")


class Free:
    """A zero-time completion without an event (what ``processed_event`` is on the SimPy
    path): done, with ``value``."""

    __slots__ = ("value",)
    ev = -1
    done = True
    waited = False
    parent = group = None


class Recorder:
    """The shared state of one recording: matching, the runnable ranks, the program."""

    def __init__(self, P: int):
        self.prog = Program(P)
        self.chans: dict = {}     # channel of tag 0 -> deque of what waits there (messages or receives)
        self.sends: dict = {}     # channel of another tag -> (message, payload) not yet received, or a deque of them
        self.recvs: dict = {}     # channel of another tag -> receive token not yet matched, or a deque of them
        self.ready: deque = deque(range(P))
        self.blocked: list = [None] * P
        self.nmsgs = 0            # messages sent so far (the next one's number)

    def token(self, done: bool, value=None) -> Token:
        t = Token()
        t.ev = self.prog.events
        self.prog.events += 1
        t.done, t.value, t.waited, t.parent, t.group = done, value, False, None, None
        return t

    def deliver(self, rt: Token, send: int, payload) -> None:
        """Hand message ``send`` (``payload``) to the receive ``rt`` posted for it before it
        was sent: ``rt`` is done, and so its rank runs again or its ``waitall`` counts it off."""
        self.prog.late.extend((send, rt.ev))
        rt.done, rt.value = True, payload
        p = rt.parent
        if p is not None:
            rt.parent = None
            p.left -= 1
            if not p.left:
                self.finish(p)
        elif self.blocked[rt.rank] is rt:
            self.ready.append(rt.rank)

    def finish(self, p: Token) -> None:
        """The ``waitall`` ``p`` has no member left to wait for: it is done; let its rank run
        again if it waits for it, else count it off the ``waitall`` holding it (and so on).
        A receive's link to its ``waitall`` is cut as it is counted off (the two refer to each
        other: a cycle, which only the paused cyclic collector would free)."""
        while True:
            p.done = True
            if self.blocked[p.rank] is p:
                self.ready.append(p.rank)
                return
            t = p
            p = t.parent
            if p is None:
                return
            t.parent = None
            p.left -= 1
            if p.left:
                return

    def timeout(self, rank: int, seconds: float, value, compute: bool) -> Token:
        t = self.token(True, value)
        prog = self.prog
        prog.ops[rank].extend((TIMEOUT, t.ev, len(prog.seconds), int(compute)))
        prog.seconds.append(seconds)
        return t

    def delay_since(self, rank: int, since, value) -> Token:
        if not since.scaled:
            raise NotCompilable("the program computes with the simulated time (comm.now)")
        t = self.token(True, value)
        prog = self.prog
        row = prog.row(rank)
        prog.ops[rank].extend((DELAY_SINCE, t.ev, len(prog.seconds), len(prog.members)))
        prog.seconds.append(since.fraction)
        prog.members.extend((row - since.a, row - since.b))
        return t

    def run(self, gens: list) -> None:
        """Run every rank's generator until all have returned (or none can go on): each
        rank taken from ``ready`` runs until it waits for an event not yet done.

        (One frame for the whole recording: a rank is resumed here once per message. A
        rank's generator delegating to another with ``yield from`` is passed over: the
        innermost one is resumed directly, see :func:`innermost`.)"""
        ready, blocked, prog = self.ready, self.blocked, self.prog
        all_ops, outputs = prog.ops, prog.outputs
        sends = [g.send for g in gens]   # (a bound method made once a rank, not once a resumption)
        outer = [[] for _ in gens]        # per rank, the generators delegating to the one resumed
        while ready:
            r = ready.popleft()
            ops = all_ops[r]
            row = ops.extend
            t = blocked[r]
            value = None if t is None else (t.value if t.group is None else group_value(t))
            blocked[r] = None
            send = sends[r]
            fresh = True
            while True:  # (once per yield)
                try:
                    t = send(value)
                    if fresh:   # (a delegation begun on the last run, or at the first yield, is seen here)
                        send = sends[r] = innermost(send.__self__, outer[r])
                        fresh = False
                except BaseException as stop:   # (returned, or raised: see returned)
                    if not outer[r] and not isinstance(stop, StopIteration):
                        raise
                    t, send = returned(stop, outer[r])
                    if send is None:
                        outputs[r] = t
                        gens[r] = sends[r] = None
                        break
                    sends[r] = send
                if t.__class__ is not Token:   # (a token is the most yielded: looked at first)
                    if t.__class__ is Free:
                        value = t.value
                        continue
                    raise NotCompilable(f"the program yields a {type(t).__name__}")
                row((YIELD, t.ev, 0, 0))
                if t.waited:
                    raise NotCompilable("an event is waited for twice")
                t.waited = True
                if not t.done:
                    blocked[r] = t
                    if len(ops) > FLUSH:
                        prog.flush(r)
                    break
                value = t.value if t.group is None else group_value(t)
        if any(t is not None for t in blocked):
            raise NotCompilable("the recorded ranks block (deadlock or unmatched messages)")
        if any(q.__class__ is not deque or q for waiting in (self.chans, self.sends, self.recvs)
               for q in waiting.values()):
            raise NotCompilable("messages are sent but never received")


def innermost(gen, outer: list):
    """The ``send`` of the generator ``gen`` delegates to (``yield from``), or of the one
    that one delegates to, and so on; the generators passed push onto ``outer``.

    (Resuming the innermost generator directly skips a frame per level at every
    resumption: the ring's ``yield from ring_reduce_scatter(...)`` inside ``with
    comm.phase(...)``, NCCL's algorithms inside ``run_call``.)"""
    inner = gen.gi_yieldfrom
    while inner is not None and inner.__class__ is gen.__class__:
        outer.append(gen)
        gen = inner
        inner = gen.gi_yieldfrom
    return gen.send


def returned(stop: BaseException, outer: list):
    """The innermost generator returned (``stop``, a StopIteration) or raised ``stop``: that
    goes to the generator that delegated to it, as ``yield from`` hands it over (throwing
    ``stop`` into a generator suspended in ``yield from`` of a finished one resumes it with
    ``stop.value``, or raises ``stop`` there: PEP 380), and so on up while they return or
    raise. Returns what is yielded next and the ``send`` to resume with, or the rank's
    output and ``None`` once the outermost generator has returned."""
    while outer:
        gen = outer.pop()
        try:
            t = gen.throw(stop)
        except BaseException as again:
            stop = again
            continue
        return t, innermost(gen, outer)
    if not isinstance(stop, StopIteration):
        raise stop
    return stop.value, None


def group_value(t: Token):
    """The value of a done ``waitall``: its members' values (or the one of ``value_index``)."""
    reqs, index = t.group
    vals = [q.value if q.group is None else group_value(q) for q in reqs]
    return vals if index is None else vals[index]


def wait(box: dict, key, item) -> None:
    """Queue ``item`` (a message sent, or a receive token) on the channel ``key`` (of
    another tag than 0) of ``box``: its entry is the item itself (tags new at every step,
    NCCL's: no deque a message), a deque once two wait there at once."""
    q = box.setdefault(key, item)
    if q is not item:
        queue(box, key, q, item)


def queue(box: dict, key, q, item) -> None:
    """Queue ``item`` behind ``q``, what waits on the channel ``key`` (of another tag than
    0) of ``box``: a deque from then on."""
    if type(q) is deque:
        q.append(item)
    else:
        box[key] = deque((q, item))


def rest(box: dict, key, q: deque):
    """The first item of ``q``, taken off the channel ``key`` of ``box`` (another tag's
    than 0: popped from ``box``, the rest put back if any)."""
    item = q.popleft()
    if q:
        box[key] = q
    return item


def free(value) -> Free:
    f = Free()
    f.value = value
    return f
