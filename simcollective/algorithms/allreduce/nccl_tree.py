"""nccl-tree: NCCL's tree allreduce: per channel a double binary tree over nodes, a chain inside each node."""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_hook, report_fields
from ...nccl.plans import plan_for, tree_chunks
from ...patterns.channels import Wire, run_call
from ...patterns.dense import split
from ...patterns.trees import TreeJob, pipelined_trees
from ..registry import register


def tree_allreduce(comm, x, plan):
    """Per channel, reduce up and broadcast down its tree at once, chunk by chunk. Returns
    the result parts in order."""
    r, f = comm.rank, plan.wire
    item = x.dtype.itemsize
    jobs = []
    for c, rng in enumerate(split(x, plan.channels)):
        k = tree_chunks(len(rng) * item, plan.protocol)
        parent, kids = plan.trees[c][r]
        jobs.append(TreeJob(chunks=[Wire(p, f) for p in split(rng, k)], parent=parent, children=list(kids), tag=c,
                            via=plan.tree_via(c, r)))
    with comm.phase("tree"):
        yield from pipelined_trees(comm, jobs)
    return [w.data for job in jobs for w in job.out]


@register("nccl-tree", kind="dense", options=("protocol", "channels"), check=check_options,
          messages=messages_hook("tree"))
def nccl_tree(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's tree allreduce: per channel a double binary tree over nodes, a chain inside each node.

    The buffer is cut into ``channels`` contiguous ranges (default: what NCCL would run
    for this size on this machine), one per channel, all channels at once. ``protocol``:
    simple, ll or ll128 (default: what NCCL's model picks for this algorithm and size; NVLS
    runs simple only), modelled as wire-size inflation; NCCL's latency of the call
    (profile ``[nccl]`` figures) is spent once at the start. ``plan``: the plan to run
    (default: the one NCCL would make).
    """
    if plan is None:
        plan = plan_for(comm, x, "tree", protocol, channels)
    return (yield from run_call(comm, x, plan, tree_allreduce))


nccl_tree.report_fields = report_fields("tree")
