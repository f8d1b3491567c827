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


# NOTE: World.post writes these two out (it runs once or twice per message: one frame on
# purpose); World.post_recvs, once per group of receives, calls them.
def _take(boxes: dict, key):
    """The first item waiting in ``boxes`` under ``key`` (None if none), taken out."""
    item = boxes.pop(key, None)
    if item.__class__ is deque:
        queue = item
        item = queue.popleft()
        boxes[key] = queue if len(queue) > 1 else queue[0]
    return item


def _put(boxes: dict, key, item) -> None:
    """``item`` waits in ``boxes`` under ``key``, after those already there."""
    box = boxes.get(key)
    if box is None:
        boxes[key] = item
    elif box.__class__ is deque:
        box.append(item)
    else:
        boxes[key] = deque((box, item))


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
        # Mailboxes, one dict each for the whole world, keyed by (receiver, source, tag,
        # communicator) (world ranks): messages sent but not yet received, and receives
        # posted but not yet matched. A key holds its one waiting item itself, or a deque
        # of several in posting order (MPI's matching order); a key with none is absent.
        # (One flat dict instead of per-rank dicts of deques: fewer lookups and no deque
        # made and dropped per message on the hot path.)
        self._unexpected: dict = {}
        self._posted: dict = {}
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
            self.ranks[m.peer].spans.append(("recv", "p2p", recv_join.t_post, now, {"peer": m.owner, "bytes": m.nbytes}))
        if send:
            self.ranks[m.owner].spans.append(("send", "p2p", m.t_post, now, {"peer": m.peer, "bytes": m.nbytes}))

    # -- point to point (world ranks) -------------------------------------------------
    def post(self, cls, me: int, cid: int, dst, payload, tag, src, rtag, via=None, counted=None) -> Posting | None:
        """Post, for world rank ``me`` on communicator ``cid``, a send of ``payload`` to
        world rank ``dst`` with ``tag`` (unless ``dst`` is None; its flow crosses the nodes
        ``via`` when given, see :meth:`Network.transfer`), then a receive from world rank
        ``src`` with ``rtag`` (unless ``src`` is None). Returns the event
        (of class ``cls``) that fires when both are complete, with the received payload.
        ``counted``: for a send alone (``src`` None), a :class:`Posting` that counts the send
        instead of an event of its own (its ``left`` is one higher until the send completes);
        returns None.

        The one implementation of matching for ``isend``, ``irecv`` and ``sendrecv``,
        written out in one frame (it runs once or twice per message). Mailboxes are keyed
        by (receiver, source, tag, communicator): ``_unexpected`` holds messages sent
        and not yet received, ``_posted`` the events of receives not yet matched."""
        env = self.env
        trace = self.trace
        if trace:
            now = env.now
        if counted is None:
            ev = _new(cls)  # (Event.__init__'s two stores, without its frame)
            ev.env = env
            ev.callbacks = []
            if trace:
                ev.t_post = now
        left = 1  # this posting
        if dst is not None:
            try:
                nbytes = int(payload.nbytes)  # arrays, symbolic arrays, sparse streams
            except AttributeError:
                nbytes = payload_bytes(payload)
            m = _new(Message)  # (one store per field: a tuple assignment would build and unpack a tuple)
            m.owner = me
            m.peer = dst
            m.tag = tag
            m.cid = cid
            m.nbytes = nbytes
            m.payload = payload
            m.flow = None
            m.arrived = False
            m.via = via
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
                if rj.__class__ is Gather:
                    rj.msgs[tag] = m
                m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m, via)
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
                    m.flow = self._transfer(self.placement[me], self.placement[dst], nbytes, self._on_arrival, m, via)
            if eager:  # complete now
                m.join = None
                if trace:
                    self._spans(m, True, None)
            elif counted is None:
                m.join = ev
                left += 1
            else:
                m.join = counted
                counted.left += 1
        if counted is not None:  # (a counted send alone: nothing waits for an event of its own)
            return None
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
                        m.flow = self._transfer(self.placement[src], self.placement[me], m.nbytes, self._on_arrival, m,
                                                m.via)
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
            mark_processed(ev, ev.val)
        return ev

    def post_recvs(self, cls, me: int, cid: int, src: int, tags: tuple):
        """Post, for world rank ``me`` on communicator ``cid``, a receive from world rank
        ``src`` of each of ``tags``, as one event (of class ``cls``) whose value is the list
        of their payloads in the order of ``tags``: what ``waitall`` over one receive per
        tag gives, completing at the same place in the event queue.

        Its receives share one :class:`Gather`, triggered by the last message to arrive
        where that message's own receive would have been; processing it triggers the
        returned event, where ``waitall``'s would have been. The receives before the last
        are not events (their processing only counted down ``waitall``'s count)."""
        env = self.env
        done = _new(cls)
        done.env = env
        done.callbacks = []
        g = _new(Gather)
        g.env = env
        g.callbacks = [self._gathered]
        g.done, g.tags, g.msgs = done, tags, {}
        if self.trace:
            g.t_post = env.now
        msgs = g.msgs
        left = 1  # this posting
        unexpected = self._unexpected
        for tag in tags:
            key = (me, src, tag, cid)
            m = _take(unexpected, key)
            if m is None:   # nothing sent yet: post the receive
                left += 1
                _put(self._posted, key, g)
            elif m.arrived:
                msgs[tag] = m
                if self.trace:
                    self._spans(m, False, g)
            else:
                msgs[tag] = m
                m.rjoin = g
                left += 1
                if m.flow is None:  # start the rendezvous flow
                    m.flow = self._transfer(self.placement[src], self.placement[me], m.nbytes, self._on_arrival, m,
                                            m.via)
        left -= 1  # posting done
        if left:
            g.left = left
        else:  # every message was in: the caller continues at once (as waitall's would)
            mark_processed(done, [msgs[tag].payload for tag in tags])
        return done

    def _gathered(self, g) -> None:
        """A :class:`Gather` processed: its event completes with the payloads."""
        msgs = g.msgs
        self._trigger(g.done, [msgs[tag].payload for tag in g.tags])

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
        waits = [f"recv from rank {src} (tag {tag}, {self.comm_names[cid]})"
                 for (dst, src, tag, cid), box in self._posted.items() if dst == rank for _ in waiting(box)]
        waits += [m.describe(self.comm_names) for box in self._unexpected.values() for m in waiting(box)
                  if m.owner == rank and not m.eager]
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
        leftovers = list(self._unexpected)  # (receiver, source, tag, communicator)
        if not leftovers:
            return None
        r, src, tag, cid = min(leftovers, key=lambda key: key[0])  # the lowest receiving rank
        return (f"{len(leftovers)} message queue(s) never received, e.g. rank {src} -> rank {r} "
                f"(tag {tag}, {self.comm_names[cid]})")
