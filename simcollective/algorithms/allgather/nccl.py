"""nccl for allgather: NCCL's automatic choice of algorithm, protocol and channels per call.

Every algorithm here cuts the buffer into ``channels`` contiguous ranges (default: what NCCL
would run for this size on this machine), one per channel, all channels at once.
``protocol``: simple, ll or ll128 (default: what NCCL's cost model picks for this collective,
algorithm and size; NVLS runs simple only), modelled as wire-size inflation; NCCL's latency
of the call (profile ``[nccl]`` figures) is spent once at the start. See
:mod:`simcollective.nccl.plans` and :mod:`simcollective.nccl.coll_model`.
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import plan_for_coll
from ..registry import REGISTRY, register


@register("nccl", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "auto"))
def allgather_nccl(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's allgather as NCCL picks it: algorithm (nccl-ring and nccl-nvls), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says; ``plan``: the plan to run (default:
    the one NCCL would make).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "allgather", "auto", protocol, channels)
    chosen = REGISTRY[("allgather", plan.chosen)]   # the body of the algorithm NCCL chose
    return (yield from chosen.func(comm, x, plan=plan))


allgather_nccl.report_fields = report_fields_for("allgather", "auto")
