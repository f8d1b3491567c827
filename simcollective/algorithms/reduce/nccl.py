"""nccl for reduce: NCCL's automatic choice of algorithm, protocol and channels per call.

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


@register("nccl", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "auto"))
def reduce_nccl(comm, x, *, root=0, protocol=None, channels=None, plan=None):
    """NCCL's reduce as NCCL picks it: algorithm (nccl-ring), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says; ``plan``: the plan to run (default:
    the one NCCL would make).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce", "auto", protocol, channels)
    chosen = REGISTRY[("reduce", plan.chosen)]   # the body of the algorithm NCCL chose
    return (yield from chosen.func(comm, x, root=root, plan=plan))


reduce_nccl.report_fields = report_fields_for("reduce", "auto")
