"""nccl for reduce: NCCL's automatic choice of algorithm, protocol and channels per call.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import plan_for_coll
from ..registry import get_algorithm, register


@register("nccl", kind="dense", collective="reduce", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce", "auto"))
def reduce_nccl(comm, x, *, root=0, protocol=None, channels=None, plan=None):
    """NCCL's reduce as NCCL picks it: algorithm (nccl-ring), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says. ``plan``: the plan to run (default:
    the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce", "auto", protocol, channels)
    chosen = get_algorithm(plan.chosen, "reduce")   # the body of the algorithm NCCL chose
    return (yield from chosen.func(comm, x, root=root, plan=plan))


reduce_nccl.report_fields = report_fields_for("reduce", "auto")
