"""The runtime: every rank is a SimPy process running straight-line MPI-style code.

An algorithm is a generator function ``algo(comm, x, **options)`` run once per rank. It
yields the events returned by the communicator's primitives and returns its output::

    def ring_step(comm, x):
        right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
        got = yield comm.sendrecv(right, x, left)     # value: the received payload
        return (yield comm.add(x, got))               # reduction, with its compute cost

Point-to-point semantics follow MPI and SimGrid's SMPI: messages are matched by (source,
tag, communicator) in posting order. With the profile's ``small_messages = "eager"`` (the
``ideal`` profile) a send of at most ``profile.eager_threshold`` bytes is eager (its flow
starts at once and the send completes immediately), a larger one is a rendezvous (its flow
starts when the matching receive is posted, and the send completes when the data has
arrived). With ``small_messages = "smpi"`` (the ``cm02`` and ``smpi`` profiles: SimGrid
SMPI's own behaviour, study-quirks.md section 4) a send of strictly fewer than
``eager_threshold`` bytes is *detached* (it completes when posted), and the flow of every
message, small or large, starts only once it is matched, at max(send posted, receive
posted). Message sizes come from the payloads (``wire_bytes`` if the
payload has it, else ``nbytes``); payloads are shared by reference, never copied.

Time accounting: each rank's timeline is split into the named phases the algorithm opens
(``with comm.phase("inter"):``), ``compute`` (time spent in reductions) and ``other``; the
parts add up to the rank's finish time exactly.
"""

from __future__ import annotations

import gc
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import simpy

from ..errors import DeadlockError, SimCollectiveError
from ..network.engine import Network, SimEnvironment

__all__ = ["Comm", "Request", "World", "RunResult", "run_ranks", "payload_bytes"]


def payload_bytes(payload) -> int:
    """Wire size in bytes of a payload: ``nbytes`` (a sparse stream's ``nbytes`` is its wire
    size), else ``wire_bytes``, else the sum over a list or tuple; ``None`` is 0 bytes."""
    try:
        return int(payload.nbytes)  # arrays, symbolic arrays, sparse streams (wire size)
    except AttributeError:
        pass
    try:
        return int(payload.wire_bytes)
    except AttributeError:
        pass
    if payload is None:
        return 0
    if isinstance(payload, (list, tuple)):
        return sum(payload_bytes(p) for p in payload)
    raise SimCollectiveError(f"cannot size a payload of type {type(payload).__name__}")


def _done_event(env, value=None) -> simpy.Event:
    """An event that is already processed: a process yielding it continues at once,
    without a trip through the event queue (used for zero-time completions; built
    without ``Event.__init__``'s frame: a free reduction makes one per message)."""
    ev = _new(simpy.Event)
    ev.env = env
    ev.callbacks = None
    ev._ok = True
    ev._value = value
    return ev


_new = object.__new__


class _Join(simpy.Event):
    """The event of a posting (:meth:`World.post`: a ``sendrecv``, or a :class:`Request`):
    it fires when ``left`` reaches 0, with value ``val`` (the received payload; None for
    a send).

    A posted receive waiting for its message is this event itself (in ``World._posted``;
    once matched, the message holds it in ``rjoin``); a rendezvous send holds it in
    ``join``. Each counts ``left`` down by one at completion; the poster holds one more
    count while it posts, so that a posting that completes at once lets the caller
    continue without a trip through the event queue. (``t_post``: the posting time,
    set for traces only.)"""

    __slots__ = ("left",)
    val = None  # (a class default: set on the instance only when a payload is received)


class Request(_Join):
    """A pending non-blocking send or receive as a SimPy event; its value is the received
    payload (None for a send)."""

    __slots__ = ()


