"""The world of one simulation: every rank's state, the mailboxes, and message matching."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from ..network.calendar import mark_processed, trigger_now
from ..network.engine import Network, SimEnvironment
from .comm import Comm
from .compute import ComputeModel
from .messages import Gather, Message, Posting, payload_bytes, waiting

__all__ = ["World", "RankState"]

_new = object.__new__


@dataclass
class RankState:
    """One rank's timeline: its phase stack and time per phase, finish and output."""

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

    def __init__(self, env: SimEnvironment, network: Network, placement: list, compute: ComputeModel,
                 trace: bool = False, profile=None):
        self.env = env
        self.network = network
        self.compute_model = compute
        self.profile = profile  # the run's profile, for the algorithms (the runtime reads none of it)
        self.placement = list(placement)
        self.size = len(self.placement)
        self.trace = trace
        self.ranks = [RankState(gpu=g, spans=[] if trace else None) for g in self.placement]
        # The mailboxes, one dict for the whole world, keyed by (receiver, source, tag,
        # communicator) (world ranks): messages sent but not yet received, or receives
        # posted but not yet matched (never both under one key: each matches the first of
        # the other kind). A key holds its one waiting item itself, or a deque of several in
        # posting order (MPI's matching order); a key with none is absent. (One flat dict
        # instead of per-rank dicts of deques, or one for each kind: one lookup to post
        # what nothing waits for, two to match, and no deque made and dropped per message.)
        self._boxes: dict = {}
        self._comm_ids: dict[tuple, int] = {}
        self.comm_names: list[str] = []
        model = network.model
        self._eager = model.eager_threshold
        # SMPI: small sends are detached (complete at post) when < threshold, and no flow
        # starts before its message is matched
        self._smpi = model.small_messages == "smpi"
        # whether reductions take no simulated time (no compute rates in the profile)
        self.free_sums = compute.free
        self.messages = 0
        self.message_bytes = 0
        self.servers = [network.router.graph.nodes[g].get("server") for g in self.placement]
        # bound once (on every message's path; the world <-> bound method cycle lives as
        # long as the world)
        self._transfer = network.transfer
        self._trigger = trigger_now(env)
        self._on_arrival = self._arrived
        # every Gather's callbacks (processed once each: nothing appends to them)
        self._gather_callbacks = (self._gathered,)
        self.shared: dict = {}   # per-simulation memo the algorithms may share (Comm.shared)
        # one members tuple shared by every rank's world communicator (a tuple per rank
        # would be P^2 integers at P ranks, scattered in memory: at 1024 ranks every
        # message's lookup of its peers would touch a different 8 KiB tuple and its ints)
        self._world_members = tuple(range(self.size))
        self._members: dict = {self._world_members: self._world_members}  # canonical tuples

    def canonical(self, members: tuple) -> tuple:
        """The one tuple of these members every communicator over them shares."""
        if members is self._world_members:   # every rank's world communicator: no P-long hash
            return members
        return self._members.setdefault(members, members)

    def comm_id(self, members: tuple, name: str, context=None) -> int:
        """The id of the communicator over ``members`` (a :meth:`canonical` tuple) in message
        space ``context`` (None: the world's; communicators over the same ranks in one context
        share an id)."""
        # NOTE: keyed by the canonical tuple's identity (it lives as long as the world), not
        # its value: hashing P members for each of P ranks costs P^2 at P ranks
        key = id(members) if context is None else (context, id(members))
        cid = self._comm_ids.get(key)
        if cid is None:
            cid = self._comm_ids[key] = len(self.comm_names)
            self.comm_names.append(name)
        return cid

    def _spans(self, m: Message, send: bool, recv_join) -> None:
        """Trace: the spans of a completed send (``send``) and/or receive (``recv_join``:
        the receiver's event, with its posting time) of message ``m``."""
        now = self.env.now
        if recv_join is not None:
            self.ranks[m.key[0]].spans.append(("recv", "p2p", recv_join.t_post, now, {"peer": m.key[1], "bytes": m.nbytes}))
        if send:
            self.ranks[m.key[1]].spans.append(("send", "p2p", m.t_post, now, {"peer": m.key[0], "bytes": m.nbytes}))

    # -- point to point (world ranks) -------------------------------------------------
    def post(self, cls, me: int, cid: int, dst, payload, tag, src, rtag, via=None) -> Posting:
        """Post, for world rank ``me`` on communicator ``cid``, a send of ``payload`` to
        world rank ``dst`` with ``tag`` (unless ``dst`` is None; :meth:`post_send`), then a
        receive from world rank ``src`` with ``rtag`` (unless ``src`` is None;
        :meth:`post_recv`). Returns the event (of class ``cls``) that fires when both are
        complete, with the received payload: the one implementation of ``isend``, ``irecv``
        and ``sendrecv``."""
        ev = _new(cls)  # (Event.__init__'s two stores, without its frame)
        ev.env = self.env
        ev.callbacks = []
        ev.left = 1  # this posting
        if dst is not None:
            self.post_send(me, cid, dst, payload, tag, via, ev)
        if src is not None:
            self.post_recv(me, cid, src, rtag, ev)
        left = ev.left - 1  # posting done
        if left:
            ev.left = left
        else:  # completed while posting: the caller continues without a trip through the queue
            mark_processed(ev, ev.val)
        return ev

    def post_recv(self, me: int, cid: int, src: int, tag, ev: Posting) -> None:
        """Post, for world rank ``me`` on communicator ``cid``, a receive from world rank
        ``src`` with ``tag``: the message's arrival counts ``ev.left`` down and sets
        ``ev.val`` to its payload. ``ev.left`` is one higher until then; unchanged if the
        message had arrived already (``ev.val`` set). A :class:`Gather` keeps the matched
        message in ``ev.msgs[tag]``."""
        if self.trace:
            ev.t_post = self.env.now
        key = (me, src, tag, cid)
        boxes = self._boxes
        # NOTE: matching written out here and in post_send (each runs once per message: one
        # frame on purpose)
        m = boxes.setdefault(key, ev)
        if m is ev:                      # nothing sent yet: the receive waits
            ev.left += 1
            return
        if m.__class__ is Message:
            del boxes[key]
        elif m.__class__ is deque:
            if m[0].__class__ is not Message:   # receives wait: this one after them
                m.append(ev)
                ev.left += 1
                return
            queue = m
            m = queue.popleft()
            if len(queue) == 1:
                boxes[key] = queue[0]
        else:                            # a receive waits: this one after it
            boxes[key] = deque((m, ev))
            ev.left += 1
            return
        if ev.__class__ is Gather:
            ev.msgs[tag] = m
        if m.arrived:  # the first message sent has arrived: complete now
            ev.val = m.payload
            if self.trace:
                self._spans(m, False, ev)
        else:
            m.rjoin = ev
            ev.left += 1
            if m.flow is None:  # start the rendezvous flow
                m.flow = self._transfer(self.placement[src], self.placement[me], m.nbytes, self._on_arrival, m, m.via)

    def post_send(self, me: int, cid: int, dst: int, payload, tag, via, join: Posting) -> None:
        """Post, for world rank ``me`` on communicator ``cid``, a send of ``payload`` to world
        rank ``dst`` with ``tag`` (its flow crosses the nodes ``via`` when given, see
        :meth:`Network.transfer`). A rendezvous send holds one count of ``join`` (its
        poster's event, or a count of sends: its ``left`` is one higher) until it completes;
        an eager one completes at once."""
        try:
            nbytes = int(payload.nbytes)  # arrays, symbolic arrays, sparse streams
        except AttributeError:
            nbytes = payload_bytes(payload)
        m = _new(Message)  # (one store per field: a tuple assignment would build and unpack a tuple)
        m.key = key = (dst, me, tag, cid)
        m.nbytes = nbytes
        m.payload = payload
        m.flow = None
        m.arrived = False
        m.via = via
        trace = self.trace
        if trace:
            m.t_post = self.env.now
        smpi = self._smpi   # SMPI: detached (complete at post) below the threshold
        eager = nbytes < self._eager if smpi else nbytes <= self._eager
        self.messages += 1
        self.message_bytes += nbytes
        boxes = self._boxes
        rj = boxes.setdefault(key, m)   # (matching written out, see post_recv)
        if rj is m:                      # nothing waits: the message waits
            rj = None
        elif rj.__class__ is Message:    # messages wait: this one after them
            boxes[key] = deque((rj, m))
            rj = None
        elif rj.__class__ is deque:
            if rj[0].__class__ is Message:
                rj.append(m)
                rj = None
            else:
                queue = rj
                rj = queue.popleft()
                if len(queue) == 1:
                    boxes[key] = queue[0]
        else:
            del boxes[key]
        if rj is not None:  # a receive waits: match it (the first posted)
            m.rjoin = rj
            if rj.__class__ is Gather:
                rj.msgs[tag] = m
            m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m, via)
        else:
            m.rjoin = None
            if eager and not smpi:
                m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m, via)
        if eager:  # complete now
            m.join = None
            if trace:
                self._spans(m, True, None)
        else:
            m.join = join
            join.left += 1

    def post_recvs(self, done: Posting, me: int, cid: int, src: int, tags: tuple) -> None:
        """Post, for world rank ``me`` on communicator ``cid``, a receive from world rank
        ``src`` of each of ``tags``, completing ``done`` (a pending event) with the list of
        their payloads in the order of ``tags`` (also in ``done.val``): what ``waitall`` over
        one receive per tag gives, completing at the same place in the event queue.
        ``done.left``: 1 until then, 0 if every message was in (``done`` is then processed).

        Its receives share one :class:`Gather`, triggered by the last message to arrive
        where that message's own receive would have been; processing it triggers ``done``,
        where ``waitall``'s event would have been. The receives before the last are not
        events (their processing only counted down ``waitall``'s count)."""
        g = _new(Gather)
        g.env = self.env
        g.callbacks = self._gather_callbacks
        g.done, g.tags, g.msgs = done, tags, {}
        g.left = 1  # this posting
        for tag in tags:
            self.post_recv(me, cid, src, tag, g)
        left = g.left - 1  # posting done
        if left:
            g.left = left
            done.left = 1
        else:  # every message was in: the caller continues at once (as waitall's would)
            msgs = g.msgs
            done.left = 0
            done.val = [msgs[tag].payload for tag in tags]
            mark_processed(done, done.val)

    def _gathered(self, g) -> None:
        """A :class:`Gather` processed: its event completes with the payloads."""
        msgs, done = g.msgs, g.done
        done.val = [msgs[tag].payload for tag in g.tags]
        self._trigger(done, done.val)

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
                self._trigger(j, j.val)
        j = m.join
        if j is not None:  # a rendezvous send completes
            m.join = None
            j.left -= 1
            if not j.left:
                self._trigger(j, j.val)

    # -- running ------------------------------------------------------------------------
    def launch(self, rank: int, main, args) -> None:
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
            if proc.ok:
                st.output = proc.value
                now = env.now
                self.attribute(st, now)
                st.finish = now

        env.process(body).callbacks.append(finished)

    def _delayed(self, st: RankState, body):
        yield self.env.timeout(st.start)
        st.mark = self.env.now
        return (yield from body)

    def attribute(self, st: RankState, now: float) -> None:
        name = st.stack[-1][0] if st.stack else "other"
        st.acc[name] += now - st.mark
        st.mark = now

    def _pending(self, rank: int) -> list:
        """What ``rank`` waits for that can never come once the simulation has stopped:
        receives never matched and rendezvous sends whose receive was never posted."""
        boxes = self._boxes.items()
        waits = [f"recv from rank {src} (tag {tag}, {self.comm_names[cid]})"
                 for (dst, src, tag, cid), box in boxes if dst == rank for item in waiting(box)
                 if item.__class__ is not Message]
        waits += [m.describe(self.comm_names) for _, box in boxes for m in waiting(box)
                  if m.__class__ is Message and m.key[1] == rank and m.join is not None]
        return waits

    def blocked_report(self) -> list:
        lines = []
        for r, st in enumerate(self.ranks):
            if st.finish is None:
                waits = "; ".join(self._pending(r)) or "nothing (waits on an event that never fires)"
                lines.append(f"rank {r} waits for: {waits}")
        return lines

    def unreceived_report(self) -> str | None:
        """The one-line error when messages were sent but never received, else None."""
        # (receiver, source, tag, communicator) of the messages waiting
        leftovers = [key for key, box in self._boxes.items() if waiting(box)[0].__class__ is Message]
        if not leftovers:
            return None
        r, src, tag, cid = min(leftovers, key=lambda key: key[0])  # the lowest receiving rank
        return (f"{len(leftovers)} message queue(s) never received, e.g. rank {src} -> rank {r} "
                f"(tag {tag}, {self.comm_names[cid]})")
