"""nccl-nvls for reduce-scatter: NCCL's NVLS reduce-scatter (one node).

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import channel_count, plan_for_coll
from ...patterns.channels import Wire, run_call
from ...patterns.dense import split
from ..registry import register


def nvls_reduce_scatter(comm, x, plan):
    """NVLS reduce-scatter emulated: per channel, every rank sends its range of block h to rank
    h (the switch's load-reduce), which adds them up."""
    P, r, f = comm.size, comm.rank, plan.wire
    blocks = split(x, P)
    C = channel_count(plan, len(blocks[0]))
    per_block = [split(b, C) for b in blocks]
    others = [h for h in range(P) if h != r]
    with comm.phase("nvls-reduce"):
        sends, recvs, where = [], [], []
        for c in range(C):
            for h in others:
                sends.append(comm.isend(h, Wire(per_block[h][c], f), tag=(c, "rs")))
            for h in others:
                recvs.append(comm.irecv(h, tag=(c, "rs")))
                where.append(c)
        msgs = yield comm.waitall(recvs + sends)
        acc = list(per_block[r])
        for c, g in zip(where, msgs):
            acc[c] = yield comm.add(acc[c], g.data)
    return acc


@register("nccl-nvls", kind="dense", collective="reduce-scatter", options=("protocol", "channels"), check=check_options,
          messages=messages_for("reduce-scatter", "nvls"))
def reduce_scatter_nccl_nvls(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's NVLS reduce-scatter: the NVSwitch reduces each rank's block (one node, Hopper or newer).

    Channels and protocol as the module docstring says.
    ``plan``: the plan to run (default: the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "reduce-scatter", "nvls", protocol, channels)
    return (yield from run_call(comm, x, plan, nvls_reduce_scatter))


reduce_scatter_nccl_nvls.report_fields = report_fields_for("reduce-scatter", "nvls")
