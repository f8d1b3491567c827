"""nccl for reduce-scatter: NCCL's automatic choice of algorithm, protocol and channels per call.

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import plan_for_coll
from ..registry import get_algorithm, register


@register("nccl", kind="dense", collective="reduce-scatter", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce-scatter", "auto"))
def reduce_scatter_nccl(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's reduce-scatter as NCCL picks it: algorithm (nccl-ring and nccl-nvls), protocol and channels by NCCL's cost model.

    Channels and protocol as the module docstring says. ``plan``: the plan to run (default:
    the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce-scatter", "auto", protocol, channels)
    chosen = get_algorithm(plan.chosen, "reduce-scatter")   # the body of the algorithm NCCL chose
    return (yield from chosen.func(comm, x, plan=plan))


reduce_scatter_nccl.report_fields = report_fields_for("reduce-scatter", "auto")
