"""nccl-tree: NCCL's tree allreduce: per channel a double binary tree over nodes, a chain inside each node."""

from __future__ import annotations

from ...nccl.collectives import check_options, messages_hook, plan_for, report_fields, run_plan
from ..registry import register


@register("nccl-tree", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("tree"))
def nccl_tree(comm, x, *, protocol=None, channels=None):
    """NCCL's tree allreduce: per channel a double binary tree over nodes, a chain inside each node.

    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start.
    """
    plan = plan_for(comm, x, "tree", protocol, channels)
    return (yield from run_plan(comm, x, plan))


nccl_tree.report_fields = report_fields("tree")
