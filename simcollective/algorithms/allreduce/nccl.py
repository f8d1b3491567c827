"""nccl: NCCL's automatic choice of algorithm, protocol and channels per call."""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_hook, report_fields
from ...nccl.plans import plan_for
from ..registry import get_algorithm, register


@register("nccl", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("auto"))
def nccl(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's allreduce as NCCL picks it: algorithm, protocol and channels by NCCL's cost model.

    Evaluates NCCL's cost model (tuning.cc: latency + bytes / bandwidth for every
    algorithm and protocol NCCL would enable here) and runs the cheapest of nccl-ring,
    nccl-tree and nccl-nvls with that protocol and NCCL's channel count for the size.
    ``protocol`` restricts the choice to one protocol; ``channels`` overrides the count.
    The choice is reported as ``algorithm_chosen``, ``protocol``, ``channels`` (and
    ``nccl_model_choice``: NCCL's pick among all its algorithms, NVLSTree included).
    ``plan``: the plan to run (default: the one NCCL would make).
    """
    if plan is None:
        plan = plan_for(comm, x, "auto", protocol, channels)
    chosen = get_algorithm(plan.chosen, "allreduce")   # the body of the algorithm NCCL chose
    # NOTE: returns the chosen algorithm's generator (not a generator of its own that
    # delegates to it): one frame less on every resume of the rank
    return chosen.func(comm, x, plan=plan)


nccl.report_fields = report_fields("auto")
