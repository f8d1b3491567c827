"""The event calendar: when flows activate and complete, and the SimPy wake-ups.

One SimPy wake-up per distinct due time, not one per flow: activations and completions
are grouped by their exact due time, with a heap of the distinct times. Completion
entries superseded by a rate change (their version is old) are skipped lazily, and only
the earliest valid completion has a wake-up.

This module is the only place that touches SimPy's private fields: :class:`SimEnvironment`
(a callback at an exact time; the events due now kept apart from the heap) and the event
shortcuts the runtime takes on every message (:func:`processed_event`,
:func:`mark_processed`, :func:`trigger_now`, and :func:`event_count`). Each says in a NOTE why it bends SimPy's rule that an event is
triggered by ``succeed`` and processed by the environment's ``step``.
"""

from __future__ import annotations

import heapq
from collections import deque

import simpy
from simpy.core import NORMAL, EmptySchedule, Infinity, StopSimulation
from simpy.events import EventPriority

__all__ = ["SimEnvironment", "Calendar", "processed_event", "mark_processed", "trigger_now", "event_count"]

_new = object.__new__


def processed_event(env, value=None) -> simpy.Event:
    """An event already processed with ``value``: a process yielding it continues at
    once, without a trip through the event queue (zero-time completions)."""
    # NOTE: SimPy's way (Event(env).succeed(value)) costs an __init__ frame, a succeed
    # frame and a trip through the queue; a free reduction makes one such event per
    # message. A process resumes at once on an event whose callbacks are None (what
    # step() leaves behind), so the fields step() would have set are set here directly.
    ev = _new(simpy.Event)
    ev.env = env
    ev.callbacks = None
    ev._ok = True
    ev._value = value
    return ev


def mark_processed(event, value) -> None:
    """Make ``event`` (pending, nobody waits on it yet) processed with ``value`` in place."""
    # NOTE: a posting that completes while it is posted returns its event already
    # processed (as processed_event does), so that the caller continues at once; nothing
    # is in its callbacks yet, so skipping the queue changes no order.
    event._ok = True
    event._value = value
    event.callbacks = None


def trigger_now(env):
    """``trigger(event, value)``: ``event.succeed(value)`` in ``env`` (processed at the
    current time, after what is already due now), bound once per environment."""
    # NOTE: Event.succeed checks the event is pending and calls env.schedule: two frames
    # on every message's completion. The runtime triggers each event once (it counts its
    # completions down to 0 first), so the check is not needed; the entry is exactly the
    # one SimEnvironment.schedule(event) makes (due now, normal priority, the next id).
    append, eid = env._due.append, env._eid

    def trigger(event, value) -> None:
        event._ok = True
        event._value = value
        append((next(eid), event))

    return trigger


def event_count(env) -> int:
    """How many events ``env`` has scheduled so far (call once, at the end of a run)."""
    # NOTE: SimPy numbers events with a private counter and has no public count; reading
    # it consumes one number, harmless once the run is over.
    return next(env._eid)


class SimEnvironment(simpy.Environment):
    """A SimPy environment that can also run a callback at an exact absolute time, and
    keeps the events due now apart from its heap.

    ``env.timeout(t - env.now)`` would land at ``now + (t - now)``, which float rounding
    can move off ``t``; the engine needs completions to happen exactly at the computed
    instants so that simultaneous ones batch together.

    The events of normal priority scheduled for the current time (a succeeded event, a
    timeout of 0: most events of a run, every message's completion among them) wait in a
    first-in first-out queue, in the order of their ids, instead of SimPy's heap (each
    push and pop of which costs a comparison of entries per level: a wake-up that
    completes thousands of flows at one instant puts thousands of entries of that instant
    on it). :meth:`step` takes the smaller of the heap's first entry and the queue's first
    by SimPy's own order, (time, priority, id): the events are processed in exactly the
    order SimPy's heap alone gives.
    """

    def __init__(self, initial_time=0):
        super().__init__(initial_time)
        self._due: deque = deque()   # (id, event) of the events due now, normal priority, in id order

    def call_at(self, when: float, callback) -> None:
        # NOTE: Environment.schedule takes a delay, not a time (see the class docstring):
        # the entry is pushed at ``when`` itself.
        event = simpy.Event(self)
        event._ok = True
        event._value = None
        event.callbacks.append(callback)
        heapq.heappush(self._queue, (when, NORMAL, next(self._eid), event))

    def schedule(self, event, priority=NORMAL, delay=0) -> None:
        # NOTE: SimPy's schedule pushes every event on its heap; those due now at normal
        # priority go to ``_due`` (the class docstring), with the id the heap entry would have
        if delay == 0 and priority == NORMAL:
            self._due.append((next(self._eid), event))
        else:
            heapq.heappush(self._queue, (self._now + delay, priority, next(self._eid), event))

    def peek(self) -> float:
        if self._due:
            return self._now
        return self._queue[0][0] if self._queue else Infinity

    def step(self) -> None:
        # NOTE: SimPy's step with the choice between ``_due`` and the heap (the class
        # docstring); what follows the choice is SimPy's own
        due, queue = self._due, self._queue
        if due and not (queue and queue[0][0] == self._now and (queue[0][1] < NORMAL or (
                queue[0][1] == NORMAL and queue[0][2] < due[0][0]))):
            event = due.popleft()[1]    # (due now: the time does not move)
        else:
            try:
                self._now, _, _, event = heapq.heappop(queue)
            except IndexError:
                raise EmptySchedule from None
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            event.callbacks = callbacks[callbacks.index(callback) + 1:]
            self.schedule(event, EventPriority(-1))
            raise
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc


