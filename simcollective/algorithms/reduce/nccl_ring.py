"""nccl-ring for reduce: NCCL's ring reduce.

Every algorithm here cuts the buffer into ``channels`` contiguous ranges (default: what NCCL
would run for this size on this machine), one per channel, all channels at once.
``protocol``: simple, ll or ll128 (default: what NCCL's cost model picks for this collective,
algorithm and size; NVLS runs simple only), modelled as wire-size inflation; NCCL's latency
of the call (profile ``[nccl]`` figures) is spent once at the start. See
:mod:`simcollective.nccl.plans` and :mod:`simcollective.nccl.coll_model`.
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import chain_chunks, channel_count, plan_for_coll
from ...patterns.channels import ring_chains, ring_links, spend_latency
from ...patterns.dense import split
from ..registry import register


def ring_reduce(comm, x, plan, root: int):
    """Per channel, a pipelined chain along the channel's ring to the root (the rank after the root first, the
    root last, each adding its data), in chunks of one FIFO step of the protocol (at most
    MAX_CHAIN_CHUNKS per channel), all channels at once (:func:`~simcollective.patterns.channels.ring_chains`).
    Returns the result parts in order."""
    P = comm.size
    C = channel_count(plan, len(x))
    chans = []
    for c, (rng, (pos, _, nxt, prv)) in enumerate(zip(split(x, C), ring_links(comm, plan.orders, plan.positions, C))):
        rpos = plan.positions[c][root]
        v = (pos - rpos - 1) % P   # place in the chain
        chans.append((v, nxt, prv, split(rng, chain_chunks(int(rng.nbytes), plan.protocol))))
    with comm.phase("reduce"):
        out = yield from ring_chains(comm, chans, plan.wire, reduce=True)
    return [piece for per_channel in out for piece in per_channel]


@register("nccl-ring", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "ring"))
def reduce_nccl_ring(comm, x, *, root=0, protocol=None, channels=None, plan=None):
    """NCCL's ring reduce: per channel a pipelined chain along the ring ending at the root, in the protocol's steps.

    Channels and protocol as the module docstring says; ``plan``: the plan to run (default:
    the one NCCL would make).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce", "ring", protocol, channels)
    if comm.size == 1:
        return [x]
    yield from spend_latency(comm, plan.latency_s)
    return (yield from ring_reduce(comm, x, plan, root))


reduce_nccl_ring.report_fields = report_fields_for("reduce", "ring")
