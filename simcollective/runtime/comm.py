"""The communicator: a rank's handle on a group of ranks, and its primitives (point to
point, waits, compute time, phases, sub-communicators)."""

from __future__ import annotations

import operator
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import simpy

from ..errors import SimCollectiveError
from ..network.calendar import processed_event
from .messages import Completions, Posting, Request, payload_bytes

if TYPE_CHECKING:
    from .world import World

__all__ = ["Comm"]


class Comm:
    """A communicator: a rank's handle on a group of world ranks (``members``)."""

    __slots__ = ("world", "members", "rank", "size", "cid", "name", "context", "_me", "_index")

    def __init__(self, world: World, members: tuple, rank: int, name: str, context=None):
        self.world = world
        # every rank's communicator over the same ranks shares one members tuple (see
        # World._world_members: per-rank copies cost cache misses on every message)
        self.members = members = world.canonical(members)
        self.rank = rank
        self.size = len(members)
        self.name = name
        # ``context``: the message space (None: the world's). Communicators of different
        # contexts never match each other's messages, even over the same ranks; the
        # sub-communicators an algorithm makes inherit its context.
        self.context = context
        self.cid = world.comm_id(members, name, context)
        self._me = members[rank]
        self._index = None

    # -- primitives ---------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.world.env.now

    @property
    def profile(self):
        """The run's profile as given to :func:`run_ranks` (for algorithms that read figures
        of their own from it, e.g. NCCL's constants)."""
        return self.world.profile

    @property
    def compute_model(self):
        """The :class:`~simcollective.runtime.compute.ComputeModel` of the run."""
        return self.world.compute_model

    def _check_peer(self, peer: int, what: str) -> int:
        if not (0 <= peer < self.size):
            raise SimCollectiveError(f"rank {self.rank} of {self.name}: {what} rank {peer} is out of range 0..{self.size - 1}")
        return self.members[peer]

    def isend(self, dst: int, payload, tag=0, via=None) -> Request:
        """Non-blocking send; yield it (or ``wait`` it) to wait for completion. ``via``: None
        (the shortest route), or the two graph nodes ``(out, in)`` the message must cross in
        that order (the NICs a channel leaves this node and enters the peer's by)."""
        if not 0 <= dst < self.size:
            self._check_peer(dst, "destination")
        return self.world.post(Request, self._me, self.cid, self.members[dst], payload, tag, None, None, via)

    def irecv(self, src: int, tag=0) -> Request:
        """Non-blocking receive; the event's value is the payload."""
        if not 0 <= src < self.size:
            self._check_peer(src, "source")
        return self.world.post(Request, self._me, self.cid, None, None, None, self.members[src], tag)

    send = isend
    recv = irecv

    def sendrecv(self, dst: int, payload, src: int, tag=0, recvtag=None, via=None):
        """Send to ``dst`` (through ``via``, see :meth:`isend`) and receive from ``src`` at
        once; value: the received payload."""
        size = self.size
        if not (0 <= dst < size and 0 <= src < size):
            self._check_peer(dst, "destination")
            self._check_peer(src, "source")
        members = self.members
        return self.world.post(Posting, self._me, self.cid, members[dst], payload, tag, members[src],
                               tag if recvtag is None else recvtag, via)

    def waitall(self, reqs, value_index=None):
        """An event that fires when all ``reqs`` are done; value: list of their values
        (or only the value of ``reqs[value_index]``)."""
        env = self.world.env
        reqs = list(reqs)
        if all(q.callbacks is None for q in reqs):
            vals = [q.value for q in reqs]
            return processed_event(env, vals if value_index is None else vals[value_index])
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

    def completions(self) -> Completions:
        """A :class:`~simcollective.runtime.messages.Completions`: requests to react to in
        the order they complete (``waitany`` over a changing set of requests, without
        rescanning the set at every wait), receives posted and watched in one call
        (:meth:`Completions.recv`, and :meth:`Completions.recv_all` for several messages from
        one peer as one request), and sends whose completions are only counted
        (:meth:`Completions.send`, :meth:`Completions.sent`)."""
        return Completions(self.world, self._me, self.cid, self.members, self._check_peer)

    # -- compute and phases ---------------------------------------------------------------
    def compute(self, seconds: float, value=None):
        """Spend ``seconds`` computing (accounted as ``compute``); value: ``value``."""
        world = self.world
        env = world.env
        if seconds <= 0:
            return processed_event(env, value)
        st = world.ranks[self._me]
        world.attribute(st, env.now)
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
            return processed_event(env, value)
        return env.timeout(seconds, value)

    @property
    def graph(self):
        """The hardware graph the ranks run on (read-only use)."""
        return self.world.network.router.graph

    def gpu(self, rank: int | None = None):
        """Graph node id of the GPU of ``rank`` of this communicator (default: this rank)."""
        return self.world.placement[self.members[self.rank if rank is None else rank]]

    def gpus(self) -> tuple:
        """Graph node ids of every rank's GPU, in rank order: one tuple that every rank of
        this communicator shares (where a list of ``gpu(r)`` per rank costs P^2 at P ranks)."""
        placement = self.world.placement
        return self.memo(("gpus", self.cid), lambda: tuple(placement[w] for w in self.members))

    def memo(self, key, make):
        """``make()``'s value for ``key``, made once per simulation: for what every rank
        computes alike (a plan, the communicator's GPUs), kept in :attr:`shared`."""
        shared = self.world.shared
        value = shared.get(key, shared)
        if value is shared:
            value = shared[key] = make()
        return value

    def add(self, a, b, op=None):
        """Reduce two payloads (``a + b`` or ``op(a, b)``) and pay the profile's compute time:
        dense sums at ``dense_bytes_per_second`` (3 x bytes), sparse merges at
        ``sparse_elements_per_second`` (a.nnz + b.nnz; a scatter-add of a sparse stream
        into a dense one: the sparse one's nnz). Value: the result."""
        # (:meth:`sum`'s lines written out: a call costs about 1,000 instructions a sum)
        result = a + b if op is None else op(a, b)
        if isinstance(result, np.ndarray):
            result.flags.writeable = False  # payloads are immutable: shared by reference
        world = self.world
        if world.free_sums:  # the profile gives reductions no time: nothing to work out
            return processed_event(world.env, result)
        prof = world.compute_model
        if hasattr(a, "nnz") and hasattr(b, "nnz"):
            if a.is_dense != b.is_dense:  # scatter-add of the sparse one into the dense one
                cost = prof.sparse_merge_time(b.nnz if a.is_dense else a.nnz)
            else:
                cost = prof.sparse_merge_time(a.nnz + b.nnz)
        else:
            cost = prof.dense_sum_time(payload_bytes(result))
        return self.compute(cost, result)

    def sum_now(self, like, op=None):
        """Where the profile gives reductions no time (:meth:`add` is then done at once), the
        function a pattern takes the sums of payloads like ``like`` with, at once (the same
        run, without yielding an event that is already done); None where they take time.
        A NumPy array's sum is made read-only (:meth:`sum`); any other payload's sum is a
        new object already, taken with its own ``+`` (a call of :meth:`sum` costs about
        1,000 instructions a sum, 4 % of the size-only ring's recording) or with ``op``."""
        if not self.world.free_sums:
            return None
        if op is None and not isinstance(like, np.ndarray):
            return operator.add
        return self.sum if op is None else partial(self.sum, op=op)

    def sum(self, a, b, op=None):
        """The result :meth:`add` gives (``a + b`` or ``op(a, b)``), without its compute
        time: for profiles whose reductions take none (:meth:`sum_now`)."""
        result = a + b if op is None else op(a, b)
        if isinstance(result, np.ndarray):
            result.flags.writeable = False  # payloads are immutable: shared by reference
        return result

    @contextmanager
    def phase(self, name: str):
        """Attribute the time inside the ``with`` block to the phase ``name``."""
        world = self.world
        st = world.ranks[self._me]
        world.attribute(st, world.env.now)
        st.stack.append((name, world.env.now))
        try:
            yield
        finally:
            world.attribute(st, world.env.now)
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
        return Comm(self.world, members, members.index(self._me), name, self.context)

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
