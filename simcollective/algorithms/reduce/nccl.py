"""NCCL's reduce algorithms: nccl-ring and nccl (NCCL's automatic choice).

Every algorithm here cuts the buffer into ``channels`` contiguous ranges (default: what NCCL
would run for this size on this machine), one per channel, all channels at once.
``protocol``: simple, ll or ll128 (default: what NCCL's cost model picks for this collective,
algorithm and size; NVLS runs simple only), modelled as wire-size inflation; NCCL's latency
of the call (profile ``[nccl]`` figures) is spent once at the start. See
:mod:`simcollective.nccl.other_collectives`.
"""

from __future__ import annotations

from ...nccl.collectives import check_options
from ...nccl.other_collectives import messages_for, plan_for_coll, report_fields_for, run_coll_plan
from ..registry import register


@register("nccl-ring", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "ring"))
def reduce_nccl_ring(comm, x, *, root=0, protocol=None, channels=None):
    """NCCL's ring reduce: per channel a pipelined chain along the ring ending at the root, in the protocol's steps.

    Channels and protocol as the module docstring says.
    """
    plan = plan_for_coll(comm, x, "reduce", "ring", protocol, channels)
    return (yield from run_coll_plan(comm, x, "reduce", plan, root=root))


reduce_nccl_ring.report_fields = report_fields_for("reduce", "ring")


@register("nccl", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "auto"))
def reduce_nccl(comm, x, *, root=0, protocol=None, channels=None):
    """NCCL's reduce as NCCL picks it: algorithm (nccl-ring), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says.
    """
    plan = plan_for_coll(comm, x, "reduce", "auto", protocol, channels)
    return (yield from run_coll_plan(comm, x, "reduce", plan, root=root))


reduce_nccl.report_fields = report_fields_for("reduce", "auto")
