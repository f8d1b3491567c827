"""nccl-ring: NCCL's ring allreduce: C channels, each a ring found as NCCL's search does (NVLink first, rail-aligned across nodes)."""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_hook, report_fields
from ...nccl.plans import plan_for, ring_loops
from ...nccl.protocols import ring_chunk_bytes
from ...patterns.channels import Wire, ring_links, run_call
from ...patterns.dense import split
from ..registry import register


def ring_allreduce(comm, x, plan):
    """C rings at once, each on its channel range: reduce-scatter then allgather, P - 1
    steps each, in up to MAX_LOOPS loops of P chunks (NCCL's chunk: the protocol's).
    Returns the result parts in order."""
    P, f = comm.size, plan.wire
    C = plan.channels
    chunk = ring_chunk_bytes(plan.protocol)
    item = x.dtype.itemsize
    pieces = [split(rng, ring_loops(len(rng) * item, P * chunk)) for rng in split(x, C)]
    # per channel: its index, this rank's position, next and previous rank, and the NICs of its sends
    chans = [(c, pos, nxt, prv, plan.via(c, comm.rank))
             for c, (pos, _, nxt, prv) in enumerate(ring_links(comm, plan.orders, plan.positions, C))]
    isend, irecv, add = comm.isend, comm.irecv, comm.add
    results = [[None] * len(p) for p in pieces]
    for loop in range(max(len(p) for p in pieces)):
        jobs = [(split(pieces[c][loop], P), *chans[c]) for c in range(C) if loop < len(pieces[c])]
        with comm.phase("reduce-scatter"):
            for s in range(P - 1):
                sends, recvs = [], []
                for blocks, c, pos, nxt, prv, via in jobs:
                    tag = (c, loop, s)
                    sends.append(isend(nxt, Wire(blocks[(pos - s) % P], f), tag, via))
                    recvs.append(irecv(prv, tag))
                got = yield comm.waitall(recvs + sends)
                for (blocks, _, pos, _, _, _), g in zip(jobs, got):
                    b = (pos - s - 1) % P
                    blocks[b] = yield add(blocks[b], g.data)
        with comm.phase("allgather"):
            for s in range(P - 1):
                sends, recvs = [], []
                for blocks, c, pos, nxt, prv, via in jobs:
                    tag = (c, loop, "ag", s)
                    sends.append(isend(nxt, Wire(blocks[(pos + 1 - s) % P], f), tag, via))
                    recvs.append(irecv(prv, tag))
                got = yield comm.waitall(recvs + sends)
                for (blocks, _, pos, _, _, _), g in zip(jobs, got):
                    blocks[(pos - s) % P] = g.data
        for blocks, c, *_ in jobs:
            results[c][loop] = blocks
    return [b for per_channel in results for blocks in per_channel for b in blocks]


@register("nccl-ring", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("ring"))
def nccl_ring(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's ring allreduce: C channels, each a ring found as NCCL's search does (NVLink first, rail-aligned across nodes).

    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start. The ring's pipeline fill
    (4 more ring steps of at most one FIFO step per channel, Simple and LL128;
    ``simcollective.nccl.fill.ring_fill``) is spent after the flows, but for Simple
    across nodes, whose latency carries NCCL's own x1.4 plateau factor instead.
    ``plan``: the :class:`~simcollective.nccl.plans.Plan` to run (default: the one NCCL
    would make; ``make_plan(..., fill=...)`` makes one with other fill rules).
    """
    if plan is None:
        plan = plan_for(comm, x, "ring", protocol, channels)
    return (yield from run_call(comm, x, plan, ring_allreduce))


nccl_ring.report_fields = report_fields("ring")
