"""Job tables of the studies (the same dicts a TOML job gives; run them with :func:`run_job`
after :func:`~simcollective.jobs.spec.job_from_dict`).

:func:`three_d_parallel` -- one training step of a transformer in 3D parallelism on DGX
H100 nodes: tensor parallel (TP) allreduces per layer, pipeline parallel (PP) sends between
two stages, data parallel (DP) reduce-scatter + allgather of each layer's gradients
overlapped with the layers still computing. Rank ``r`` is ``(t, d, p)``: with
``layout = "tp-inside"`` (Megatron's order) ``r = p x (TP x DP) + d x TP + t``, so a TP
group is one node's 8 GPUs; with ``layout = "dp-inside"`` ``r = p x (TP x DP) + t x DP + d``,
so the DP group is inside a node and TP crosses the nodes.

The schedule per stage (a forward pipeline of micro-batches, then the gradient sync; one
step per micro-batch and layer): micro-batch m's layers on stage 0 (each: ``compute``
seconds, then a TP allreduce of the activations), then its PP send (a 2-rank broadcast from
stage 0 to stage 1), then its layers on stage 1; on a stage, micro-batch m + 1 follows
micro-batch m's last layer. Once the last micro-batch has passed layer i of a stage, that
layer's DP reduce-scatter (after layer i - 1's) and then its allgather (after layer
i - 1's) run, while the later layers still compute.

``schedule = "1f1b"`` adds the backward pass in PipeDream-Flush's one-forward-one-backward
order (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN Training", arXiv:2006.09503;
the schedule of Megatron-LM's pipeline): stage s runs ``2 - s - 1`` warm-up forwards, then
alternates one forward and one backward, then the remaining backwards. A backward of a
micro-batch runs the stage's layers in reverse, each ``2 x compute`` (backward FLOPs are
twice the forward's: 6 N D for a step against 2 N D forward; Kaplan et al., "Scaling Laws for
Neural Language Models", arXiv:2001.08361) then a TP allreduce of the activation gradients;
stage 1 sends each gradient back to stage 0 (a 2-rank broadcast from stage 1); layer i's DP
reduce-scatter + allgather follow the last micro-batch's backward through it.

The default sizes (a GPT-style layer of hidden size 4096, sequence 2048, bf16, TP 8):
activations 2048 x 4096 x 2 B = 16 MiB per micro-batch and layer; a layer's gradient
12 x 4096^2 x 2 B / 8 = 48 MiB per TP rank; compute 0.5 ms per layer and micro-batch
(about 6 x 201 M parameters x 2048 tokens / 8 GPUs at 0.8 PFLOP/s, an H100's dense bf16
peak of about 1 PFLOP/s derated).
"""

from __future__ import annotations

from ..errors import UserInputError

__all__ = ["three_d_parallel", "LAYOUTS", "SCHEDULES"]

LAYOUTS = ("tp-inside", "dp-inside")
#: ``forward``: the forward pipeline, DP after it; ``1f1b``: forward and backward, one after the other
SCHEDULES = ("forward", "1f1b")
MiB = 2**20


def _colours(nodes: int, tp: int, layout: str) -> dict:
    """Split colours of the tp, dp and pp groups per stage (2 stages)."""
    world = 8 * nodes
    dp = world // (2 * tp)
    out = {f"tp{s}": [-1] * world for s in range(2)} | {f"dp{s}": [-1] * world for s in range(2)}
    out["pp"] = [-1] * world
    for p in range(2):
        for d in range(dp):
            for t in range(tp):
                r = p * tp * dp + (d * tp + t if layout == "tp-inside" else t * dp + d)
                out[f"tp{p}"][r] = d
                out[f"dp{p}"][r] = t
                out["pp"][r] = d * tp + t
    return out


def _dp_steps(per_stage: int, microbatches: int, nbytes: int, algorithm: str, backward: bool = False) -> list:
    """Each layer's DP reduce-scatter once the last micro-batch has passed it (after the
    previous layer's), then its allgather (after the previous layer's); with ``backward``,
    once its last backward has (layers in backward order)."""
    steps = []
    order = list(range(per_stage))[::-1] if backward else list(range(per_stage))
    tp = "tpb" if backward else "tp"
    for s in range(2):
        for i, layer in enumerate(order):
            prev = order[i - 1]
            steps.append({"name": f"dp{s}_rs_l{layer}", "communicator": f"dp{s}", "collective": "reduce-scatter",
                          "bytes": nbytes, "algorithm": algorithm,
                          "after": [f"{tp}{s}_m{microbatches - 1}_l{layer}"] + ([f"dp{s}_rs_l{prev}"] if i else [])})
            steps.append({"name": f"dp{s}_ag_l{layer}", "communicator": f"dp{s}", "collective": "allgather",
                          "bytes": nbytes, "algorithm": algorithm,
                          "after": [f"dp{s}_rs_l{layer}"] + ([f"dp{s}_ag_l{prev}"] if i else [])})
    return steps


