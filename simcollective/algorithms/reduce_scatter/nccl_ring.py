"""nccl-ring for reduce-scatter: NCCL's ring reduce-scatter.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import channel_count, plan_for_coll, ring_loops
from ...nccl.protocols import ring_chunk_bytes
from ...patterns.channels import Wire, ring_links, run_call
from ...patterns.dense import split
from ..registry import register


def ring_reduce_scatter(comm, x, plan):
    """C rings at once: P - 1 steps; at step s the rank at ring position q sends its partial sum
    of the block of rank order[q - s - 1] to the next and adds its own data to the partial of
    order[q - s - 2] it receives; after the last step it holds its own block, summed."""
    P, r, f = comm.size, comm.rank, plan.wire
    blocks = split(x, P)
    C = channel_count(plan, len(blocks[0]))
    chunk = ring_chunk_bytes(plan.protocol)
    links = ring_links(comm, plan.orders, plan.positions, C)
    vias = [plan.via(c, r) for c in range(C)]   # the NICs of this rank's sends, per channel
    isend, irecv = comm.isend, comm.irecv
    # parts[c][loop][rank]: this rank's (partial) data of rank's block, channel c, loop
    per_block = [split(b, C) for b in blocks]
    nloops = [ring_loops(int(per_block[r][c].nbytes), chunk) for c in range(C)]
    parts = [[[None] * P for _ in range(nloops[c])] for c in range(C)]
    for j in range(P):
        for c in range(C):
            for loop, piece in enumerate(split(per_block[j][c], nloops[c])):
                parts[c][loop][j] = piece
    with comm.phase("reduce-scatter"):
        for loop in range(max(nloops)):
            jobs = [c for c in range(C) if loop < nloops[c]]
            for s in range(P - 1):
                sends, recvs = [], []
                for c in jobs:
                    pos, order, nxt, prv = links[c]
                    tag = (c, loop, s)
                    sends.append(isend(nxt, Wire(parts[c][loop][order[(pos - s - 1) % P]], f), tag, vias[c]))
                    recvs.append(irecv(prv, tag))
                msgs = yield comm.waitall(recvs + sends)
                for c, g in zip(jobs, msgs):
                    pos, order, _, _ = links[c]
                    j = order[(pos - s - 2) % P]
                    parts[c][loop][j] = yield comm.add(parts[c][loop][j], g.data)
    return [parts[c][loop][r] for c in range(C) for loop in range(nloops[c])]


@register("nccl-ring", kind="dense", collective="reduce-scatter", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce-scatter", "ring"))
def reduce_scatter_nccl_ring(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's ring reduce-scatter: C channels, each a ring found as NCCL's search does, P - 1 steps in the protocol's chunks.

    Channels and protocol as the module docstring says.
    ``plan``: the plan to run (default: the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce-scatter", "ring", protocol, channels)
    return (yield from run_call(comm, x, plan, ring_reduce_scatter))


reduce_scatter_nccl_ring.report_fields = report_fields_for("reduce-scatter", "ring")
