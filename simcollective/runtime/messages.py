"""The runtime's point-to-point bookkeeping: payload sizes, postings and messages."""

from __future__ import annotations

from collections import deque

import simpy

from ..errors import SimCollectiveError

__all__ = ["payload_bytes", "Posting", "Request", "Message", "waiting"]


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


class Message:
    """A message (the runtime's bookkeeping; not a SimPy event): ``owner`` the source and
    ``peer`` the destination (world ranks), the payload, ``rjoin`` the receiver's event
    once matched, ``join`` the sender's event while a rendezvous send waits, and its
    flow (through the nodes ``via``, or the shortest path when None). Complete (its sender may go on) at posting if ``eager``, else when it has
    ``arrived``. Built without an ``__init__`` frame (see :meth:`World.post`)."""

    __slots__ = ("owner", "peer", "tag", "cid", "nbytes", "t_post", "payload", "rjoin", "join", "eager", "flow",
                 "arrived", "via")

    def describe(self, comm_names) -> str:
        name = comm_names[self.cid]
        return f"send of {self.nbytes} B to rank {self.peer} (tag {self.tag}, {name}) not yet received"


def waiting(box) -> list:
    """The items waiting in one mailbox entry (a world's posted receives or unexpected
    messages), in order."""
    return list(box) if box.__class__ is deque else [box]
