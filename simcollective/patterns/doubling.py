"""Fold/unfold to a power of two, recursive doubling and halving, and the allgather of
one item per rank (per-rank generator code: call with ``yield from``)."""

from __future__ import annotations

from ..errors import UserInputError
from .dense import pof2_floor, real_rank

__all__ = ["fold", "unfold", "recursive_doubling", "ALLGATHERS", "allgather", "recursive_halving"]


def fold(comm, x, op=None):
    """Fold ``comm.size`` ranks onto a power of two p'.

    For r < 2 rem (rem = P - p'), even r sends its whole data to r + 1 and sits out (its
    virtual rank is ``None``); odd r adds it (``op``, default ``+``, as in ``comm.add``)
    and becomes virtual rank r // 2; the other ranks are virtual r - rem. Returns
    ``(vrank, x)``. Opens the phase ``"fold"`` only when there is something to fold.
    """
    P, r = comm.size, comm.rank
    rem = P - pof2_floor(P)
    if r >= 2 * rem:
        return r - rem, x
    with comm.phase("fold"):
        if r % 2 == 0:
            yield comm.send(r + 1, x)
            return None, x
        got = yield comm.recv(r - 1)
        x = yield comm.add(x, got, op=op)
        return r // 2, x


def unfold(comm, result):
    """Undo :func:`fold`: each odd r < 2 rem sends ``result`` to r - 1. Returns the result
    of this rank (received by the ranks that sat out)."""
    P, r = comm.size, comm.rank
    rem = P - pof2_floor(P)
    if r >= 2 * rem:
        return result
    with comm.phase("unfold"):
        if r % 2 == 1:
            yield comm.send(r - 1, result)
            return result
        return (yield comm.recv(r + 1))


# -- recursive doubling ------------------------------------------------------------------------
def recursive_doubling(comm, x, op=None, step_op=None, phase: str = "recursive-doubling"):
    """Allreduce by recursive doubling, any P: fold onto p' (sum with ``op``), exchange the
    whole vector with virtual rank v XOR dist for dist = 1, 2, ..., p'/2 and add what comes
    back (``step_op(dist)`` if given, else ``op``), unfold. Returns the result."""
    P = comm.size
    if P == 1:
        return x
    p2 = pof2_floor(P)
    rem = P - p2
    v, x = yield from fold(comm, x, op=op)
    if v is not None:
        with comm.phase(phase):
            dist = 1
            while dist < p2:
                partner = real_rank(v ^ dist, rem)
                got = yield comm.sendrecv(partner, x, partner)
                x = yield comm.add(x, got, op=op if step_op is None else step_op(dist))
                dist <<= 1
    return (yield from unfold(comm, x))


# -- allgather of one item per rank -------------------------------------------------------
#: allgather variants of :func:`allgather` (and the ``allgather`` option)
ALLGATHERS = ("direct", "ring", "recursive-doubling")


def allgather(comm, item, variant: str = "recursive-doubling", pack=tuple, tag="ag"):
    """Gather every rank's ``item`` (a payload); returns the list of the P items in rank
    order (references, nothing copied).

    ``variant``: ``"direct"`` (every rank posts its item to every other rank at once and
    receives P - 1 items), ``"ring"`` (P - 1 steps, one item per message) or
    ``"recursive-doubling"`` (log2 p' exchanges of the items gathered so far, packed into
    one message by ``pack(list_of_items)``; unpacked with ``list(...)``; for P not a power
    of two, even r < 2 rem first hands its item to r + 1 and gets the full list back
    from it at the end). ``pack=tuple`` sizes a message as the sum of the items' sizes
    (``Parts`` sizes streams as one stream: their concatenation).
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [item]
    if variant == "direct":
        sends = [comm.isend((r + i) % P, item, tag=tag) for i in range(1, P)]
        srcs = [(r - i) % P for i in range(1, P)]
        got = yield comm.waitall([comm.irecv(s, tag=tag) for s in srcs])
        yield comm.waitall(sends)
        items = [None] * P
        items[r] = item
        for s, v in zip(srcs, got):
            items[s] = v
        return items
    if variant == "ring":
        items = [None] * P
        items[r] = item
        right, left = (r + 1) % P, (r - 1) % P
        for s in range(P - 1):
            items[(r - s - 1) % P] = yield comm.sendrecv(right, items[(r - s) % P], left, tag=tag)
        return items
    if variant != "recursive-doubling":
        raise UserInputError(f"--allgather {variant!r} must be one of: {', '.join(ALLGATHERS)}")
    p2 = pof2_floor(P)
    rem = P - p2
    if r < 2 * rem:
        if r % 2 == 0:
            yield comm.send(r + 1, item, tag=(tag, "fold"))
            return list((yield comm.recv(r + 1, tag=(tag, "unfold"))))
        coll = [(yield comm.recv(r - 1, tag=(tag, "fold"))), item]
        v = r // 2
    else:
        coll = [item]
        v = r - rem
    dist = 1
    while dist < p2:
        pv = v ^ dist
        partner = real_rank(pv, rem)
        got = list((yield comm.sendrecv(partner, pack(coll), partner, tag=tag)))
        coll = coll + got if pv > v else got + coll
        dist <<= 1
    if r < 2 * rem:
        yield comm.send(r - 1, pack(coll), tag=(tag, "unfold"))
    return coll


# -- recursive halving ----------------------------------------------------------------------
def recursive_halving(comm, x, bounds: list):
    """Reduce-scatter by recursive halving, any P: returns this rank's block (``x``'s
    block ``comm.rank`` of ``bounds``, summed over ``comm``).

    ``bounds``: P contiguous ``(start, stop)`` blocks covering ``x``. For P not a power of
    two the first 2 rem ranks pair up ("fold"): even r hands its whole vector to r + 1,
    which adds it and plays virtual rank r // 2 owning blocks r - 1 and r; the other
    ranks are virtual r - rem with their own block. With mask = p'/2, ..., 1 virtual rank v
    exchanges with v XOR mask the half of its window of virtual blocks it does not keep
    (it keeps the half holding v) and adds what it receives. At the end odd r < 2 rem
    sends block r - 1 back ("unfold").
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return x
    p2 = pof2_floor(P)
    rem = P - p2
    v, cur = yield from fold(comm, x)
    if v is None:   # sat out: its block comes back from r + 1
        with comm.phase("unfold"):
            return (yield comm.recv(r + 1, tag="rh-unfold"))
    base = bounds[0][0]
    vstart = [bounds[2 * u if u < rem else u + rem][0] - base for u in range(p2)] + [bounds[-1][1] - base]
    lo, hi = 0, p2          # window of virtual blocks held in ``cur`` (from vstart[lo])
    with comm.phase("reduce-scatter"):
        mask = p2 >> 1
        while mask:
            partner = real_rank(v ^ mask, rem)
            mid = lo + mask
            cut = vstart[mid] - vstart[lo]
            upper = bool(v & mask)
            keep, give = (cur[cut:], cur[:cut]) if upper else (cur[:cut], cur[cut:])
            got = yield comm.sendrecv(partner, give, partner, tag="rh")
            cur = yield comm.add(keep, got)
            lo, hi = (mid, hi) if upper else (lo, mid)
            mask >>= 1
    if v < rem:             # this rank holds blocks r - 1 and r
        mine = bounds[r - 1][1] - bounds[r - 1][0]
        with comm.phase("unfold"):
            yield comm.send(r - 1, cur[:mine], tag="rh-unfold")
        return cur[mine:]
    return cur
