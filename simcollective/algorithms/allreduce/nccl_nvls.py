"""nccl-nvls: NCCL's NVLS allreduce: reduction in the NVSwitch (NVLink SHARP, Hopper or newer); NVLSTree across nodes."""

from __future__ import annotations

from ...nccl.collectives import check_options, messages_hook, plan_for, report_fields, run_plan
from ..registry import register


@register("nccl-nvls", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("nvls"))
def nccl_nvls(comm, x, *, protocol=None, channels=None):
    """NCCL's NVLS allreduce: reduction in the NVSwitch (NVLink SHARP, Hopper or newer); NVLSTree across nodes.

    On one node the switch reduces and multicasts; across nodes it is NCCL's NVLSTree: NVLS
    inside every node, and between the nodes, per channel, NCCL's double binary tree over the
    nodes (channel c uses tree c % 2), head GPU h of a node talking to head h of the others
    (same rail); see :mod:`simcollective.nccl.nvls_tree`.
    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start.
    """
    plan = plan_for(comm, x, "nvls", protocol, channels)
    return (yield from run_plan(comm, x, plan))


nccl_nvls.report_fields = report_fields("nvls")
