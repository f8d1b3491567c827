"""Direct allgather (every rank sends its block to every other rank at once)."""

from __future__ import annotations

from ...patterns.dense import allgather_messages

from ...patterns.doubling import allgather
from ..registry import register


def _messages(P, **_):
    """P (P - 1)."""
    return allgather_messages(P, "direct")


@register("direct", kind="dense", collective="allgather", messages=_messages)
def allgather_direct(comm, x):
    """Direct: every rank posts its block to all P - 1 others at once and receives theirs.

    One round; on a machine where each rank's links are shared by its P - 1 messages the
    time is alpha + (P - 1) S / (P beta) when the sends share the rank's outgoing bandwidth.
    """
    with comm.phase("allgather"):
        return (yield from allgather(comm, x, "direct"))
