"""The registry hooks of the ``nccl-*`` algorithms: their option check, the exact number of
messages a plan sends (``messages``), and what a run reports of its plan (``report_fields``).

The counts follow the bodies in ``simcollective/algorithms`` through the counts they share
with them (:mod:`simcollective.nccl.plans`: loops, chunks, pieces per channel).
"""

from __future__ import annotations

from ..data.blocks import block_bounds
from ..errors import UserInputError
from .plans import (channel_count, chain_chunks, make_coll_plan, make_plan, nvlstree_pieces, ring_loops, tree_chunks,
                    wide_nvlstree_pieces)
from .protocols import check_protocol, ring_chunk_bytes
from .search import trees_of

__all__ = ["check_options", "messages_hook", "messages_for", "report_fields", "report_fields_for",
           "nvlstree_messages"]


def check_options(nranks: int, protocol=None, channels=None, **_ignored) -> None:
    """Registry ``check=`` hook of the nccl-* algorithms."""
    if protocol is not None:
        check_protocol(protocol)
    if channels is not None and (isinstance(channels, bool) or not isinstance(channels, int) or channels < 1):
        raise UserInputError(f"--channels {channels!r} must be a positive integer (NCCL runs 1 to 64 channels)")


def nvlstree_messages(machine, nbytes: int, channels: int) -> int:
    """Messages of one NVLSTree call beyond 2 nodes: per tree and chunk, every GPU sends its
    block to the other ``ppn - 1`` heads and every head multicasts to them; every tree edge
    carries, per head, one message up and one down for each channel of the tree (NCCL's
    connections)."""
    P, N = machine.ppn, machine.nnodes
    K = wide_nvlstree_pieces(nbytes, channels, P, N)
    return sum(K * P * (2 * (P - 1) * N + 2 * (N - 1) * len(chans))
               for _, chans in trees_of(channels))


def _allreduce_messages(plan, P: int, n: int, item: int) -> int:
    sizes = [(b - a) * item for a, b in block_bounds(n, plan.channels)]   # channel ranges
    if plan.algorithm == "ring":       # per loop: 2 (P - 1) steps, every rank one message
        chunk = ring_chunk_bytes(plan.protocol)
        return 2 * (P - 1) * P * sum(ring_loops(b, P * chunk) for b in sizes)
    if plan.algorithm == "tree":       # every tree edge: the channel's chunks up and down
        return 2 * (P - 1) * sum(tree_chunks(b, plan.protocol) for b in sizes)
    if plan.algorithm == "nvls":       # per channel every rank to every other, twice
        return 2 * plan.channels * P * (P - 1)
    if plan.machine.nnodes > 2:        # nvlstree beyond 2 nodes: NVLS + double binary tree
        return nvlstree_messages(plan.machine, n * item, plan.channels)
    total = 0                          # nvlstree on 2 nodes: K pieces, reduce + exchange + multicast
    for ranks in plan.machine.nodes:
        ppn = len(ranks)
        total += ppn * nvlstree_pieces(n * item, ppn) * (2 * (ppn - 1) + plan.channels)
    return total


def messages_hook(algorithm):
    """The registry ``messages`` hook of an nccl-* allreduce: the messages its plan sends
    (the plan is the one :func:`report_fields` reports, made once per call and cached)."""

    def messages(P, *, n, dtype, graph, placement, profile, protocol=None, channels=None, **_):
        if P < 2:
            return 0
        item = dtype.itemsize
        plan = make_plan(graph, list(placement), profile, algorithm, int(n * item), protocol, channels)
        return _allreduce_messages(plan, P, n, item)

    return messages


def messages_for(coll: str, algorithm: str):
    """The registry ``messages`` hook of an nccl-* algorithm of ``coll``: the messages its
    plan sends (rings: P (P - 1) per loop of every channel; NVLS: P (P - 1) per channel;
    chains: P - 1 per chunk of every channel)."""

    def messages(P, *, n, dtype, graph, placement, profile, protocol=None, channels=None, **_):
        if P < 2:
            return 0
        item = dtype.itemsize
        plan = make_coll_plan(graph, list(placement), profile, coll, algorithm,
                              n * item * (P if coll == "allgather" else 1), protocol, channels)
        elems = n // P if coll == "reduce-scatter" else n       # what the channels cut
        C = channel_count(plan, elems)
        sizes = [(b - a) * item for a, b in block_bounds(elems, C)]
        if coll in ("broadcast", "reduce"):
            return (P - 1) * sum(chain_chunks(b, plan.protocol) for b in sizes)
        if plan.algorithm == "nvls":
            return C * P * (P - 1)
        chunk = ring_chunk_bytes(plan.protocol)
        return P * (P - 1) * sum(ring_loops(b, chunk) for b in sizes)

    return messages


def report_fields(algorithm):
    """The ``report_fields(graph, placement, nbytes, options, profile)`` hook of an nccl-* allreduce."""

    def fields(graph, placement, nbytes, options, profile):
        plan = make_plan(graph, list(placement), profile, algorithm, int(nbytes), options.get("protocol"),
                         options.get("channels"))
        return plan.fields()

    return fields


def report_fields_for(coll: str, algorithm: str):
    """The ``report_fields(graph, placement, nbytes, options, profile)`` hook of an nccl-*
    algorithm of ``coll`` (``nbytes`` as nccl-tests prints it, which is NCCL's ``bytes``)."""

    def fields(graph, placement, nbytes, options, profile):
        plan = make_coll_plan(graph, list(placement), profile, coll, algorithm, int(nbytes),
                              options.get("protocol"), options.get("channels"))
        return plan.fields()

    return fields
