"""nccl-ring for allgather: NCCL's ring allgather.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import channel_count, plan_for_coll, ring_loops
from ...nccl.protocols import ring_chunk_bytes
from ...patterns.channels import Wire, ring_links, run_call
from ...patterns.dense import split
from ..registry import register


def ring_allgather(comm, x, plan):
    """C rings at once, each on its channel range of every rank's block: P - 1 steps; at step
    s the rank at ring position q sends the block of rank order[q - s] to the next and
    receives that of order[q - s - 1], in up to MAX_LOOPS loops of the protocol's chunk."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = channel_count(plan, len(x))
    chunk = ring_chunk_bytes(plan.protocol)
    links = ring_links(comm, plan.orders, plan.positions, C)
    vias = [plan.via(c, r) for c in range(C)]   # the NICs of this rank's sends, per channel
    isend, irecv = comm.isend, comm.irecv
    # mine[c][loop]: my piece of channel c, loop ``loop``
    mine = [split(rng, ring_loops(int(rng.nbytes), chunk)) for rng in split(x, C)]
    got = [[[None] * P for _ in mine[c]] for c in range(C)]   # got[c][loop][rank]
    for c in range(C):
        for loop, piece in enumerate(mine[c]):
            got[c][loop][r] = piece
    with comm.phase("allgather"):
        for loop in range(max(len(m) for m in mine)):
            jobs = [c for c in range(C) if loop < len(mine[c])]
            for s in range(P - 1):
                sends, recvs = [], []
                for c in jobs:
                    pos, order, nxt, prv = links[c]
                    tag = (c, loop, s)
                    sends.append(isend(nxt, Wire(got[c][loop][order[(pos - s) % P]], f), tag, vias[c]))
                    recvs.append(irecv(prv, tag))
                msgs = yield comm.waitall(recvs + sends)
                for c, g in zip(jobs, msgs):
                    pos, order, _, _ = links[c]
                    got[c][loop][order[(pos - s - 1) % P]] = g.data
    return [got[c][loop][j] for j in range(P) for c in range(C) for loop in range(len(mine[c]))]


@register("nccl-ring", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "ring"))
def allgather_nccl_ring(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's ring allgather: C channels, each a ring found as NCCL's search does, P - 1 steps in the protocol's chunks.

    Channels and protocol as the module docstring says.
    ``plan``: the plan to run (default: the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "allgather", "ring", protocol, channels)
    return (yield from run_call(comm, x, plan, ring_allgather))


allgather_nccl_ring.report_fields = report_fields_for("allgather", "ring")
