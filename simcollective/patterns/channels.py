"""Per-rank building blocks of the channel-parallel (NCCL-style) algorithms: payloads sized
as a protocol sends them (:class:`Wire`), the call's latency spent up front, the pipeline
fill spent after the flows, every channel's ring as this rank sees it, and the pipelined
chains along those rings (per-rank generator code: call with ``yield from``)."""

from __future__ import annotations

import math

__all__ = ["Wire", "spend_latency", "spend_fill", "ring_links", "ring_chains"]


class Wire:
    """A payload that occupies ``factor`` times its data size on the wire.

    ``nbytes`` is the wire size (what the runtime sends); ``data`` the payload itself.
    Sums of two wires are wires (``Comm.add`` works unchanged).
    """

    __slots__ = ("data", "factor", "nbytes")

    def __init__(self, data, factor: float):
        self.data = data
        self.factor = factor
        self.nbytes = int(math.ceil(data.nbytes * factor)) if factor != 1.0 else int(data.nbytes)

    def __add__(self, other):
        return Wire(self.data + other.data, self.factor)

    def __len__(self):
        return len(self.data)


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


def ring_chains(comm, chans: list, wire: float, reduce: bool):
    """Per channel, a pipelined chain along the channel's ring, all channels at once.

    ``chans``: per channel ``(v, next, previous, chunks)``: this rank's place ``v`` in the
    chain (0 = the first), its neighbours, and its chunks of the channel's range. Broadcast
    (``reduce`` False): the first rank's chunks go down the chain; reduce: each rank adds
    its chunks to what comes from the one before and passes the sums on, the last keeps
    them. Ticks are global: chunk j reaches chain place v at tick j + v, so at tick T a rank
    receives chunk T - v of every channel where it is at place v and passes chunk T - v - 1
    on; the messages of one tick are all posted together on every rank (channels whose
    chains put the rank at different places cannot wait on each other). Returns the chunks
    per channel; messages carry ``wire`` times their data (:class:`Wire`)."""
    P = comm.size
    K = max(len(ch[3]) for ch in chans)
    out = [list(ch[3]) for ch in chans]
    for t in range(K + P):
        sends, recvs, where = [], [], []
        for c, (v, nxt, prv, chunks) in enumerate(chans):
            k = len(chunks)
            j = t - v
            if v > 0 and 0 <= j < k:
                recvs.append(comm.irecv(prv, tag=(c, j)))
                where.append((c, j))
            if v < P - 1 and 0 <= j - 1 < k:
                sends.append(comm.isend(nxt, Wire(out[c][j - 1], wire), tag=(c, j - 1)))
        if not sends and not recvs:
            continue
        msgs = yield comm.waitall(recvs + sends)
        for (c, j), g in zip(where, msgs):
            out[c][j] = (yield comm.add(out[c][j], g.data)) if reduce else g.data
    return out
