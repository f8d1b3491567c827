"""nccl for broadcast: NCCL's automatic choice of algorithm, protocol and channels per call.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import plan_for_coll
from ..registry import get_algorithm, register


@register("nccl", kind="dense", collective="broadcast", options=("protocol", "channels"), check=check_options,
          messages=messages_for("broadcast", "auto"))
def broadcast_nccl(comm, x, *, root=0, protocol=None, channels=None, plan=None):
    """NCCL's broadcast as NCCL picks it: algorithm (nccl-ring), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says. ``plan``: the plan to run (default:
    the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "broadcast", "auto", protocol, channels)
    chosen = get_algorithm(plan.chosen, "broadcast")   # the body of the algorithm NCCL chose
    return (yield from chosen.func(comm, x, root=root, plan=plan))


broadcast_nccl.report_fields = report_fields_for("broadcast", "auto")