class _Message:
    """A message (the runtime's bookkeeping; not a SimPy event): ``owner`` the source and
    ``peer`` the destination (world ranks), the payload, ``rjoin`` the receiver's event
    once matched, ``join`` the sender's event while a rendezvous send waits, and its
    flow. Complete (its sender may go on) at posting if ``eager``, else when it has
    ``arrived``. Built without an ``__init__`` frame (see :meth:`World.post`)."""

    __slots__ = ("owner", "peer", "tag", "cid", "nbytes", "t_post", "payload", "rjoin", "join", "eager", "flow",
                 "arrived")

    def describe(self, world) -> str:
        name = world._comm_names[self.cid]
        return f"send of {self.nbytes} B to rank {self.peer} (tag {self.tag}, {name}) not yet received"


@dataclass
class _RankState:
    gpu: object
    start: float = 0.0
    stack: list = field(default_factory=list)
    mark: float = 0.0
    acc: dict = field(default_factory=lambda: defaultdict(float))
    finish: float | None = None
    output: object = None
    spans: list | None = None


class World:
    """Shared state of one simulation: ranks, mailboxes, network, statistics."""

    def __init__(self, env: SimEnvironment, network: Network, placement: list, profile, trace: bool = False):
        self.env = env
        self.network = network
        self.profile = profile
        self.placement = list(placement)
        self.size = len(self.placement)
        self.trace = trace
        self.ranks = [_RankState(gpu=g, spans=[] if trace else None) for g in self.placement]
        # Mailboxes, one dict each for the whole world, keyed by (receiver, source, tag,
        # communicator) (world ranks): messages sent but not yet received, and receives
        # posted but not yet matched. A key holds its one waiting item itself, or a deque
        # of several in posting order (MPI's matching order); a key with none is absent.
        # (One flat dict instead of per-rank dicts of deques: fewer lookups and no deque
        # made and dropped per message on the hot path.)
        self._unexpected: dict = {}
        self._posted: dict = {}
        self._comm_ids: dict[tuple, int] = {}
        self._comm_names: list[str] = []
        self._eager = profile.eager_threshold
        # SMPI: small sends are detached (complete at post) when < threshold, and no flow
        # starts before its message is matched
        self._smpi = getattr(profile, "small_messages", "eager") == "smpi"
        # whether reductions take no simulated time (no compute rates in the profile)
        self.free_sums = profile.dense_bytes_per_second <= 0 and profile.sparse_elements_per_second <= 0
        self.messages = 0
        self.message_bytes = 0
        self.servers = [network.router.graph.nodes[g].get("server") for g in self.placement]
        # bound once (on every message's path; the world <-> bound method cycle lives as
        # long as the world)
        self._transfer = network.transfer
        self._schedule = env.schedule
        self._on_arrival = self._arrived
        self.shared: dict = {}   # per-simulation memo the algorithms may share (Comm.shared)
        # one members tuple shared by every rank's world communicator (a tuple per rank
        # would be P^2 integers at P ranks, scattered in memory: at 1024 ranks every
        # message's lookup of its peers touched a different 8 KiB tuple and its own ints)
        self._world_members = tuple(range(self.size))
        self._members: dict = {self._world_members: self._world_members}  # canonical tuples

    def comm_id(self, members: tuple, name: str) -> int:
        cid = self._comm_ids.get(members)
        if cid is None:
            cid = self._comm_ids[members] = len(self._comm_names)
            self._comm_names.append(name)
        return cid

    def _spans(self, m: _Message, send: bool, recv_join) -> None:
        """Trace: the spans of a completed send (``send``) and/or receive (``recv_join``:
        the receiver's event, with its posting time) of message ``m``."""
        now = self.env._now
        if recv_join is not None:
            self.ranks[m.peer].spans.append(("recv", "p2p", recv_join.t_post, now, {"peer": m.owner, "bytes": m.nbytes}))
        if send:
            self.ranks[m.owner].spans.append(("send", "p2p", m.t_post, now, {"peer": m.peer, "bytes": m.nbytes}))

    # -- point to point (world ranks) -------------------------------------------------
    def post(self, cls, me: int, cid: int, dst, payload, tag, src, rtag) -> _Join:
        """Post, for world rank ``me`` on communicator ``cid``, a send of ``payload`` to
        world rank ``dst`` with ``tag`` (unless ``dst`` is None), then a receive from
        world rank ``src`` with ``rtag`` (unless ``src`` is None). Returns the event
        (of class ``cls``) that fires when both are complete, with the received payload.

        The one implementation of matching for ``isend``, ``irecv`` and ``sendrecv``,
        written out in one frame (it runs once or twice per message). Mailboxes are keyed
        by (receiver, source, tag, communicator): ``_unexpected`` holds messages sent
        and not yet received, ``_posted`` the events of receives not yet matched."""
        env = self.env
        now = env._now
        ev = _new(cls)  # (without Event.__init__'s frame)
        ev.env = env
        ev.callbacks = []
        trace = self.trace
        if trace:
            ev.t_post = now
        left = 1  # this posting
        if dst is not None:
            try:
                nbytes = int(payload.nbytes)  # arrays, symbolic arrays, sparse streams
            except AttributeError:
                nbytes = payload_bytes(payload)
            m = _new(_Message)
            m.owner, m.peer, m.tag, m.cid, m.nbytes = me, dst, tag, cid, nbytes
            m.payload, m.flow, m.arrived = payload, None, False
            if trace:
                m.t_post = now
            if self._smpi:
                m.eager = eager = nbytes < self._eager  # detached: completes at post
            else:
                m.eager = eager = nbytes <= self._eager
            self.messages += 1
            self.message_bytes += nbytes
            key = (dst, me, tag, cid)
            rj = self._posted.pop(key, None)
            if rj is not None:  # a receive waits: match it (the first posted)
                if rj.__class__ is deque:
                    queue = rj
                    rj = queue.popleft()
                    self._posted[key] = queue if len(queue) > 1 else queue[0]
                m.rjoin = rj
                m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m)
            else:
                m.rjoin = None
                unexpected = self._unexpected
                box = unexpected.get(key)
                if box is None:
                    unexpected[key] = m
                elif box.__class__ is deque:
                    box.append(m)
                else:
                    unexpected[key] = deque((box, m))
                if eager and not self._smpi:
                    m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m)
            if eager:  # complete now
                m.join = None
                if trace:
                    self._spans(m, True, None)
            else:
                m.join = ev
                left += 1
        if src is not None:
            key = (me, src, rtag, cid)
            m = self._unexpected.pop(key, None)
            if m is not None:  # a message waits: match it (the first sent)
                if m.__class__ is deque:
                    queue = m
                    m = queue.popleft()
                    self._unexpected[key] = queue if len(queue) > 1 else queue[0]
                if m.arrived:  # complete now
                    ev.val = m.payload
                    if trace:
                        self._spans(m, False, ev)
                else:
                    m.rjoin = ev
                    left += 1
                    if m.flow is None:  # start the rendezvous flow
                        m.flow = self._transfer(self.placement[src], self.placement[me], m.nbytes, self._on_arrival, m)
            else:
                left += 1
                posted = self._posted
                box = posted.get(key)
                if box is None:
                    posted[key] = ev
                elif box.__class__ is deque:
                    box.append(ev)
                else:
                    posted[key] = deque((box, ev))
        left -= 1  # posting done
        if left:
            ev.left = left
        else:  # completed while posting: the caller continues without a trip through the queue
            ev._ok, ev._value, ev.callbacks = True, ev.val, None
        return ev

    def _arrived(self, flow) -> None:
        """The engine's callback: a message's last byte arrived."""
        m = flow.tag
        flow.tag = m.flow = None  # break the message <-> flow cycle
        m.arrived = True
        j = m.rjoin
        if self.trace:
            self._spans(m, m.join is not None, j)
        if j is not None:  # matched: its receive completes
            m.rjoin = None  # (cycles broken: freed by reference counting)
            j.val = m.payload
            j.left -= 1  # (Event.succeed at 0, without its two frames)
            if not j.left:
                j._ok = True
                j._value = j.val
                self._schedule(j)
        j = m.join
        if j is not None:  # a rendezvous send completes
            m.join = None
            j.left -= 1
            if not j.left:
                j._ok = True
                j._value = j.val
                self._schedule(j)

    # -- running ------------------------------------------------------------------------
    def _launch(self, rank: int, main, args) -> None:
        """Start rank ``rank``'s process: ``main(comm, *args)`` itself is the SimPy process
        (no wrapper generator: every resumption of a rank would pass through its frame);
        the rank's finish is recorded by a callback on the process's completion."""
        st = self.ranks[rank]
        comm = Comm(self, self._world_members, rank, "world")
        body = main(comm, *args)
        if st.start > 0:  # --timing study: the rank leaves the barrier this much later
            body = self._delayed(st, body)
        env = self.env

        def finished(proc):
            if proc._ok:
                st.output = proc._value
                now = env._now
                self._attribute(st, now)
                st.finish = now

        env.process(body).callbacks.append(finished)

    def _delayed(self, st: _RankState, body):
        yield self.env.timeout(st.start)
        st.mark = self.env.now
        return (yield from body)

    def _attribute(self, st: _RankState, now: float) -> None:
        name = st.stack[-1][0] if st.stack else "other"
        st.acc[name] += now - st.mark
        st.mark = now

    def _pending(self, rank: int) -> list:
        """What ``rank`` waits for that can never come once the simulation has stopped:
        receives never matched and rendezvous sends whose receive was never posted."""
        waits = [f"recv from rank {src} (tag {tag}, {self._comm_names[cid]})"
                 for (dst, src, tag, cid), box in self._posted.items() if dst == rank for _ in _waiting(box)]
        waits += [m.describe(self) for box in self._unexpected.values() for m in _waiting(box)
                  if m.owner == rank and not m.eager]
        return waits

    def blocked_report(self) -> list:
        lines = []
        for r, st in enumerate(self.ranks):
            if st.finish is None:
                waits = "; ".join(self._pending(r)) or "nothing (waits on an event that never fires)"
                lines.append(f"rank {r} waits for: {waits}")
        return lines


