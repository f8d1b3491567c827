"""SimEnvironment's queue of events due now: the events are processed in exactly the order
SimPy's heap alone gives, (time, priority, id), whatever mix of delays, priorities,
``call_at`` times, triggers and processes a run makes."""

from __future__ import annotations

import simpy
from hypothesis import given, settings, strategies as st
from simpy.core import NORMAL, URGENT

from simcollective.network.calendar import SimEnvironment, trigger_now

#: an action of the script: (kind, delay or time offset, how many follow-ups it schedules)
action = st.tuples(st.sampled_from(["timeout", "urgent", "succeed", "call_at", "trigger", "process"]),
                   st.sampled_from([0, 0, 0, 0.5, 1.0, 2.5]), st.integers(0, 2))


def replay(env, script: list, fast: bool) -> list:
    """Run ``script`` in ``env``: each processed event logs its label and runs the next
    actions of the script, which schedule more events. Returns (label, time) in processing
    order."""
    log, it = [], iter(range(len(script)))
    trigger = trigger_now(env) if fast else None

    def schedule(i: int) -> None:
        kind, delay, follow = script[i]

        def fire(event, i=i, follow=follow):
            log.append((i, env.now))
            for _ in range(follow):
                j = next(it, None)
                if j is not None:
                    schedule(j)

        if kind == "timeout":
            env.timeout(delay).callbacks.append(fire)
        elif kind == "urgent":   # SimPy's own priority for a process's start and interrupts
            ev = simpy.Event(env)
            ev._ok, ev._value = True, None
            ev.callbacks.append(fire)
            env.schedule(ev, URGENT, delay)
        elif kind == "succeed" or (kind == "trigger" and not fast):
            ev = simpy.Event(env)
            ev.callbacks.append(fire)
            ev.succeed()
        elif kind == "trigger":
            ev = simpy.Event(env)
            ev.callbacks.append(fire)
            trigger(ev, None)
        elif kind == "call_at":
            if fast:
                env.call_at(env.now + delay, fire)
            else:
                ev = simpy.Event(env)
                ev._ok, ev._value = True, None
                ev.callbacks.append(fire)
                env.schedule(ev, NORMAL, delay)
        else:
            def proc():
                yield env.timeout(delay)
                fire(None)
            env.process(proc())

    for _ in range(3):
        j = next(it, None)
        if j is not None:
            schedule(j)
    env.run()
    return log


@settings(max_examples=200, deadline=None)
@given(st.lists(action, min_size=1, max_size=40))
def test_events_are_processed_in_simpys_order(script):
    assert replay(SimEnvironment(), script, fast=True) == replay(simpy.Environment(), script, fast=False)


def test_an_urgent_event_due_now_goes_before_normal_ones_due_now_and_a_later_time_after_them():
    """Hand-made: at time 0 two normal events due now (queued apart), one urgent event due
    now and a timeout of 1 (both on the heap): urgent first, then the two in id order, then
    the timeout; ``peek`` says now while events are due now."""
    env, seen = SimEnvironment(), []
    for label in ("a", "b"):
        env.timeout(0).callbacks.append(lambda e, label=label: seen.append((label, env.now)))
    env.timeout(1).callbacks.append(lambda e: seen.append(("later", env.now)))
    ev = simpy.Event(env)
    ev._ok, ev._value = True, None
    ev.callbacks.append(lambda e: seen.append(("urgent", env.now)))
    env.schedule(ev, URGENT)
    assert env.peek() == 0 and len(env._due) == 2 and len(env._queue) == 2
    env.run()
    assert seen == [("urgent", 0), ("a", 0), ("b", 0), ("later", 1)]
    assert env.peek() == float("inf")


def test_a_failed_event_due_now_still_crashes_the_run():
    env = SimEnvironment()
    env.event().fail(ValueError("boom"))
    try:
        env.run()
    except ValueError as e:
        assert str(e) == "boom"
    else:
        raise AssertionError("the failure was swallowed")
