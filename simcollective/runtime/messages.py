"""The runtime's point-to-point bookkeeping: payload sizes, postings and messages."""

from __future__ import annotations

from collections import deque
from functools import partial
from heapq import heappop, heappush

import simpy

from ..errors import SimCollectiveError
from ..network.calendar import mark_processed, trigger_now

__all__ = ["payload_bytes", "Posting", "Request", "Watched", "Gather", "Message", "Completions", "waiting"]

_new = object.__new__


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


class Posting(simpy.Event):
    """The event of a posting (:meth:`World.post`: a ``sendrecv``, or a :class:`Request`):
    it fires when ``left`` reaches 0, with value ``val`` (the received payload; None for
    a send).

    A posted receive waiting for its message is this event itself (in the world's
    mailbox of posted receives; once matched, the message holds it in ``rjoin``); a
    rendezvous send holds it in ``join``. Each counts ``left`` down by one at completion;
    the poster holds one more count while it posts, so that a posting that completes at
    once lets the caller continue without a trip through the event queue. (``t_post``:
    the posting time, set for traces only.)"""

    __slots__ = ("left",)
    val = None  # (a class default: set on the instance only when a payload is received)


class Request(Posting):
    """A pending non-blocking send or receive as a SimPy event; its value is the received
    payload (None for a send)."""

    __slots__ = ()


class Watched(Request):
    """A receive posted by :class:`Completions`: its ``order`` of addition and ``key``, read
    by the callback its completion runs (one bound method for all, instead of a
    ``partial`` made per receive)."""

    __slots__ = ("order", "key")


class Gather(Posting):
    """The receives of :meth:`World.post_recvs` as one count: ``left`` the messages still
    to arrive; ``msgs`` the matched messages by tag, ``tags`` their order; ``done`` the
    event it completes once processed."""

    __slots__ = ("done", "tags", "msgs")


class Message:
    """A message (the runtime's bookkeeping; not a SimPy event): its mailbox ``key``
    (receiver, source, tag, communicator: world ranks and the communicator's id), the
    payload, ``rjoin`` the receiver's event once matched, ``join`` the sender's event while
    a rendezvous send waits (None for an eager send: complete at posting), and its flow
    (through the nodes ``via``, or the shortest path when None); ``arrived`` once its last
    byte is in. Built without an ``__init__`` frame (see :meth:`World.post_send`)."""

    __slots__ = ("key", "nbytes", "t_post", "payload", "rjoin", "join", "flow", "arrived", "via")

    def describe(self, comm_names) -> str:
        receiver, _, tag, cid = self.key
        return f"send of {self.nbytes} B to rank {receiver} (tag {tag}, {comm_names[cid]}) not yet received"


def waiting(box) -> list:
    """The items waiting in one mailbox entry (a world's posted receives or unexpected
    messages), in order."""
    return list(box) if box.__class__ is deque else [box]


