"""NCCL's double binary tree allreduce."""

from __future__ import annotations

from ...data.blocks import block_bounds
from ...patterns.dense import flatten, nchunks, split
from ...patterns.trees import TreeJob, chain_tree_links, double_tree_parents, node_layout, pipelined_trees
from ..registry import register

#: NCCL's SIMPLE-protocol step: NCCL_BUFFSIZE (4 MiB) / NCCL_STEPS (8)
DEFAULT_CHUNK = 512 * 1024
#: the automatic chunk is not halved below this (where NCCL's first tuning rule stops;
#: much smaller chunks would be eager messages, which do not queue behind each other)
MIN_AUTO_CHUNK = 128 * 1024


def _depth(nodes: list, parents: list) -> int:
    """Ranks on the longest root-to-leaf path (bound: tree depth in nodes + longest chain - 1)."""
    def up(n):
        d = 0
        while n is not None:
            d, n = d + 1, parents[n]
        return d
    return max(up(n) for n in range(len(nodes))) - 1 + max(len(c) for c in nodes)


def _trees(comm) -> list:
    """Per tree, its depth in ranks and every rank's ``(parent, children)``: the same on
    every rank of ``comm``, made once per simulation (:meth:`Comm.memo`)."""
    nodes = node_layout(comm)
    return [(_depth(nodes, parents), chain_tree_links(nodes, parents)) for parents in double_tree_parents(len(nodes))]


def auto_chunk(half_bytes: int, depth: int) -> int:
    """NCCL-like default: 512 KiB, halved (not below 128 KiB) while a tree's half of the
    data would make fewer than 8 x depth chunks, so the pipeline stays full."""
    c = DEFAULT_CHUNK
    while c > MIN_AUTO_CHUNK and half_bytes < 8 * depth * c:
        c //= 2
    return c


def _messages(P, *, n, dtype, servers, chunk_size=None, **_):
    """2 (P - 1) (k_1 + k_2): each tree spans the P ranks (P - 1 edges), every edge carries
    its half's k_t chunks up and down (k_t as the algorithm chooses it per tree)."""
    if P < 2:
        return 0
    by_server: dict = {}
    for r, s in enumerate(servers):
        by_server.setdefault(s, []).append(r)
    nodes = list(by_server.values())
    total = 0
    for (a, b), parents in zip(block_bounds(n, 2), double_tree_parents(len(nodes))):
        half = (b - a) * dtype.itemsize
        total += nchunks(half, chunk_size or auto_chunk(half, _depth(nodes, parents)))
    return 2 * (P - 1) * total


@register("double-binary-tree", kind="dense", options=("chunk_size",), messages=_messages)
def double_binary_tree(comm, x, *, chunk_size=None):
    """NCCL's double binary tree: two pipelined trees over the nodes, half the data each.

    Nodes are the servers of the ranks (in rank order); inside a node the GPUs form a
    chain whose first GPU joins the trees. Tree 1 is NCCL's binary tree over the M nodes,
    tree 2 its mirror (M even) or shift (M odd), so with M even every node is an inner
    node of at most one tree. Half h of the vector (``block_bounds(N, 2)``) goes through
    tree h in chunks: receive chunk j from all children, add, send it up; the root turns
    it around and every rank forwards it down as it arrives, so the reduction of later
    chunks overlaps the broadcast of earlier ones; both trees run at the same time.

    ``chunk_size`` (bytes): default ``None`` = NCCL-like automatic size, 512 KiB
    (NCCL_BUFFSIZE / NCCL_STEPS) halved down to 128 KiB while a half would have fewer
    than 8 x (tree depth in ranks) chunks.
    """
    P, r = comm.size, comm.rank
    if P == 1:
        return [x]
    trees = comm.memo(("double-binary-tree", comm.cid), lambda: _trees(comm))   # (depth, links) per tree
    jobs = []
    for t, (half, (depth, links)) in enumerate(zip(split(x, 2), trees)):
        size = chunk_size or auto_chunk(half.nbytes, depth)
        parent, children = links[r]
        jobs.append(TreeJob(split(half, nchunks(half.nbytes, size)), parent, list(children), tag=t))
    with comm.phase("reduce-broadcast"):
        yield from pipelined_trees(comm, jobs)
    return flatten([job.out for job in jobs])