def _waiting(box) -> list:
    """The items waiting in one mailbox entry (World._posted / World._unexpected), in order."""
    return list(box) if box.__class__ is deque else [box]


class Comm:
    """A communicator: a rank's handle on a group of world ranks (``members``)."""

    __slots__ = ("world", "members", "rank", "size", "cid", "name", "_me", "_index")

    def __init__(self, world: World, members: tuple, rank: int, name: str):
        self.world = world
        # every rank's communicator over the same ranks shares one members tuple (see
        # World._world_members: per-rank copies cost cache misses on every message)
        self.members = members = world._members.setdefault(members, members)
        self.rank = rank
        self.size = len(members)
        self.name = name
        self.cid = world.comm_id(members, name)
        self._me = members[rank]
        self._index = None

    # -- primitives ---------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.world.env.now

    @property
    def profile(self):
        return self.world.profile

    def _check_peer(self, peer: int, what: str) -> int:
        if not (0 <= peer < self.size):
            raise SimCollectiveError(f"rank {self.rank} of {self.name}: {what} rank {peer} is out of range 0..{self.size - 1}")
        return self.members[peer]

    def isend(self, dst: int, payload, tag=0) -> Request:
        """Non-blocking send; yield it (or ``wait`` it) to wait for completion."""
        if not 0 <= dst < self.size:
            self._check_peer(dst, "destination")
        return self.world.post(Request, self._me, self.cid, self.members[dst], payload, tag, None, None)

    def irecv(self, src: int, tag=0) -> Request:
        """Non-blocking receive; the event's value is the payload."""
        if not 0 <= src < self.size:
            self._check_peer(src, "source")
        return self.world.post(Request, self._me, self.cid, None, None, None, self.members[src], tag)

    send = isend
    recv = irecv

    def sendrecv(self, dst: int, payload, src: int, tag=0, recvtag=None):
        """Send to ``dst`` and receive from ``src`` at once; value: the received payload."""
        size = self.size
        if not (0 <= dst < size and 0 <= src < size):
            self._check_peer(dst, "destination")
            self._check_peer(src, "source")
        members = self.members
        return self.world.post(_Join, self._me, self.cid, members[dst], payload, tag, members[src],
                               tag if recvtag is None else recvtag)

    def waitall(self, reqs, value_index=None):
        """An event that fires when all ``reqs`` are done; value: list of their values
        (or only the value of ``reqs[value_index]``)."""
        env = self.world.env
        reqs = list(reqs)
        if all(q.callbacks is None for q in reqs):
            vals = [q.value for q in reqs]
            return _done_event(env, vals if value_index is None else vals[value_index])
        done = simpy.Event(env)
        left = [len(reqs)]

        def one(_ev):
            left[0] -= 1
            if left[0] == 0:
                vals = [q.value for q in reqs]
                done.succeed(vals if value_index is None else vals[value_index])

        for q in reqs:
            if q.callbacks is None:  # already processed
                one(q)
            else:
                q.callbacks.append(one)
        return done

    def waitany(self, reqs):
        """An event that fires when one of ``reqs`` is done; value: ``(index, value)`` of
        the first done (lowest index among simultaneous ones)."""
        env = self.world.env
        reqs = list(reqs)
        for i, q in enumerate(reqs):
            if q.processed:
                ev = simpy.Event(env)
                ev.succeed((i, q.value))
                return ev
        done = simpy.Event(env)

        def one(ev):
            if not done.triggered:
                done.succeed((reqs.index(ev), ev.value))

        for q in reqs:
            q.callbacks.append(one)
        return done

    # -- compute and phases ---------------------------------------------------------------
    def compute(self, seconds: float, value=None):
        """Spend ``seconds`` computing (accounted as ``compute``); value: ``value``."""
        world = self.world
        env = world.env
        if seconds <= 0:
            return _done_event(env, value)
        st = world.ranks[self._me]
        world._attribute(st, env.now)
        ev = env.timeout(seconds, value)
        t0 = env.now

        def close(_ev):
            st.acc["compute"] += env.now - st.mark
            st.mark = env.now
            if world.trace:
                st.spans.append(("compute", "compute", t0, env.now, {}))

        ev.callbacks.insert(0, close)
        return ev

    def delay(self, seconds: float, value=None):
        """Let ``seconds`` pass in the current phase (a fixed latency the algorithm models
        itself, e.g. NCCL's launch and per-hop latencies); value: ``value``."""
        env = self.world.env
        if seconds <= 0:
            return _done_event(env, value)
        return env.timeout(seconds, value)

    @property
    def graph(self):
        """The hardware graph the ranks run on (read-only use)."""
        return self.world.network.router.graph

    def gpu(self, rank: int | None = None):
        """Graph node id of the GPU of ``rank`` of this communicator (default: this rank)."""
        return self.world.placement[self.members[self.rank if rank is None else rank]]

    def add(self, a, b, op=None):
        """Reduce two payloads (``a + b`` or ``op(a, b)``) and pay the profile's compute time:
        dense sums at ``dense_bytes_per_second`` (3 x bytes), sparse merges at
        ``sparse_elements_per_second`` (a.nnz + b.nnz; a scatter-add of a sparse stream
        into a dense one: the sparse one's nnz). Value: the result."""
        result = a + b if op is None else op(a, b)
        if isinstance(result, np.ndarray):
            result.flags.writeable = False  # payloads are immutable: shared by reference
        world = self.world
        if world.free_sums:  # the profile gives reductions no time: nothing to work out
            ev = _new(simpy.Event)  # (_done_event inline: once per message of a reduction)
            ev.env = world.env
            ev.callbacks = None
            ev._ok = True
            ev._value = result
            return ev
        prof = world.profile
        if hasattr(a, "nnz") and hasattr(b, "nnz"):
            if a.is_dense != b.is_dense:  # scatter-add of the sparse one into the dense one
                cost = prof.sparse_merge_time(b.nnz if a.is_dense else a.nnz)
            else:
                cost = prof.sparse_merge_time(a.nnz + b.nnz)
        else:
            cost = prof.dense_sum_time(payload_bytes(result))
        return self.compute(cost, result)

    @contextmanager
    def phase(self, name: str):
        """Attribute the time inside the ``with`` block to the phase ``name``."""
        world = self.world
        st = world.ranks[self._me]
        world._attribute(st, world.env.now)
        st.stack.append((name, world.env.now))
        try:
            yield
        finally:
            world._attribute(st, world.env.now)
            _, t0 = st.stack.pop()
            if world.trace:
                st.spans.append((name, "phase", t0, world.env.now, {}))

    @property
    def shared(self) -> dict:
        """A dict private to this simulation, the same for every rank and communicator
        (for results several ranks compute identically; see ``_sparse_common``)."""
        return self.world.shared

    def server(self, rank: int | None = None):
        """The server (physical node) id of ``rank`` of this communicator (default: this rank)."""
        return self.world.servers[self.members[self.rank if rank is None else rank]]

    # -- sub-communicators ----------------------------------------------------------------
    def sub(self, ranks, name: str) -> "Comm":
        """The communicator of the given ranks of this one (must include this rank)."""
        members = tuple(self.members[r] for r in ranks)
        return Comm(self.world, members, members.index(self._me), name)

    def groups(self, group_size: int):
        """``(intra, inter)``: consecutive groups of ``group_size`` ranks, and the ranks with
        the same index in their group (the logical two-level hierarchy)."""
        L = group_size
        if L < 1 or self.size % L:
            raise SimCollectiveError(f"group size {L} does not divide {self.size} ranks")
        g, l = divmod(self.rank, L)
        intra = self.sub(range(g * L, g * L + L), f"group {g}")
        inter = self.sub(range(l, self.size, L), f"local {l}")
        return intra, inter

    def node_comm(self) -> "Comm":
        """Ranks of this communicator on the same server (physical node)."""
        servers = self.world.servers
        mine = servers[self._me]
        return self.sub([r for r, w in enumerate(self.members) if servers[w] == mine], f"server {mine}")

    def local_comm(self) -> "Comm":
        """Ranks of this communicator with the same index within their server as this rank
        (the i-th rank of every server, in rank order)."""
        servers = self.world.servers
        seen: dict = {}
        index = []
        for w in self.members:
            s = servers[w]
            index.append(seen.get(s, 0))
            seen[s] = index[-1] + 1
        mine = index[self.rank]
        return self.sub([r for r, i in enumerate(index) if i == mine], f"local {mine}")

    def global_index(self, rank: int | None = None) -> int:
        """World rank of ``rank`` (default: this rank)."""
        return self.members[self.rank if rank is None else rank]


