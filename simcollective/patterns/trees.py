"""Trees: pipelined tree reductions and broadcasts (:func:`pipelined_trees`), the binomial
tree, NCCL's binary tree and its double (the one definition, also used by NCCL's search),
and trees over nodes whose GPUs form chains."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TreeJob", "pipelined_trees", "binomial_links", "btree", "dtree", "btree_parent", "double_tree_parents",
           "node_layout", "chain_tree_links"]


# -- pipelined trees -----------------------------------------------------------------------
@dataclass
class TreeJob:
    """One tree allreduce of ``chunks`` (a list of payloads) on this rank.

    ``parent`` is a rank or ``None`` (the root); ``children`` a list of ranks; ``tag``
    tells jobs that share a pair of ranks apart; ``via`` maps a peer to the nodes the sends
    to it cross (``Comm.isend``'s ``via``: the NICs of an NCCL channel; others take the
    shortest route). After :func:`pipelined_trees`, ``out`` holds the result chunks
    (``None`` where this rank does not receive them).
    """

    chunks: list
    parent: int | None
    children: list
    tag: object = 0
    via: dict = field(default_factory=dict)
    out: list = field(default_factory=list)
    acc: list = field(default_factory=list, repr=False)       # partial sums per chunk, until sent up
    missing: list = field(default_factory=list, repr=False)   # children still to add


def pipelined_trees(comm, jobs: list, up: bool = True, down: bool = True):
    """Run tree reductions/broadcasts of several :class:`TreeJob` at once, chunk by chunk.

    With ``up``: every rank receives chunk j from all its children, adds them to its own
    chunk j and sends the sum to its parent; the root keeps it. With ``down``: the root
    sends each chunk to its children as soon as it has it (with ``up``: as soon as it is
    reduced, so the reduction of later chunks overlaps the broadcast of earlier ones), and
    every other rank forwards chunk j to its children as it arrives. Without ``up``, the
    root broadcasts its ``chunks`` (the other ranks' ``chunks`` only give the count).

    The rank reacts to whichever message arrives first (``Comm.completions``: ``waitany``
    over its posted receives in the order posted). It keeps one receive posted per peer
    and direction, so the chunks of a link travel one after the other (rendezvous messages
    start when the receive is posted; eager ones, at most ``eager_threshold`` bytes, start
    at once as in MPI). Sends are non-blocking, only counted (nothing waits for one send
    in particular), and all completed before returning. Fills ``job.out`` and returns ``jobs``.
    """
    inbox = comm.completions()   # the posted receives, keyed (job, peer, chunk, kind); and the sends
    send, irecv = inbox.send, comm.irecv

    def post(job, src, j, kind):
        if j < len(job.chunks):
            inbox.add(irecv(src, (job.tag, kind, j)), (job, src, j, kind))

    def send_up(job, j):
        if job.parent is not None:
            send(job.parent, job.acc[j], (job.tag, "up", j), job.via.get(job.parent))
            job.acc[j] = None   # (sent on: the parent holds the sum now)
        else:
            deliver(job, j, job.acc[j])

    def deliver(job, j, payload):
        job.out[j] = payload
        if down:
            for c in job.children:   # (payloads are immutable: every child gets the same)
                send(c, payload, (job.tag, "down", j), job.via.get(c))

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

    while inbox:
        (job, src, j, kind), got = yield inbox.next()
        post(job, src, j + 1, kind)   # keep the link busy while we work on this chunk
        if kind == "down":
            deliver(job, j, got)
        else:
            job.acc[j] = yield comm.add(job.acc[j], got)
            job.missing[j] -= 1
            if job.missing[j] == 0:
                send_up(job, j)
    yield inbox.sent()
    return jobs


# -- binomial tree ---------------------------------------------------------------------------
def binomial_links(P: int, r: int):
    """``(parent, children)`` of rank ``r`` in the binomial tree rooted at 0.

    r receives from r | mask for every mask below its lowest set bit (every mask for the
    root) with r | mask < P, in increasing mask order, and sends to r & ~lowbit(r).
    """
    low = r & -r if r else 1 << (P - 1).bit_length()
    parent = r & ~low if r else None
    children = []
    mask = 1
    while mask < low and (r | mask) < P:
        children.append(r | mask)
        mask <<= 1
    return parent, children


# -- NCCL's binary tree and its double ---------------------------------------------------------
def btree(n: int, r: int) -> tuple:
    """NCCL's binary tree over ``n`` nodes (``ncclGetBtree``): ``(parent or None, children)``.

    bit = lowest set bit of r; parent = (r XOR bit) | (bit << 1), or r XOR bit if that is
    >= n; children r - bit/2 and the first r + l < n for l = bit/2, bit/4, ..., 1; node 0
    has the single child bit/2 with bit the smallest power of two >= n.
    """
    bit = 1
    while bit < n and not (bit & r):
        bit <<= 1
    if r == 0:
        return None, ([bit >> 1] if n > 1 else [])
    up = (r ^ bit) | (bit << 1)
    if up >= n:
        up = r ^ bit
    low = bit >> 1
    kids = []
    if low:
        kids.append(r - low)
        d1 = r + low
        while low and d1 >= n:
            low >>= 1
            d1 = r + low
        if low:
            kids.append(d1)
    return up, kids


def dtree(n: int, r: int) -> tuple:
    """The second tree (``ncclGetDtree``): the mirror image for even ``n`` (node r plays
    n - 1 - r), shifted by one for odd ``n`` (node r plays (r - 1) mod n)."""
    if n % 2 == 0:
        m = lambda v: n - 1 - v  # noqa: E731
        p, kids = btree(n, m(r))
        return (None if p is None else m(p)), [m(k) for k in kids]
    s = lambda v: (v - 1) % n  # noqa: E731
    u = lambda v: (v + 1) % n  # noqa: E731
    p, kids = btree(n, s(r))
    return (None if p is None else u(p)), [u(k) for k in kids]


def btree_parent(n: int, M: int):
    """Parent of node ``n`` in NCCL's binary tree over ``M`` nodes (``None`` for node 0)."""
    return btree(M, n)[0]


def double_tree_parents(M: int) -> tuple[list, list]:
    """Parent of every node in the two trees (:func:`btree` and :func:`dtree`)."""
    return [btree(M, n)[0] for n in range(M)], [dtree(M, n)[0] for n in range(M)]


# -- trees over nodes whose GPUs form chains -----------------------------------------------------
def node_layout(comm) -> list[list[int]]:
    """Ranks of ``comm`` grouped by server (physical node): nodes in order of their first
    rank, each node's ranks in rank order (its chain)."""
    nodes: dict = {}
    for r in range(comm.size):
        nodes.setdefault(comm.server(r), []).append(r)
    return list(nodes.values())


def chain_tree_links(nodes: list, parents: list) -> dict:
    """``{rank: (parent, children)}`` of every rank for a tree over nodes whose GPUs form chains.

    Inside a node the GPUs are a chain in rank order; its first GPU connects to the first
    GPUs of the parent and child nodes (children in node order). Data flows up the chain
    towards the first GPU. (All ranks at once: linear in the ranks.)
    """
    kids: dict = {}   # node -> its child nodes, in node order
    for c, p in enumerate(parents):
        if p is not None:
            kids.setdefault(p, []).append(c)
    out = {}
    for n, chain in enumerate(nodes):
        for i, q in enumerate(chain):
            children = [chain[i + 1]] if i + 1 < len(chain) else []
            if i > 0:
                out[q] = (chain[i - 1], children)
            else:
                parent = None if parents[n] is None else nodes[parents[n]][0]
                out[q] = (parent, children + [nodes[c][0] for c in kids.get(n, ())])
    return out