def _one_f_one_b(stage: int, microbatches: int) -> list:
    """Stage ``stage``'s stream of 2: ``[("f" | "b", micro-batch)]`` in 1F1B order."""
    warm = min(2 - stage - 1, microbatches)
    ops = [("f", m) for m in range(warm)]
    for i in range(microbatches - warm):
        ops += [("f", warm + i), ("b", i)]
    return ops + [("b", m) for m in range(microbatches - warm, microbatches)]


def _pipeline_1f1b(per_stage: int, microbatches: int, nbytes: int, algorithm: str, compute: float) -> list:
    """The TP and PP steps of both stages in 1F1B order (see the module docstring)."""
    steps, last = [], per_stage - 1
    for s in range(2):
        prev = None     # the last step of the stage's stream
        for kind, m in _one_f_one_b(s, microbatches):
            layers = range(per_stage) if kind == "f" else range(per_stage)[::-1]
            tp = "tp" if kind == "f" else "tpb"
            for i, layer in enumerate(layers):
                after = [prev] if prev else []
                if i == 0 and kind == "f" and s == 1:
                    after.append(f"pp_m{m}")
                if i == 0 and kind == "b" and s == 0:
                    after.append(f"ppb_m{m}")
                prev = f"{tp}{s}_m{m}_l{layer}"
                steps.append({"name": prev, "communicator": f"tp{s}", "bytes": nbytes, "algorithm": algorithm,
                              "compute": compute if kind == "f" else 2 * compute, "after": after})
    for m in range(microbatches):
        steps.append({"name": f"pp_m{m}", "communicator": "pp", "collective": "broadcast", "root": 0,
                      "bytes": nbytes, "algorithm": "pipelined-chain", "after": [f"tp0_m{m}_l{last}"]})
        steps.append({"name": f"ppb_m{m}", "communicator": "pp", "collective": "broadcast", "root": 1,
                      "bytes": nbytes, "algorithm": "pipelined-chain", "after": [f"tpb1_m{m}_l0"]})
    return steps


def three_d_parallel(nodes: int = 2, layers: int = 8, microbatches: int = 4, layout: str = "tp-inside",
                     activation_bytes: int = 16 * MiB, gradient_bytes: int = 48 * MiB, compute: float = 5e-4,
                     algorithm: str = "ring", verify: str = "auto", schedule: str = "forward") -> dict:
    """The job table of one 3D-parallel step (see the module docstring): TP 8, PP 2 stages of
    ``layers / 2`` layers, DP ``nodes / 2`` (``nodes`` even, >= 2); ``schedule`` one of
    :data:`SCHEDULES`."""
    if layout not in LAYOUTS:
        raise UserInputError(f"layout {layout!r} is not one of: {', '.join(LAYOUTS)}")
    if schedule not in SCHEDULES:
        raise UserInputError(f"schedule {schedule!r} is not one of: {', '.join(SCHEDULES)}")
    if nodes < 2 or nodes % 2 or layers < 2 or layers % 2:
        raise UserInputError(f"nodes {nodes} and layers {layers} must be even and >= 2 (two pipeline stages)")
    per_stage = layers // 2
    comms = {name: {"rule": "split", "colour": c} for name, c in _colours(nodes, 8, layout).items()}
    if schedule == "1f1b":
        steps = _pipeline_1f1b(per_stage, microbatches, activation_bytes, algorithm, compute)
        if nodes > 2:
            steps += _dp_steps(per_stage, microbatches, gradient_bytes, algorithm, backward=True)
        return {"topology": "dgx-h100", "nodes": nodes, "profile": "ideal", "verify": verify,
                "communicators": comms, "steps": steps}
    last = per_stage - 1
    steps = []
    for m in range(microbatches):
        for s in range(2):
            for layer in range(per_stage):
                if layer:
                    after = [f"tp{s}_m{m}_l{layer - 1}"]
                else:   # the stage's stream: after the previous micro-batch; stage 1 after its PP send
                    after = ([f"tp{s}_m{m - 1}_l{last}"] if m else []) + ([f"pp_m{m}"] if s else [])
                steps.append({"name": f"tp{s}_m{m}_l{layer}", "communicator": f"tp{s}", "bytes": activation_bytes,
                              "algorithm": algorithm, "compute": compute, "after": after})
            if s == 0:
                steps.append({"name": f"pp_m{m}", "communicator": "pp", "collective": "broadcast", "root": 0,
                              "bytes": activation_bytes, "algorithm": "pipelined-chain",
                              "after": [f"tp0_m{m}_l{last}"]})
    if nodes > 2:   # DP of 1 at 2 nodes: no gradient sync
        steps += _dp_steps(per_stage, microbatches, gradient_bytes, algorithm)
    return {"topology": "dgx-h100", "nodes": nodes, "profile": "ideal", "verify": verify,
            "communicators": comms, "steps": steps}