@dataclass
class RunResult:
    """What a simulation measured. Times in seconds, sizes in bytes."""

    makespan: float
    finish: list
    outputs: list
    phases: dict            # time per phase of the last rank to finish; sums to makespan
    phases_max: dict        # per phase, the largest time any rank spent in it
    messages: int
    message_bytes: int
    links: list             # LinkStats of every resource that carried data
    bytes_by_link_type: dict
    wall_s: float
    events: int
    flows: int
    recomputations: int
    spans: list | None = None
    placement: list | None = None
    link_series: dict | None = None  # traces: {link name: [(t, bytes/s), ...]}
    starts: list | None = None       # each rank's start (0 unless timing="study")
    cpu_s: float = 0.0               # CPU time of this process over wall_s's span


def _run(env, net, world, progress) -> None:
    if progress is None:
        env.run()
        return
    # step the kernel ourselves and report simulated time and messages now and then
    step, steps = env.step, 0
    while True:
        try:
            step()
        except simpy.core.EmptySchedule:
            break
        steps += 1
        if steps % 20000 == 0:
            progress(env.now, net.flows_completed, world.messages)
    progress(env.now, net.flows_completed, world.messages)


#: ``timing`` of :func:`run_ranks`: "simultaneous" (every rank starts at 0) or "study"
TIMINGS = ("simultaneous", "study")


