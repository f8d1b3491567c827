"""Rings and trees per channel, found on the hardware graph as NCCL's search finds them
(``shared/reference/nccl.md`` 2.3 and 2.8).

* Inside a node with direct GPU-GPU NVLinks (DGX-1 hybrid cube-mesh) rings are Hamiltonian
  cycles over NVLink found depth-first, every ring taking ``speed`` GB/s from each directed
  link it uses, widest links first (:func:`direct_rings`).
* On an NVSwitch (or PCIe) node any order is as good; ring ``c`` starts at local GPU ``c``.
* Across nodes, ring ``c`` is rail-aligned: it runs forward through the GPUs of even
  nodes and backward through odd ones, so it leaves node ``i`` and enters node ``i + 1``
  on the same local GPU, hence the same NIC and rail (NCCL alternates rings on odd nodes
  for the same reason).
* Trees: NCCL's double binary tree over nodes (``ncclGetBtree``; the second tree is the
  mirror image for an even node count, shifted by one for an odd one), a chain inside
  each node; channel ``c`` uses tree ``c % 2``.
"""

from __future__ import annotations

__all__ = ["direct_rings", "ring_orders", "btree", "dtree", "tree_links"]

_STEP_BUDGET = 1 << 14


def direct_rings(ppn: int, direct: dict, speed: float, max_rings: int = 32) -> list:
    """Hamiltonian NVLink cycles over local GPUs ``0..ppn-1`` at ``speed`` GB/s each.

    ``direct`` maps a directed pair of local GPUs to its usable GB/s. Rings are searched
    one after the other (depth-first from GPU 0, ties by GPU index); each found ring
    subtracts ``speed`` from every directed link it uses. Two orders are tried, widest
    remaining links first and narrowest first; the one giving more rings is kept.
    """
    best: list = []
    for widest_first in (True, False):  # NCCL backtracks over all rings; two greedy orders do here
        remaining = dict(direct)
        rings = []
        while len(rings) < max_rings:
            ring = _one_ring(ppn, remaining, speed, widest_first)
            if ring is None:
                break
            for a, b in zip(ring, ring[1:] + ring[:1]):
                remaining[(a, b)] -= speed
            rings.append(ring)
        if len(rings) > len(best):
            best = rings
    return best


def _one_ring(ppn, remaining, speed, widest_first=True):
    if ppn == 1:
        return [0]
    steps = [0]
    path = [0]
    used = {0}

    def nbrs(u):
        cand = [(v, remaining.get((u, v), 0.0)) for v in range(ppn)
                if v not in used and remaining.get((u, v), 0.0) >= speed - 1e-9]
        cand.sort(key=lambda t: (-t[1] if widest_first else t[1], t[0]))
        return [v for v, _ in cand]

    def dfs(u):
        steps[0] += 1
        if steps[0] > _STEP_BUDGET:
            return False
        if len(path) == ppn:
            return remaining.get((u, 0), 0.0) >= speed - 1e-9
        for v in nbrs(u):
            path.append(v)
            used.add(v)
            if dfs(v):
                return True
            path.pop()
            used.discard(v)
        return False

    return list(path) if dfs(0) else None


def ring_orders(machine, channels: int, local_rings: list | None = None) -> list:
    """Per channel, the ranks in ring order (a permutation of ``0..nranks-1``).

    ``local_rings`` (lists of local GPU indices, from :func:`direct_rings`) give the order
    inside a node when the node has no NVSwitch; channel ``c`` uses ring ``c % len``.
    """
    orders = []
    ppn = machine.ppn
    for c in range(channels):
        if local_rings:
            ring = list(local_rings[c % len(local_rings)])
            # across nodes: channel c enters every node at local GPU c (so the channels spread
            # over the GPUs' NICs, as NCCL starts channels at different NICs)
            s = ring.index(c % ppn) if machine.nnodes > 1 else 0
            local = ring[s:] + ring[:s]
        else:
            s = c % ppn
            local = list(range(s, ppn)) + list(range(0, s))
        order = []
        for i, ranks in enumerate(machine.nodes):
            seq = [ranks[j] for j in local]
            if i % 2 == 1 and machine.nnodes > 1:
                # backward, starting where the previous node left: same local GPU = same rail
                seq = [seq[-1]] + seq[:-1][::-1]
            order.append(seq)
        orders.append([r for seq in order for r in seq])
    return orders


def btree(n: int, r: int) -> tuple:
    """NCCL's binary tree over ``n`` nodes (``ncclGetBtree``): ``(parent or None, children)``."""
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
    """The second tree (``ncclGetDtree``): the mirror image for even ``n``, shifted by one
    for odd ``n``."""
    if n % 2 == 0:
        m = lambda v: n - 1 - v  # noqa: E731
        p, kids = btree(n, m(r))
        return (None if p is None else m(p)), [m(k) for k in kids]
    s = lambda v: (v - 1) % n  # noqa: E731
    u = lambda v: (v + 1) % n  # noqa: E731
    p, kids = btree(n, s(r))
    return (None if p is None else u(p)), [u(k) for k in kids]


def tree_links(machine, channel: int) -> dict:
    """``rank -> (parent or None, [children])`` of channel ``channel``'s tree: tree
    ``channel % 2`` over nodes, a chain inside each node starting at local GPU
    ``channel % ppn`` (the chain head talks to the other nodes)."""
    ppn, nn = machine.ppn, machine.nnodes
    s = channel % ppn
    local = list(range(s, ppn)) + list(range(0, s))
    chains = [[ranks[j] for j in local] for ranks in machine.nodes]
    make = btree if channel % 2 == 0 else dtree
    links = {}
    for v in range(nn):
        chain = chains[v]
        pnode, knodes = make(nn, v)
        head_parent = None if pnode is None else chains[pnode][0]
        for i, r in enumerate(chain):
            parent = head_parent if i == 0 else chain[i - 1]
            kids = [chain[i + 1]] if i + 1 < len(chain) else []
            if i == 0:
                kids += [chains[k][0] for k in knodes]
            links[r] = (parent, kids)
    return links
