"""Per-rank building blocks of the channel-parallel (NCCL-style) algorithms: payloads sized
as a protocol sends them (:class:`Wire`), the call's latency spent up front, the pipeline
fill spent after the flows, every channel's ring as this rank sees it, and the pipelined
chains along those rings (per-rank generator code: call with ``yield from``)."""

from __future__ import annotations

import math

from ..data.symbolic import cut
from .dense import split

__all__ = ["Wire", "Wires", "WireCut", "wire_bytes", "cut_bytes", "spend_latency", "spend_fill", "run_call", "ring_links",
           "ring_chains"]


class Wire:
    """A payload that occupies ``factor`` times its data size on the wire.

    ``nbytes`` is the wire size (what the runtime sends); ``data`` the payload itself.
    Sums of two wires are wires (``Comm.add`` works unchanged).
    """

    __slots__ = ("data", "factor", "nbytes")

    def __init__(self, data, factor: float):
        self.data = data
        self.factor = factor
        # (wire_bytes written out: this runs once per message; math.ceil gives an int)
        nbytes = data.nbytes
        if factor != 1.0:
            self.nbytes = math.ceil(nbytes * factor)
        else:
            self.nbytes = nbytes if nbytes.__class__ is int else int(nbytes)

    def __add__(self, other):
        return Wire(self.data + other.data, self.factor)

    def __len__(self):
        return len(self.data)


class Wires:
    """Several payloads sent as one message, each ``factor`` times its data size on the wire.

    ``data`` is the list of payloads; ``nbytes`` the message's wire size, the sum of each
    payload's as :class:`Wire` rounds it (the same bytes as a list of Wires, in one object).
    """

    __slots__ = ("data", "nbytes")

    def __init__(self, data: list, factor: float):
        self.data = data
        self.nbytes = sum(wire_bytes(a.nbytes, factor) for a in data)


class WireCut:
    """Pieces of ``x`` sent as one message, cut when read: ``data`` is the pieces ``x[a:b]``
    for each ``(a, b)`` of ``bounds`` (:func:`~simcollective.data.symbolic.cut`: a list, or
    one :class:`~simcollective.data.symbolic.SymbolicPieces` for size-only data), ``nbytes``
    what :class:`Wires` of those pieces at ``factor`` would be (:func:`cut_bytes`; pass it
    as ``nbytes`` when known).

    A message posted long before it is received (a rendezvous send waiting for its
    stream's receive) holds its ranges instead of its slices (payloads are immutable: the
    receiver's cut is the sender's)."""

    __slots__ = ("x", "bounds", "nbytes")

    def __init__(self, x, bounds: tuple, factor: float, nbytes: int | None = None):
        self.x = x
        self.bounds = bounds
        self.nbytes = cut_bytes(bounds, x.dtype.itemsize, factor) if nbytes is None else nbytes

    @property
    def data(self):
        return cut(self.x, self.bounds)


def wire_bytes(nbytes: int, factor: float) -> int:
    """The wire size of a payload of ``nbytes``: ``factor`` times it, rounded up (:class:`Wire`)."""
    return int(math.ceil(nbytes * factor)) if factor != 1.0 else int(nbytes)


def cut_bytes(bounds: tuple, itemsize: int, factor: float) -> int:
    """The wire bytes of the pieces ``[a, b)`` of ``bounds`` of ``itemsize``-byte elements
    (:func:`wire_bytes` of each)."""
    return sum(wire_bytes((b - a) * itemsize, factor) for a, b in bounds)


def spend_latency(comm, seconds: float):
    """Spend the call's latency once, in the phase ``latency``."""
    with comm.phase("latency"):
        yield comm.delay(seconds)


def spend_fill(comm, fraction: float, start: float):
    """Spend the pipeline fill the flows do not carry: ``fraction`` of the time since
    ``start`` (the flows' bandwidth time), in the phase ``pipeline-fill``; none if 0."""
    if fraction:
        with comm.phase("pipeline-fill"):
            yield comm.delay(fraction * (comm.now - start))


def ring_links(comm, orders: list, positions: list, channels: int) -> list:
    """Per channel ``c < channels``, this rank's ``(position, order, next, previous)`` in the
    ring ``orders[c]`` (ranks in ring order; ``positions[c]`` maps a rank to its place)."""
    P, r = comm.size, comm.rank
    out = []
    for c in range(channels):
        order = orders[c]
        pos = positions[c][r]
        out.append((pos, order, order[(pos + 1) % P], order[(pos - 1) % P]))
    return out


def run_call(comm, x, plan, body, *args):
    """One call of a channel-parallel algorithm on this rank: nothing to move on one rank;
    otherwise the call's latency (``plan.latency_s``), then ``body(comm, x, plan, *args)``,
    then the pipeline fill (``plan.fill`` of the body's time). Returns the body's result."""
    if comm.size == 1:
        return [x]
    yield from spend_latency(comm, plan.latency_s)
    start = comm.now
    out = yield from body(comm, x, plan, *args)
    yield from spend_fill(comm, plan.fill, start)
    return out


def ring_chains(comm, x, plan, channels: int, root: int, chunks, reduce: bool):
    """Per channel, a pipelined chain along the channel's ring, all channels at once; returns
    the result parts in order.

    ``plan`` gives the rings (``orders``, ``positions``) and the wire factor (``wire``); ``x``
    is cut into ``channels`` ranges, range ``c`` into ``chunks(nbytes)`` chunks. Broadcast
    (``reduce`` False, phase ``broadcast``): from the root (root, next, ..., the rank before
    the root); reduce (phase ``reduce``): to the root (the rank after the root first, the root
    last, each adding its data). Ticks are global: chunk j reaches chain place v at tick
    j + v, so at tick T a rank receives chunk T - v of every channel where it is at place v
    and passes chunk T - v - 1 on; the messages of one tick are all posted together on every
    rank (channels whose chains put the rank at different places cannot wait on each other).
    Messages carry ``plan.wire`` times their data (:class:`Wire`)."""
    P, f = comm.size, plan.wire
    chans = []
    for c, (rng, (pos, _, nxt, prv)) in enumerate(zip(split(x, channels),
                                                      ring_links(comm, plan.orders, plan.positions, channels))):
        rpos = plan.positions[c][root]
        v = (pos - rpos) % P if not reduce else (pos - rpos - 1) % P   # place in the chain
        chans.append((v, nxt, prv, split(rng, chunks(int(rng.nbytes)))))
    K = max(len(ch[3]) for ch in chans)
    out = [list(ch[3]) for ch in chans]
    vias = [plan.via(c, comm.rank) for c in range(len(chans))]   # the NICs of this rank's sends
    isend, irecv = comm.isend, comm.irecv
    with comm.phase("reduce" if reduce else "broadcast"):
        for t in range(K + P):
            sends, recvs, where = [], [], []
            for c, (v, nxt, prv, pieces) in enumerate(chans):
                k = len(pieces)
                j = t - v
                if v > 0 and 0 <= j < k:
                    recvs.append(irecv(prv, (c, j)))
                    where.append((c, j))
                if v < P - 1 and 0 <= j - 1 < k:
                    sends.append(isend(nxt, Wire(out[c][j - 1], f), (c, j - 1), vias[c]))
            if not sends and not recvs:
                continue
            msgs = yield comm.waitall(recvs + sends)
            for (c, j), g in zip(where, msgs):
                out[c][j] = (yield comm.add(out[c][j], g.data)) if reduce else g.data
    return [piece for per_channel in out for piece in per_channel]