def barrier_offsets(net: Network, placement, profile) -> list:
    """The study's start offsets (study-quirks.md section 5): after SMPI's linear barrier
    rank r leaves route latency(rank 0 -> r) x the latency factor at 0 bytes after rank
    0 (no bandwidth term)."""
    k = profile.latency_factor(0)
    return [net.route(placement[0], g).latency * k if g != placement[0] else 0.0 for g in placement]


def run_ranks(graph, placement, main, args_for_rank, profile, routing: str = "first", trace: bool = False,
              progress=None, network: Network | None = None, timing: str = "simultaneous") -> RunResult:
    """Run ``main(comm, *args_for_rank(rank))`` on every rank; return the measurements.

    ``timing="study"``: rank r starts at its barrier-exit offset (:func:`barrier_offsets`),
    the reported time (``makespan``) is the largest (finish - own start) over ranks, and
    phases are measured from each rank's start (``finish`` stays absolute).

    Raises :class:`~simcollective.errors.DeadlockError` naming the blocked ranks if some
    rank never finishes, and :class:`~simcollective.errors.SimCollectiveError` if a
    message was sent but never received.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    env = SimEnvironment()
    net = network if network is not None else Network(env, profile.effective_graph(graph), profile, routing)
    net.env = env
    world = World(env, net, placement, profile, trace)
    if timing not in TIMINGS:
        raise SimCollectiveError(f"timing {timing!r} is not one of: {', '.join(TIMINGS)}")
    starts = barrier_offsets(net, world.placement, profile) if timing == "study" else [0.0] * world.size
    for st, t in zip(world.ranks, starts):
        st.start = st.mark = t
    if trace:
        net.series = {}
    for r in range(world.size):
        world._launch(r, main, args_for_rank(r))
    # The cyclic garbage collector would walk every live object of a large simulation
    # again and again (quadratic in the number of ranks); the runtime breaks its own
    # reference cycles, so it is paused while the simulation runs.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        _run(env, net, world, progress)
    finally:
        if gc_was_enabled:
            gc.enable()
    blocked = world.blocked_report()
    if blocked:
        raise DeadlockError(f"deadlock at t={env.now:.9g} s: " + " | ".join(blocked))
    leftovers = list(world._unexpected)  # (receiver, source, tag, communicator)
    if leftovers:
        r, src, tag, cid = min(leftovers, key=lambda key: key[0])  # the lowest receiving rank
        raise SimCollectiveError(
            f"{len(leftovers)} message queue(s) never received, e.g. rank {src} -> rank {r} "
            f"(tag {tag}, {world._comm_names[cid]})")
    finish = [st.finish for st in world.ranks]
    elapsed = [f - t for f, t in zip(finish, starts)]
    makespan = max(elapsed) if elapsed else 0.0
    last = max(range(world.size), key=lambda r: (elapsed[r], -r))
    phases = dict(world.ranks[last].acc)
    phases_max: dict = {}
    for st in world.ranks:
        for k, v in st.acc.items():
            phases_max[k] = max(phases_max.get(k, 0.0), v)
    links = net.link_stats()
    by_type: dict = defaultdict(int)
    for ls in links:
        by_type[ls.link_type] += ls.bytes
    spans = [st.spans for st in world.ranks] if trace else None
    return RunResult(
        makespan=makespan, finish=finish, outputs=[st.output for st in world.ranks], phases=phases,
        phases_max=phases_max, messages=world.messages, message_bytes=world.message_bytes, links=links,
        bytes_by_link_type=dict(by_type), wall_s=time.perf_counter() - t0, events=next(env._eid),
        flows=net.flows_started, recomputations=net.recomputations, spans=spans, placement=list(placement),
        link_series=net.link_series() if trace else None, starts=starts, cpu_s=time.process_time() - c0,
    )
