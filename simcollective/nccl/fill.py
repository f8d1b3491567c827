"""Pipeline-fill rules of NCCL's plans: the time a pipeline takes to fill that the flows do
not carry, as a fraction of the call's bandwidth time (spent after the flows, in the phase
``pipeline-fill``): NVLS and NVLSTree rows (:func:`nvls_fill`), ring steps (:func:`ring_fill`,
with the rules of :class:`FillRules`, a field of a plan request)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .protocols import nvls_chunk_bytes, step_bytes

__all__ = ["FillRules", "FILL", "NVLS_FILL_ROWS", "nvls_fill", "ring_fill"]

#: Pipeline fill of NVLS and NVLSTree, in rows of NCCL's chunk (one chunk per head and channel):
#: the rate-limited passes a chunk makes in series, less one (the last is the bandwidth time).
#: NVLS on one node: multimem load-reduce (switch -> GPU) then multimem store (GPU -> switch),
#: 1 row. NVLSTree on 2 nodes: NVLS reduce, network up to the tree root, network down, NVLS
#: multicast, and the root's reduce between the two network passes: 4 rows (the chain of NCCL's
#: all_reduce.h NVLS/NVLS_TREE roles), checked against the logs.
#: NVLSTree beyond 2 nodes ("nvlstree-wide"): its flows pipeline the tree's network passes chunk
#: by chunk (their fill is simulated) but post the NVLS reduce of every chunk at once and multicast
#: each as it arrives, so only the two NVLS passes' rows are added: 2 rows (checked against the 4-
#: and 8-node logs B, E, C; 6 rows, the whole chain, overshoots: B 64 MiB 0.74).
NVLS_FILL_ROWS = {"nvls": 1, "nvlstree": 4, "nvlstree-wide": 2}


@dataclass(frozen=True)
class FillRules:
    """The ring allreduce's pipeline-fill rules (:func:`ring_fill`), a field of a plan request.

    ``ring_steps``: per protocol, the FIFO steps of fill every channel spends: 4 more ring
    steps (NCCL_STEPS / 2, Simple's chunkSteps: one Simple chunk), each of its per-rank block
    capped at one FIFO step (Simple 512 KiB, LL128 576,000 B); LL none (it forwards 8-byte
    lines as they arrive, and its 1-2 MiB points are not slower than the model).
    ``with_plateau_factor``: the fill also where the ring's latency already counts NCCL's
    own "plateau effect of ring" (:func:`~simcollective.nccl.model.ring_plateau_factor`:
    Simple across nodes, x1.4 / x1.9); False (default): one allowance, not two (True is for
    measuring what it would do: 2 x 8 H100 G 128-256 MiB -> 0.87).
    """

    ring_steps: tuple = (("simple", 4), ("ll128", 4), ("ll", 0))
    with_plateau_factor: bool = False

    def __post_init__(self):
        steps = self.ring_steps
        object.__setattr__(self, "ring_steps", tuple(steps.items() if isinstance(steps, dict) else steps))

    def steps(self, protocol: str) -> float:
        return dict(self.ring_steps)[protocol]

    def with_steps(self, **steps) -> "FillRules":
        """These rules with other steps for the protocols named, e.g. ``FILL.with_steps(simple=0)``."""
        return replace(self, ring_steps={**dict(self.ring_steps), **steps})


#: the fill rules every plan uses unless its request says otherwise
FILL = FillRules()


def nvls_fill(nbytes: int, channels: int, heads: int, nnodes: int, algorithm: str) -> float:
    """Pipeline fill of an NVLS / NVLSTree call as a fraction of its bandwidth time.

    NCCL moves each channel's range in rows of one chunk per head (:func:`nvls_chunk_bytes`);
    a row passes through ``NVLS_FILL_ROWS`` rate-limited stages before the last one starts, each
    at the channel's rate, so the call takes ``NVLS_FILL_ROWS`` more row times than its bandwidth
    time: ``rows x min(1, channels x heads x chunk / nbytes)`` of it (a call smaller than one row
    per channel pays one full bandwidth time per stage)."""
    row = channels * heads * nvls_chunk_bytes(nbytes, channels, heads, nnodes)
    rows = NVLS_FILL_ROWS["nvlstree-wide" if algorithm == "nvlstree" and nnodes > 2 else algorithm]
    return rows * min(1.0, row / max(1, nbytes))


def ring_fill(nbytes: int, channels: int, nranks: int, protocol: str, steps: float | None = None) -> float:
    """Pipeline fill of a ring allreduce as a fraction of its bandwidth time.

    Each channel moves its range through ``2 (P - 1)`` ring steps of one per-rank block of
    ``S / (C P)`` bytes at its link rate ``b``: a bandwidth time of ``2 (P - 1) x S / (C P b)``.
    The fill is ``steps`` more ring steps whose block is capped at one FIFO step
    (:func:`~simcollective.nccl.protocols.step_bytes`): ``steps x min(S / (C P), step) / b``, i.e.
    ``steps / (2 (P - 1)) x min(1, row / S)`` of the bandwidth time with the row
    ``C x P x step`` (channels x ranks x one FIFO step). It grows with the call up to the row
    (8 x A100: 24 x 8 x 512 KiB = 96 MiB; 8 x V100: 12 x 8 x 512 KiB = 48 MiB) and is one Simple
    chunk time (4 x 512 KiB over one link) above it: the shape of the single-node logs'
    intercepts (t - S / B grows from ~70 us at 4 MiB to ~200 us from 32-64 MiB on 8 x A100,
    95 -> 167 us on 8 x V100). ``steps`` defaults to :data:`FILL`'s for ``protocol`` (LL: 0).

    Not spent where the ring's latency already counts NCCL's "plateau effect of ring" (Simple
    across nodes, :func:`~simcollective.nccl.model.ring_plateau_factor`): NCCL's model has that
    allowance for the slow climb there and none elsewhere; both together overshoot the 2 x 8
    H100 forced ring at 128-256 MiB (0.96 / 0.93 -> 0.87 / 0.87)."""
    if steps is None:
        steps = FILL.steps(protocol)
    if not steps or nranks < 2 or nbytes <= 0:
        return 0.0
    row = channels * nranks * step_bytes(protocol)
    return steps / (2 * (nranks - 1)) * min(1.0, row / nbytes)