class Calendar:
    """Activations and completions by exact due time, with one wake-up per time."""

    def __init__(self, env: SimEnvironment, wakeup):
        self.env = env
        self.wakeup = wakeup
        self.buckets: dict = {}
        self.times: list = []
        self.ends: dict = {}
        self.end_times: list = []
        self.end_count = 0  # entries in ends, superseded ones included
        self.wakeups: set = set()

    def wake_at(self, when: float) -> None:
        if when not in self.wakeups:
            self.wakeups.add(when)
            self.env.call_at(when, self.wakeup)

    def new_bucket(self, when: float) -> list:
        """The list of activations due at ``when`` (callers append to ``buckets[when]``
        directly when it exists: this is on every message's path)."""
        bucket = self.buckets[when] = []
        heapq.heappush(self.times, when)
        self.wake_at(when)
        return bucket

    def pop_activations(self, now: float) -> list:
        """The buckets of activations due by ``now`` (a list of lists)."""
        times, buckets, heappop = self.times, self.buckets, heapq.heappop
        out = []
        while times and times[0] <= now:
            out.append(buckets.pop(heappop(times)))
        return out

    def schedule_end(self, f, when: float) -> None:
        """Put ``f`` (at its current version) among the completions due at ``when``."""
        due = self.ends.get(when)
        if due is None:
            due = self.ends[when] = []
            heapq.heappush(self.end_times, when)
        due.append((f, f.version))
        self.end_count += 1

    def schedule_ends(self, flows, whens) -> None:
        """:meth:`schedule_end` for each flow and time (runs of equal times, as flows
        that start together at their bounds have, share one lookup)."""
        ends, last, due = self.ends, None, None
        for f, when in zip(flows, whens):
            if when != last:
                due = ends.get(when)
                if due is None:
                    due = ends[when] = []
                    heapq.heappush(self.end_times, when)
                last = when
            due.append((f, f.version))
        self.end_count += len(whens)

    def pop_ends(self, now: float) -> list:
        """Flows (still valid) whose completion is due by ``now``."""
        ends, end_times, heappop = self.ends, self.end_times, heapq.heappop
        out = []
        while end_times and end_times[0] <= now:
            due = ends.pop(heappop(end_times))
            self.end_count -= len(due)
            out += [f for f, version in due if version == f.version and f.active]
        return out

    def clear_ends(self) -> None:
        self.ends, self.end_times, self.end_count = {}, [], 0

    def compact(self, active: int) -> None:
        """Drop superseded completions once they pile up (heavy contention)."""
        if self.end_count <= 4 * active + 4096:
            return
        ends = {}
        for when, due in self.ends.items():
            due = [e for e in due if e[1] == e[0].version and e[0].active]
            if due:
                ends[when] = due
        self.ends, self.end_times = ends, list(ends)
        heapq.heapify(self.end_times)
        self.end_count = sum(len(due) for due in ends.values())

    def wake_next_end(self) -> None:
        """Make sure the earliest valid completion has a wake-up."""
        ends, end_times = self.ends, self.end_times
        while end_times:
            when = end_times[0]
            due = ends[when]
            for i, (f, version) in enumerate(due):
                if version == f.version and f.active:
                    break
            else:  # all superseded
                heapq.heappop(end_times)
                del ends[when]
                self.end_count -= len(due)
                continue
            if i:  # drop the superseded ones ahead of it (not scanned again)
                del due[:i]
                self.end_count -= i
            self.wake_at(when)
            return
