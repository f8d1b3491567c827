"""SMPI's bcast "binomial_tree": a binomial tree from the root, largest subtree first."""

from __future__ import annotations

from ..registry import register


def _messages(P, **_):
    """P - 1."""
    return P - 1


@register("smpi-binomial-tree", kind="dense", collective="broadcast", messages=_messages)
def broadcast_smpi_binomial_tree(comm, x, *, root=0):
    """SMPI's bcast binomial_tree: receive from v - (lowest set bit of v), then send to v + mask, mask halving.

    As SMPI 3.32's ``bcast-binomial-tree.cpp`` (SMPI's default bcast): v = (r - root) mod P
    receives the whole vector from rank r - m, m its lowest set bit, then for mask = m/2,
    m/4, ..., 1 (the root: from the largest power of two below P) sends it to r + mask if
    v + mask < P, one blocking send after the other.
    """
    P, r = comm.size, comm.rank
    v = (r - root) % P
    mask = 1
    with comm.phase("broadcast"):
        while mask < P:
            if v & mask:
                x = yield comm.recv((r - mask) % P)
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if v + mask < P:
                yield comm.send((r + mask) % P, x)
            mask >>= 1
    return x
