"""Jobs: several collectives on sub-communicators of one machine, at once.

A job (:mod:`.spec`: TOML or a dict) names the machine, its communicators (rules ``tp``,
``dp``, ``pp``, ``ep`` or an MPI-style ``split``) and steps: collectives on those
communicators with dependencies, compute before them and repeats. :func:`run_job`
(:mod:`.runner`) simulates them all on one network, verifies every collective against its
own NumPy reference and times each against the same collective alone; :mod:`.report`
holds the results (per step and repeat, per communicator, slowdowns, busiest links) and
:mod:`.trace` their Perfetto trace (one track per communicator group). Stragglers, link
faults and background traffic (:mod:`.disturbances`, :mod:`.traffic`) disturb a job; the
report then says what they cost against the same job without them.
"""

from .report import JobReport, format_job
from .runner import machine_links, prepare, run_job
from .spec import JobSpec, job_from_dict, load_job
from .trace import job_trace_events, write_job_trace

__all__ = ["JobSpec", "JobReport", "load_job", "job_from_dict", "run_job", "prepare", "format_job",
           "job_trace_events", "write_job_trace", "machine_links"]