class Completions:
    """Requests to react to one at a time, in the order they complete (:meth:`Comm.completions`).

    ``add(req, key)`` watches a request (a :class:`Request`, or any event, e.g. a
    ``waitall``); ``next()`` is an event whose value is ``(key, value)`` of one completed
    request, each returned once: the earliest added among those already complete, else the
    first to complete. That is ``waitany`` over the requests not yet returned in the order
    they were added (same choice, same events scheduled), at a cost per request instead of
    per request and call: a completed request waits in a heap keyed by its order of
    addition. ``len()``: the requests not yet returned. ``recv(src, tag, key)`` is
    ``add(comm.irecv(src, tag), key)``; ``recv_all(src, tags, key)`` is ``add(comm.waitall(
    [comm.irecv(src, tag) for tag in tags]), key)`` (the same choices and times, without an
    event per receive: :meth:`World.post_recvs`).

    A program that reacts to arrivals seldom waits for one send in particular: ``send``
    posts a send without a request of its own (no event per send through the queue, nothing
    kept per send), and ``sent()`` is the one event for all of them."""

    __slots__ = ("env", "ready", "waiter", "added", "left", "_trigger", "_post_recv", "_post_send", "_post_recvs",
                 "_me", "_cid", "_members", "_size", "_check", "_sends", "_callbacks")

    def __init__(self, world, me: int, cid: int, members: tuple, check):
        """The completions of world rank ``me`` on the communicator ``cid`` over ``members``
        (world ranks); ``check(rank, what)`` raises for a rank out of range."""
        self.env = env = world.env
        self._trigger = trigger_now(env)   # (succeed: the same queue entry, without its two frames)
        self._post_recv, self._post_send, self._post_recvs = world.post_recv, world.post_send, world.post_recvs
        self._me, self._cid, self._members, self._size, self._check = me, cid, members, len(members), check
        self._sends = sends = _new(Posting)   # counts the sends running, plus one until sent()
        sends.env = env
        sends.callbacks = []
        sends.left = 1
        self.ready: list = []   # (order of addition, key, value) of the completed, not yet returned
        self.waiter = None      # next()'s event while nothing completed is waiting
        self.added = 0
        self.left = 0
        # the callbacks of every receive it posts (each processed once: nothing appends to
        # them; the cycle through the bound method lives as long as the simulation)
        self._callbacks = (self._completed,)

    def __len__(self) -> int:
        return self.left

    def add(self, req, key) -> None:
        order = self.added
        self.added = order + 1
        self.left += 1
        if req.callbacks is None:  # already processed
            heappush(self.ready, (order, key, req.value))
        else:
            req.callbacks.append(partial(self._complete, order, key))   # (a partial: no frame of its own)

    def recv(self, src: int, tag, key) -> None:
        """Post a receive from ``src`` with ``tag`` and watch it with ``key``."""
        if not 0 <= src < self._size:
            self._check(src, "source")
        req = self._watched(key)
        self._post_recv(self._me, self._cid, self._members[src], tag, req)
        if not req.left:   # its message was in: complete now
            req.callbacks = None
            heappush(self.ready, (req.order, key, req.val))

    def recv_all(self, src: int, tags: tuple, key) -> None:
        """Post a receive from ``src`` of each of ``tags`` and watch them as one request
        with ``key``, whose value is the list of their payloads in the order of ``tags``."""
        if not 0 <= src < self._size:
            self._check(src, "source")
        if len(set(tags)) < len(tags):
            raise SimCollectiveError(f"recv_all from rank {src}: {tags} repeats a tag")
        req = self._watched(key)
        self._post_recvs(req, self._me, self._cid, self._members[src], tags)
        if not req.left:   # every message was in: complete now
            heappush(self.ready, (req.order, key, req.val))

    def _watched(self, key) -> Watched:
        """A pending receive's event, added with ``key``; its ``left`` 0 (the world's
        posting counts it up while a message is awaited)."""
        req = _new(Watched)   # (Event.__init__'s two stores, without its frame)
        req.env = self.env
        req.callbacks = self._callbacks
        req.left = 0
        req.key = key
        req.order = order = self.added
        self.added = order + 1
        self.left += 1
        return req

    def _completed(self, req: Watched) -> None:
        """A receive of :meth:`recv` or :meth:`recv_all` complete (``req.val``: its value)."""
        waiter = self.waiter
        if waiter is not None:  # next() waits: the first to complete is the one
            self.waiter = None
            self._trigger(waiter, (req.key, req.val))
        else:
            heappush(self.ready, (req.order, req.key, req.val))

    def _complete(self, order: int, key, ev) -> None:
        value = ev.value
        waiter = self.waiter
        if waiter is not None:  # next() waits: the first to complete is the one
            self.waiter = None
            self._trigger(waiter, (key, value))
        else:
            heappush(self.ready, (order, key, value))

    def send(self, dst: int, payload, tag=0, via=None) -> None:
        """Send ``payload`` to ``dst`` as :meth:`Comm.isend` does, counted by :meth:`sent`
        instead of returning a request."""
        members = self._members
        if not 0 <= dst < self._size:
            self._check(dst, "destination")
        self._post_send(self._me, self._cid, members[dst], payload, tag, via, self._sends)

    def sent(self) -> simpy.Event:
        """The event that fires once every send of :meth:`send` is complete (call it once,
        after the last send)."""
        sends = self._sends
        sends.left -= 1
        if not sends.left:
            mark_processed(sends, None)
        return sends

    def next(self) -> simpy.Event:
        ev = _new(simpy.Event)   # (Event.__init__'s two stores, without its frame)
        ev.env = self.env
        ev.callbacks = []
        self.left -= 1
        if self.ready:
            _, key, value = heappop(self.ready)
            self._trigger(ev, (key, value))
        else:
            self.waiter = ev
        return ev
