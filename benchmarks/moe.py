"""The MoE scenario: a 256-rank mixture-of-experts dispatch + combine (alltoallv) on 32
DGX H100 nodes, the gate of DeepSeek-V3's shape (top-8, hidden 7168, bfloat16, one expert
per rank) with 128 tokens per rank, size-only data."""

from __future__ import annotations

__all__ = ["MOE_GATE", "moe_point", "moe_points"]

MOE_GATE = "tokens=128,hidden=7168,topk=8,experts_per_rank=1"


def moe_point(algorithm: str, nodes: int = 32, moe: str = MOE_GATE) -> dict:
    from simcollective.simulate import RunConfig, run

    rep = run(RunConfig(topology="dgx-h100", nodes=nodes, collective="alltoallv", algorithm=algorithm, moe=moe,
                        verify="symbolic"))
    f = rep.fields
    return {"time_s": f["time_s"], "wall_s": f["wall_s"], "sim_wall_s": f["sim_wall_s"], "sim_cpu_s": rep.result.cpu_s,
            "events": f["events"], "flows": f["flows"], "ranks": f["ranks"], "mode": f["mode"],
            "messages": f["messages"]}


def moe_points() -> list:
    """``(label, kwargs)`` of the scenario: the hierarchical (DeepEP-style) dispatch + combine."""
    return [("hierarchical dgx-h100 256 moe", dict(target=moe_point, algorithm="hierarchical"))]
