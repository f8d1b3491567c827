"""nccl-ring for reduce: NCCL's ring reduce.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import chain_chunks, channel_count, plan_for_coll
from ...patterns.channels import ring_chains, run_call
from ..registry import register


def ring_reduce(comm, x, plan, root: int):
    """Per channel, a pipelined chain along the channel's ring to the root, in chunks of one FIFO
    step of the protocol (at most MAX_CHAIN_CHUNKS per channel), all channels at once
    (:func:`~simcollective.patterns.channels.ring_chains`). Returns the result parts in order."""
    return ring_chains(comm, x, plan, channel_count(plan, len(x)), root,
                       lambda nbytes: chain_chunks(nbytes, plan.protocol), reduce=True)


@register("nccl-ring", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "ring"))
def reduce_nccl_ring(comm, x, *, root=0, protocol=None, channels=None, plan=None):
    """NCCL's ring reduce: per channel a pipelined chain along the ring ending at the root, in the protocol's steps.

    Channels and protocol as the module docstring says.
    ``plan``: the plan to run (default: the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce", "ring", protocol, channels)
    return (yield from run_call(comm, x, plan, ring_reduce, root))


reduce_nccl_ring.report_fields = report_fields_for("reduce", "ring")
