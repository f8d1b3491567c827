"""Recursive-halving reduce-scatter (log2 P steps, any P)."""

from __future__ import annotations

from ...data.blocks import block_bounds
from ...patterns.dense import recursive_doubling_messages
from ...patterns.doubling import recursive_halving
from ..registry import register


def _messages(P, **_):
    """p' log2 p' + 2 rem (fold, halving steps, unfold)."""
    return recursive_doubling_messages(P)


@register("recursive-halving", kind="dense", collective="reduce-scatter", messages=_messages)
def reduce_scatter_recursive_halving(comm, x):
    """Recursive halving: log2 p' steps exchanging half of the current window with vrank XOR mask.

    mask = p'/2, ..., 1: keep the half of the window of blocks that holds this rank's
    block, send the other half to the partner and add what it sends. For P not a power of
    two the first 2 rem ranks fold in pairs first (the even one sends its whole vector)
    and the odd one sends its neighbour's block back at the end. On a contention-free
    machine with P a power of two and free sums: log2 P alpha + (P - 1) S / (P beta).
    """
    return (yield from recursive_halving(comm, x, block_bounds(len(x), comm.size)))
