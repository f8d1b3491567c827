"""NCCL's allgather algorithms: nccl-ring, nccl-nvls and nccl (NCCL's automatic choice).

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


@register("nccl-ring", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "ring"))
def allgather_nccl_ring(comm, x, *, protocol=None, channels=None):
    """NCCL's ring allgather: C channels, each a ring found as NCCL's search does, P - 1 steps in the protocol's chunks.

    Channels and protocol as the module docstring says.
    """
    plan = plan_for_coll(comm, x, "allgather", "ring", protocol, channels)
    return (yield from run_coll_plan(comm, x, "allgather", plan))


allgather_nccl_ring.report_fields = report_fields_for("allgather", "ring")


@register("nccl-nvls", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "nvls"))
def allgather_nccl_nvls(comm, x, *, protocol=None, channels=None):
    """NCCL's NVLS allgather: the NVSwitch multicasts every rank's block (one node, Hopper or newer).

    Channels and protocol as the module docstring says.
    """
    plan = plan_for_coll(comm, x, "allgather", "nvls", protocol, channels)
    return (yield from run_coll_plan(comm, x, "allgather", plan))


allgather_nccl_nvls.report_fields = report_fields_for("allgather", "nvls")


@register("nccl", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "auto"))
def allgather_nccl(comm, x, *, protocol=None, channels=None):
    """NCCL's allgather as NCCL picks it: algorithm (nccl-ring and nccl-nvls), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says.
    """
    plan = plan_for_coll(comm, x, "allgather", "auto", protocol, channels)
    return (yield from run_coll_plan(comm, x, "allgather", plan))


allgather_nccl.report_fields = report_fields_for("allgather", "auto")
