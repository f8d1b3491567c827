"""Basic mechanics shared by the dense algorithms: cutting vectors into blocks and chunks,
powers of two, renumbering a communicator from a root, and the exact message counts of the
shared patterns (the registry's ``messages`` hooks).

The per-rank patterns themselves live beside this module: :mod:`.rings` (the ring pass and
the pipelined chain), :mod:`.doubling` (fold/unfold, recursive doubling and halving, the
allgather of one item per rank), :mod:`.trees` (pipelined trees, binomial and NCCL's binary
trees). They are per-rank generator code like the algorithms: call them with ``yield from``.
Payloads are never modified in place: reductions go through ``comm.add`` and results are
kept as lists of parts (blocks in order), so the same code runs on NumPy arrays and on
size-only ``SymbolicArray`` inputs.
"""

from __future__ import annotations

from itertools import repeat

from ..data.blocks import cached_bounds, iter_parts
from ..data.symbolic import cut

__all__ = [
    "nchunks", "split", "cached_bounds", "flatten", "pof2_floor", "real_rank", "add_parts", "relative",
    "ceil_log2", "recursive_doubling_messages", "allgather_messages", "two_level_messages",
]


# -- cutting vectors -----------------------------------------------------------------------
def nchunks(nbytes: int, chunk_size: int | None) -> int:
    """Number of chunks of at most ``chunk_size`` bytes for ``nbytes`` (1 if ``None``)."""
    if chunk_size is None or nbytes <= chunk_size:
        return 1
    return -(-int(nbytes) // int(chunk_size))


def split(x, q: int) -> list:
    """``x`` cut into ``q`` slices with the :func:`block_bounds` convention (views, no copy;
    ``[x]`` itself for ``q = 1``: payloads are immutable)."""
    if q == 1:
        return [x]
    return list(cut(x, cached_bounds(len(x), q)))   # (size-only slices made in one loop)


def flatten(parts) -> list:
    """The leaf payloads of nested lists of parts, in order, as one new list."""
    out = []
    nested = (list, tuple)
    for p in parts:
        if isinstance(p, nested):
            out += p  # (the common case: a block's chunks, all leaves; checked below)
        else:
            out.append(p)
    if any(map(isinstance, out, repeat(nested))):  # deeper nesting: walk it
        return list(iter_parts(parts))
    return out


# -- powers of two ---------------------------------------------------------------------------
def pof2_floor(p: int) -> int:
    """Largest power of two <= ``p`` (``p`` >= 1)."""
    return 1 << (int(p).bit_length() - 1)


def real_rank(v: int, rem: int) -> int:
    """Real rank of virtual rank ``v`` after folding ``rem`` extra ranks."""
    return 2 * v + 1 if v < rem else v + rem


def add_parts(a, b):
    """The elementwise sum of two lists of payloads (a reduction ``op`` for blocks that
    are lists of pieces, e.g. the non-contiguous blocks of a hierarchical algorithm)."""
    from ..data.parts import add

    return [add(x, y) for x, y in zip(a, b)]


def relative(comm, root: int):
    """``comm`` renumbered so that ``root`` is rank 0 (rank v is ``(root + v) mod P``)."""
    if root == 0:
        return comm
    P = comm.size
    return comm.sub([(root + v) % P for v in range(P)], f"{comm.name} from {root}")


# -- message counts (the registry's ``messages`` hooks: exact, asserted against runs) --------
def ceil_log2(P: int) -> int:
    """ceil(log2 P) for P >= 1 (the rounds of Bruck's algorithms)."""
    return (int(P) - 1).bit_length()


def recursive_doubling_messages(P: int) -> int:
    """Messages of :func:`recursive_doubling` (and of every fold / log2 p' exchanges /
    unfold pattern): p' log2 p' exchanges plus one fold and one unfold message for each of
    the rem = P - p' extra ranks."""
    if P < 2:
        return 0
    p2 = pof2_floor(P)
    return p2 * (p2.bit_length() - 1) + 2 * (P - p2)


def allgather_messages(P: int, variant: str = "recursive-doubling") -> int:
    """Messages of :func:`allgather` with ``variant`` over P ranks."""
    if P < 2:
        return 0
    if variant in ("direct", "ring"):
        return P * (P - 1)
    return recursive_doubling_messages(P)


def two_level_messages(P: int, group_size: int, passes: int = 1) -> int:
    """Messages of ``passes`` ring (or pairwise) passes inside groups of L = ``group_size``
    ranks plus ``passes`` among the M = P / L ranks with the same local index: every rank
    sends L - 1 messages per intra pass and M - 1 per inter pass."""
    L = int(group_size)
    return passes * P * ((L - 1) + (P // L - 1))
