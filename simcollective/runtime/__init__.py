"""The runtime: every rank is a SimPy process running straight-line MPI-style code.

An algorithm is a generator function ``algo(comm, x, **options)`` run once per rank. It
yields the events returned by the communicator's primitives and returns its output::

    def ring_step(comm, x):
        right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
        got = yield comm.sendrecv(right, x, left)     # value: the received payload
        return (yield comm.add(x, got))               # reduction, with its compute cost

Point-to-point semantics follow MPI and SimGrid's SMPI: messages are matched by (source,
tag, communicator) in posting order. With the profile's ``small_messages = "eager"`` (the
``ideal`` profile) a send of at most the network model's ``eager_threshold`` bytes is
eager (its flow starts at once and the send completes immediately), a larger one is a
rendezvous (its flow starts when the matching receive is posted, and the send completes
when the data has arrived). With ``small_messages = "smpi"`` (the ``cm02`` and ``smpi``
profiles: SimGrid SMPI's own point-to-point behaviour) a send of strictly fewer than
``eager_threshold`` bytes is *detached* (it completes when posted), and the flow of every
message, small or large, starts only once it is matched, at max(send posted, receive
posted). Message sizes come from the payloads (``wire_bytes`` if the payload has it,
else ``nbytes``); payloads are shared by reference, never copied.

Time accounting: each rank's timeline is split into the named phases the algorithm opens
(``with comm.phase("inter"):``), ``compute`` (time spent in reductions) and ``other``; the
parts add up to the rank's finish time exactly. Reductions cost the time of the run's
:class:`ComputeModel` (the ``[compute]`` figures of its profile).

Modules: :mod:`.messages` (payload sizes, postings, messages), :mod:`.world` (the ranks'
state, mailboxes and matching), :mod:`.comm` (the communicator), :mod:`.run`
(:func:`run_ranks`), :mod:`.compute` (the compute model).
"""

from __future__ import annotations

from .comm import Comm
from .compute import ComputeModel
from .messages import Request, payload_bytes
from .run import TIMINGS, RunResult, barrier_offsets, run_ranks
from .world import World

__all__ = ["Comm", "Request", "World", "RunResult", "run_ranks", "payload_bytes", "barrier_offsets", "TIMINGS",
           "ComputeModel"]
