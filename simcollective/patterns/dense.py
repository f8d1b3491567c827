"""Mechanics shared by the dense algorithms: option checks, chunking, fold/unfold to a
power of two, a (pipelined) ring pass and a pipelined tree allreduce.

Everything here is per-rank generator code like the algorithms themselves: call the
generators with ``yield from``. Payloads are never modified in place: reductions go
through ``comm.add`` and results are kept as lists of parts (blocks in order), so the
same code runs on NumPy arrays and on size-only ``SymbolicArray`` inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import repeat

from ..data.blocks import block_bounds, iter_parts
from ..errors import UserInputError

__all__ = [
    "nchunks", "split", "flatten", "pof2_floor", "fold", "unfold", "real_rank",
    "recursive_doubling", "ring_pass", "ring_reduce_scatter", "ring_allgather", "add_parts", "allgather", "ALLGATHERS",
    "recursive_halving", "relative", "TreeJob", "pipelined_trees",
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
    return [x[a:b] for a, b in _bounds(len(x), q)]


@lru_cache(maxsize=64)
def _bounds(n: int, q: int) -> tuple:
    """``block_bounds(n, q)`` as a tuple, computed once: every rank of a run cuts the
    same vector into the same blocks (P^2 bounds at P ranks otherwise)."""
    return tuple(block_bounds(n, q))


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


# -- fold / unfold to a power of two --------------------------------------------------------
def pof2_floor(p: int) -> int:
    """Largest power of two <= ``p`` (``p`` >= 1)."""
    return 1 << (int(p).bit_length() - 1)


def real_rank(v: int, rem: int) -> int:
    """Real rank of virtual rank ``v`` after folding ``rem`` extra ranks."""
    return 2 * v + 1 if v < rem else v + rem


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


# -- ring ----------------------------------------------------------------------------------
def ring_pass(comm, blocks: list, first: int, reduce: bool, op=None, source=None, flat: bool = False):
    """One ring pass over ``comm`` (P - 1 steps), right = r + 1, left = r - 1.

    ``blocks`` has ``comm.size`` entries, each a list of ``k`` chunks (the same ``k`` for
    every block; a chunk is an array or, without reduction, any payload). At step s this
    rank sends block ``(first - s) mod P`` and receives block ``(first - s - 1) mod P``
    from the left, chunk by chunk (one message per chunk, in order), and adds it to its
    own (``reduce``) or stores it. After a reduce pass with ``first`` the rank owns block
    ``first + 1`` fully reduced; an allgather pass of owners ``o(r)`` uses ``first = o``.

    Pipelining: the sum of a received chunk is computed while the next chunk is already
    in flight (it is needed only when that block is sent at the next step), so with
    ``k`` > 1 reduction time overlaps communication. ``blocks`` (a Python list) is updated
    with the new chunks; no array is modified. A reduce pass sets the chunks it handed on
    to ``None`` (partial sums nobody reads again: keeping them held P x P blocks alive in
    a simulation, 0.91 GB peak for the size-only ring at 1024 GPUs against 0.53 GB).

    ``op`` is the reduction (``comm.add``'s, default ``+``): e.g. a sparse merge with a
    densify policy, or :func:`add_parts` for blocks that are lists of pieces.

    ``source`` (a reduce pass with one chunk per block): the payload the blocks are cut
    from (:func:`split` into ``comm.size`` blocks), each at the step that reads it;
    ``blocks`` then only receives the result (its other entries are left as they are,
    e.g. ``[None]``). (Cut at the start, the P^2 slices of P ranks are each read once, P
    steps later, from memory long out of cache: one cold read per message.)

    ``flat``: ``blocks`` holds one payload per block (one chunk each, updated in place)
    instead of a list of chunks per block: no chunk list per block and rank (P^2 small
    objects at P ranks, touched again at every pass).
    """
    P, r = comm.size, comm.rank
    right, left = (r + 1) % P, (r - 1) % P
    if P == 1:  # nothing to send: the one block is this rank's
        if reduce and source is not None:
            if flat:
                blocks[0] = source
            else:
                blocks[0][0] = source
        return
    k = 1 if flat else len(blocks[0])
    add = comm.add if op is None else partial(comm.add, op=op)
    if k == 1 and P > 1:  # one message per block and step: nothing in flight to keep track of
        # (on a flat list of the blocks' payloads, written back at the end: each message
        # touches one list entry instead of a block's chunk list and its entry, which at
        # P ranks are P^2 small objects scattered in memory)
        sendrecv = comm.sendrecv
        if reduce and source is not None:  # every block cut from ``source`` as it is reached
            bounds = _bounds(len(source), P)
            for s in range(P - 1):
                a, b = bounds[(first - s) % P]
                mine = source[a:b]
                if s:  # the block received at the last step: add this rank's part, then pass it on
                    mine = yield add(mine, got)
                req = sendrecv(right, mine, left)
                mine = None
                got = yield req
            i = (first + 1) % P  # received at the last step
            a, b = bounds[i]
            mine = yield add(source[a:b], got)
            if flat:
                blocks[i] = mine
            else:
                blocks[i][0] = mine
            return
        payloads = blocks if flat else [b[0] for b in blocks]
        if not reduce:
            for s in range(P - 1):
                payloads[(first - s - 1) % P] = yield sendrecv(right, payloads[(first - s) % P], left)
        else:
            for s in range(P - 1):
                i = (first - s) % P
                if s:  # the block received at the last step: add this rank's part, then pass it on
                    payloads[i] = yield add(payloads[i], got)
                req = sendrecv(right, payloads[i], left)
                payloads[i] = None
                got = yield req
            i = (first + 1) % P  # received at the last step
            payloads[i] = yield add(payloads[i], got)
        if not flat:
            for b, payload in zip(blocks, payloads):
                b[0] = payload
        return
    pending = None  # (block, chunk, received payload): a sum not computed yet
    # (the sums are written out inline rather than in a helper generator: this loop runs
    # once per message, and every generator level costs on every resume)
    for s in range(P - 1):
        sb, rb = (first - s) % P, (first - s - 1) % P
        for c in range(k):
            if pending is not None and pending[0] == sb and pending[1] == c:  # about to send it
                pb, pc, pg = pending
                pending = None
                blocks[pb][pc] = yield add(blocks[pb][pc], pg)
            req = comm.sendrecv(right, blocks[sb][c], left)
            if reduce:  # a partial sum handed on: drop it (the allgather brings the result)
                blocks[sb][c] = None
            if pending is not None:  # overlaps with the transfer just started
                pb, pc, pg = pending
                pending = None
                blocks[pb][pc] = yield add(blocks[pb][pc], pg)
            got = yield req
            if reduce:
                pending = (rb, c, got)
            else:
                blocks[rb][c] = got
    if pending is not None:
        pb, pc, pg = pending
        blocks[pb][pc] = yield add(blocks[pb][pc], pg)


def ring_reduce_scatter(comm, blocks: list, owns: int, op=None, source=None, flat: bool = False):
    """Ring reduce-scatter (P - 1 steps) after which this rank holds block ``owns`` summed
    over ``comm`` (``owns`` must be the rank plus a constant, mod P, on every rank).
    ``blocks``, ``source`` and ``flat`` as for :func:`ring_pass` (each block a list of
    chunks, or one payload with ``flat``; cut from ``source`` when used). Use with
    ``yield from``.

    (Returns the :func:`ring_pass` generator itself, not a generator delegating to it:
    every generator level is passed through on every resumption, twice per message.)"""
    return ring_pass(comm, blocks, (owns - 1) % comm.size, True, op, source, flat)


def ring_allgather(comm, blocks: list, owns: int, flat: bool = False):
    """Ring allgather (P - 1 steps): this rank starts with block ``owns`` (its rank plus a
    constant, mod P, as on every rank) and ends with every block. Use with ``yield from``
    (the :func:`ring_pass` generator itself, as for :func:`ring_reduce_scatter`)."""
    return ring_pass(comm, blocks, owns % comm.size, False, flat=flat)


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


# -- pipelined trees -----------------------------------------------------------------------
@dataclass
class TreeJob:
    """One tree allreduce of ``chunks`` (a list of payloads) on this rank.

    ``parent`` is a rank or ``None`` (the root); ``children`` a list of ranks; ``tag``
    tells jobs that share a pair of ranks apart. After :func:`pipelined_trees`,
    ``out`` holds the result chunks (``None`` where this rank does not receive them).
    """

    chunks: list
    parent: int | None
    children: list
    tag: object = 0
    out: list = field(default_factory=list)
    acc: list = field(default_factory=list, repr=False)       # partial sums per chunk
    missing: list = field(default_factory=list, repr=False)   # children still to add


def pipelined_trees(comm, jobs: list, up: bool = True, down: bool = True):
    """Run tree reductions/broadcasts of several :class:`TreeJob` at once, chunk by chunk.

    With ``up``: every rank receives chunk j from all its children, adds them to its own
    chunk j and sends the sum to its parent; the root keeps it. With ``down``: the root
    sends each chunk to its children as soon as it has it (with ``up``: as soon as it is
    reduced, so the reduction of later chunks overlaps the broadcast of earlier ones), and
    every other rank forwards chunk j to its children as it arrives. Without ``up``, the
    root broadcasts its ``chunks`` (the other ranks' ``chunks`` only give the count).

    The rank reacts to whichever message arrives first (``waitany``). It keeps one
    receive posted per peer and direction, so the chunks of a link travel one after the
    other (rendezvous messages start when the receive is posted; eager ones, at most
    ``eager_threshold`` bytes, start at once as in MPI). Sends are non-blocking and all
    completed before returning. Fills ``job.out`` and returns ``jobs``.
    """
    waiting: list = []   # requests in flight we react to
    actions: list = []   # what to do when the matching request completes
    sends: list = []

    def post(job, src, j, kind):
        if j < len(job.chunks):
            waiting.append(comm.irecv(src, tag=(job.tag, kind, j)))
            actions.append((job, src, j, kind))

    def send_up(job, j):
        if job.parent is not None:
            sends.append(comm.isend(job.parent, job.acc[j], tag=(job.tag, "up", j)))
        else:
            deliver(job, j, job.acc[j])

    def deliver(job, j, payload):
        job.out[j] = payload
        if down:
            for c in job.children:
                sends.append(comm.isend(c, payload, tag=(job.tag, "down", j)))

    for job in jobs:
        k = len(job.chunks)
        job.out = [None] * k
        job.acc = list(job.chunks)
        job.missing = [len(job.children)] * k
        if up:
            for c in job.children:
                post(job, c, 0, "up")
            if not job.children:      # a leaf: everything is ready to go up at once
                for j in range(k):
                    send_up(job, j)
        elif job.parent is None:      # broadcast only: the root has the data
            for j in range(k):
                deliver(job, j, job.chunks[j])
        if down and job.parent is not None:
            post(job, job.parent, 0, "down")

    while waiting:
        i, got = yield comm.waitany(waiting)
        del waiting[i]
        job, src, j, kind = actions.pop(i)
        if kind == "down":
            post(job, src, j + 1, "down")
            deliver(job, j, got)
        else:
            post(job, src, j + 1, "up")   # keep the link busy while we add
            job.acc[j] = yield comm.add(job.acc[j], got)
            job.missing[j] -= 1
            if job.missing[j] == 0:
                send_up(job, j)
    if sends:
        yield comm.waitall(sends)
    return jobs


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
