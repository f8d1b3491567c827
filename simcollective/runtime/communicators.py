"""Sub-communicators of the world: which world ranks form each group of a communicator.

A communicator of a job is a partition of (some of) the world's ranks into groups; each
group runs its collectives as a communicator of its own, whose ranks are 0..k-1 to the
algorithm (rank i of the group is world rank ``group[i]``). Groups come from

* :func:`split` -- MPI_Comm_split: ranks of equal ``colour`` form a group, ordered by
  ``(key, world rank)``; a colour of ``None`` (MPI_UNDEFINED) leaves the rank out;
* :func:`rule_groups` -- the named rules, all a split by a stride:

  ====  =======================================================================
  tp    consecutive groups of ``size`` ranks (stride 1)
  dp    ``size`` ranks at stride ``W / size``: the ranks with the same index in
        every block of ``W / size`` (data parallel across the tp blocks)
  pp    the pipeline stages: ``size`` stages of ``W / size`` ranks each; group j
        holds rank j of every stage, in stage order (rank i = stage i)
  ep    consecutive groups of ``size`` ranks (expert parallel, stride 1)
  ====  =======================================================================

  ``stride`` (optional) sets the distance between the ranks of a group: ``size`` ranks
  ``stride`` apart inside blocks of ``size x stride`` consecutive ranks (Megatron's
  layout: tp stride 1, dp stride tp, pp stride tp x dp).

>>> rule_groups("tp", 4, 8)
[(0, 1, 2, 3), (4, 5, 6, 7)]
>>> rule_groups("dp", 2, 8)
[(0, 4), (1, 5), (2, 6), (3, 7)]
>>> rule_groups("dp", 2, 8, stride=2)
[(0, 2), (1, 3), (4, 6), (5, 7)]
>>> split([0, 1, 0, 1], [3, 0, 1, 0])
[(2, 0), (1, 3)]
"""

from __future__ import annotations

from ..errors import UserInputError

__all__ = ["RULES", "split", "rule_groups", "stride_colours", "group_of"]

#: the named rules and their default stride (None: the world's size over the group size)
RULES = {"tp": 1, "dp": None, "pp": None, "ep": 1}


def split(colours, keys=None) -> list:
    """The groups of MPI_Comm_split(colour, key) over world ranks ``0..len(colours)-1``:
    one tuple of world ranks per colour (colours in order of first appearance), ranks
    ordered by ``(key, world rank)``; ``None`` colours take no part. ``keys`` default: 0."""
    colours = list(colours)
    keys = [0] * len(colours) if keys is None else list(keys)
    if len(keys) != len(colours):
        raise UserInputError(f"split: {len(keys)} keys for {len(colours)} colours; give one key per rank")
    by_colour: dict = {}
    for rank, (colour, key) in enumerate(zip(colours, keys)):
        if colour is None:
            continue
        if isinstance(colour, bool) or not isinstance(colour, int) or colour < 0:
            raise UserInputError(f"split: colour {colour!r} of rank {rank} must be an integer >= 0 (or none)")
        if isinstance(key, bool) or not isinstance(key, int):
            raise UserInputError(f"split: key {key!r} of rank {rank} must be an integer")
        by_colour.setdefault(colour, []).append((key, rank))
    return [tuple(r for _, r in sorted(members)) for members in by_colour.values()]


def stride_colours(nranks: int, size: int, stride: int) -> tuple[list, list]:
    """``(colours, keys)`` of groups of ``size`` ranks ``stride`` apart inside blocks of
    ``size x stride`` consecutive ranks (``size x stride`` must divide ``nranks``)."""
    block = size * stride
    colours, keys = [], []
    for r in range(nranks):
        b, o = divmod(r, block)
        key, lane = divmod(o, stride)
        colours.append(b * stride + lane)
        keys.append(key)
    return colours, keys


def _positive(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserInputError(f"{what} {value!r} must be a positive integer")
    return value


def rule_groups(rule: str, size, nranks: int, stride=None, where: str = "communicator") -> list:
    """The groups of a named rule (:data:`RULES`) of ``size`` ranks over ``nranks`` world
    ranks; a size or stride that does not divide the ranks is a one-line error."""
    if rule not in RULES:
        raise UserInputError(f"{where}: rule {rule!r} is not one of: {', '.join([*RULES, 'split'])}")
    size = _positive(size, f"{where}: size")
    divisors = [d for d in range(1, nranks + 1) if nranks % d == 0]
    if nranks % size:
        raise UserInputError(f"{where}: size {size} does not divide the {nranks} ranks; "
                             f"allowed: {', '.join(map(str, divisors))}")
    if stride is None:
        stride = RULES[rule] or nranks // size
    stride = _positive(stride, f"{where}: stride")
    if nranks % (size * stride):
        allowed = [d for d in divisors if (nranks // size) % d == 0]
        raise UserInputError(f"{where}: size {size} x stride {stride} does not divide the {nranks} ranks; "
                             f"allowed strides: {', '.join(map(str, allowed))}")
    return split(*stride_colours(nranks, size, stride))


def group_of(groups: list, rank: int):
    """``(group index, rank in the group)`` of world rank ``rank``, or None if it is in no group."""
    for g, members in enumerate(groups):
        if rank in members:
            return g, members.index(rank)
    return None
