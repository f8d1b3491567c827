"""The benchmark harness: a child dying before it reports, bare SimPy rates."""

from __future__ import annotations




def _killed_child():
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_measure_reports_a_child_that_dies_before_reporting():
    # it waited forever on the queue before (a child killed out of memory never reports)
    from benchmarks._harness import measure

    r = measure(_killed_child)
    assert "error" in r and "status -9" in r["error"]


def test_bare_simpy_rates_are_positive():
    from benchmarks._harness import simpy_event_cpu_rate, simpy_event_rate

    assert simpy_event_rate(1000) > 0 and simpy_event_cpu_rate(1000) > 0
