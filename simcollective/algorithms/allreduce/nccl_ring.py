"""nccl-ring: NCCL's ring allreduce: C channels, each a ring found as NCCL's search does (NVLink first, rail-aligned across nodes)."""

from __future__ import annotations

from ...nccl.collectives import check_options, messages_hook, plan_for, report_fields, run_plan
from ..registry import register


@register("nccl-ring", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("ring"))
def nccl_ring(comm, x, *, protocol=None, channels=None):
    """NCCL's ring allreduce: C channels, each a ring found as NCCL's search does (NVLink first, rail-aligned across nodes).

    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start. The ring's pipeline fill
    (4 more ring steps of at most one FIFO step per channel, Simple and LL128;
    ``simcollective.nccl.collectives.ring_fill``) is spent after the flows, but for Simple
    across nodes, whose latency carries NCCL's own x1.4 plateau factor instead.
    """
    plan = plan_for(comm, x, "ring", protocol, channels)
    return (yield from run_plan(comm, x, plan))


nccl_ring.report_fields = report_fields("ring")
