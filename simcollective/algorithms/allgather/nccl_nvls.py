"""nccl-nvls for allgather: NCCL's NVLS allgather (one node).

Channels, protocol and NCCL's latency as for every ``nccl-*`` algorithm (:mod:`simcollective.nccl.plans`).
"""

from __future__ import annotations

from ...nccl.hooks import check_options, messages_for, report_fields_for
from ...nccl.plans import channel_count, plan_for_coll
from ...patterns.channels import Wire, run_call
from ...patterns.dense import split
from ..registry import register


def nvls_allgather(comm, x, plan):
    """NVLS allgather emulated with point-to-point messages: per channel, every rank sends its
    range to every other rank at once (the switch's multicast); wire sizes scaled by the NVLS
    efficiency (see :func:`~simcollective.nccl.plans.make_coll_plan`)."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = channel_count(plan, len(x))
    mine = split(x, C)
    others = [h for h in range(P) if h != r]
    got = [[None] * P for _ in range(C)]
    with comm.phase("nvls-multicast"):
        sends, recvs, where = [], [], []
        for c in range(C):
            got[c][r] = mine[c]
            for h in others:
                sends.append(comm.isend(h, Wire(mine[c], f), tag=(c, "ag")))
            for h in others:
                recvs.append(comm.irecv(h, tag=(c, "ag")))
                where.append((c, h))
        msgs = yield comm.waitall(recvs + sends)
        for (c, h), g in zip(where, msgs):
            got[c][h] = g.data
    return [got[c][j] for j in range(P) for c in range(C)]


@register("nccl-nvls", kind="dense", collective="allgather", options=("protocol", "channels"), check=check_options,
          messages=messages_for("allgather", "nvls"))
def allgather_nccl_nvls(comm, x, *, protocol=None, channels=None, plan=None):
    """NCCL's NVLS allgather: the NVSwitch multicasts every rank's block (one node, Hopper or newer).

    Channels and protocol as the module docstring says.
    ``plan``: the plan to run (default: the one NCCL would make for this call).
    """
    if plan is None:
        plan = plan_for_coll(comm, x, "allgather", "nvls", protocol, channels)
    return (yield from run_call(comm, x, plan, nvls_allgather))


allgather_nccl_nvls.report_fields = report_fields_for("allgather", "nvls")
