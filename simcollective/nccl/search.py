"""NCCL's topology search on the hardware graph: channel counts and per-channel speeds
(:func:`graphs_of`), and the rings and trees of every channel.

* Inside a node with direct GPU-GPU NVLinks (DGX-1 hybrid cube-mesh) rings are Hamiltonian
  cycles over NVLink found depth-first, every ring taking ``speed`` GB/s from each directed
  link it uses, widest links first (:func:`direct_rings`).
* On an NVSwitch (or PCIe) node any order is as good; ring ``c`` starts at local GPU ``c``.
* Across nodes, ring ``c`` is rail-aligned: it runs forward through the GPUs of even
  nodes and backward through odd ones, so it leaves node ``i`` and enters node ``i + 1``
  on the same local GPU, hence the same NIC and rail (NCCL alternates rings on odd nodes
  for the same reason).
* Trees: NCCL's double binary tree over nodes (:func:`~simcollective.patterns.trees.btree`,
  :func:`~simcollective.patterns.trees.dtree`), a chain inside each node; channel ``c`` uses
  tree ``c % 2`` (:func:`tree_links`). NVLSTree beyond 2 nodes uses the same trees between
  the heads of one local index (:func:`nvlstree_links`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..patterns.trees import btree, dtree
from .protocols import MAXCHANNELS

#: NCCL_MAX_NVLS_ARITY: the most NVLS heads (one per GPU) of an NVLink domain (NCCL src/include/device.h)
MAX_NVLS_ARITY = 32

__all__ = ["GraphInfo", "graphs_of", "ring_search", "direct_rings", "ring_orders", "tree_links", "nvlstree_links",
           "trees_of"]

# -- the search's speeds (GB/s per channel), fastest first ---------------------------------------
SPEED_INTRA = (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3)
SPEED_INTRA_SM90 = (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3)
SPEED_INTRA_SM100 = (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)
SPEED_INTER = (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12)
SPEED_INTER_SM90 = (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)
SPEED_INTER_SM100 = (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)

_STEP_BUDGET = 1 << 14


@dataclass(frozen=True)
class GraphInfo:
    """One searched NCCL graph: ``nchannels`` rings/trees at ``bw_intra``/``bw_inter`` GB/s each;
    ``comm_channels`` is what the communicator runs (ring/tree: twice the searched channels)."""

    nchannels: int
    bw_intra: float
    bw_inter: float
    comm_channels: int


def _speeds_intra(cc):
    return SPEED_INTRA_SM100 if cc >= 100 else SPEED_INTRA_SM90 if cc >= 90 else SPEED_INTRA


def _speeds_inter(cc):
    return SPEED_INTER_SM100 if cc >= 100 else SPEED_INTER_SM90 if cc >= 90 else SPEED_INTER


def _speeds_inter_at(cc, bw: float) -> float:
    """The first inter-node search speed not above ``bw`` GB/s."""
    speeds = _speeds_inter(cc)
    return next((s for s in speeds if s <= bw + 1e-9), speeds[-1])


def _dup(nch: int, bw: float, cc: int) -> tuple:
    """ncclTopoDupChannels: x2 channels at half the speed when bw >= 25, except on
    SM > 80 with bw < 50 and more than 4 channels."""
    if bw >= 25 and not (cc > 80 and bw < 50 and nch > 4):
        return min(2 * nch, 32), bw / 2
    return nch, bw


def ring_search(m):
    """``(rings, GB/s per ring, local rings)`` of NCCL's ring search on one node.

    Speeds are tried from the fastest that one GPU's links allow, down; the search stops
    when ``rings x speed`` reaches the GPU's total NVLink rate, or when the next speed is
    not above 0.49 x the speed of the best solution found. For meshes of
    direct NVLinks (no NVSwitch) the rings themselves are searched
    (:func:`direct_rings`); otherwise ``local rings`` is empty.
    """
    mesh = m.intra == "nvlink" and not m.nvswitch and bool(m.direct)
    total = m.nvlink_total
    max_bw = max(m.direct.values()) if mesh else total
    best = (0, 0.0, [])
    for speed in _speeds_intra(m.cc):
        if speed > max_bw + 1e-9:
            continue
        if best[0] and speed <= 0.49 * best[1]:
            break
        if mesh:
            rings = direct_rings(m.ppn, m.direct, speed)
            found = (len(rings), float(speed), rings)
        else:
            found = (min(int(total // speed + 1e-9), 32), float(speed), [])
        if found[0] * found[1] > best[0] * best[1] + 1e-9:
            best = found
        if best[0] * best[1] >= total - 1e-9:
            break
    return best


def graphs_of(m) -> dict:
    """algorithm -> :class:`GraphInfo` as NCCL's search would set them up."""
    out = {}
    if m.nnodes == 1:
        if m.ppn == 1:
            g = GraphInfo(1, m.nvlink_total, m.nvlink_total, 1)
        else:
            nch, bw, _ = ring_search(m)
            nch, bw = _dup(max(nch, 1), bw, m.cc)
            g = GraphInfo(nch, bw, bw, min(2 * nch, MAXCHANNELS))
    else:
        nch, speed = _net_rings(m)
        nch, bw = _dup(nch, float(speed), m.cc)
        comm = min(2 * nch, MAXCHANNELS)
        if m.cc >= 90 and bw > 45 and comm < 16:
            comm = min(2 * comm, MAXCHANNELS)
        g = GraphInfo(nch, bw, bw, comm)
    out["ring"] = out["tree"] = g
    if m.nvls:
        total = m.nvlink_total
        speeds = _speeds_intra(m.cc)
        heads = min(m.ppn, MAX_NVLS_ARITY)
        bw_intra = next((s for s in speeds if (heads + 1) * s <= total + 1e-9), speeds[-1])
        bw_inter = next((s for s in speeds if s < 2 * bw_intra), bw_intra)
        if m.nnodes > 1 and 0 < m.nics < m.ppn:
            # heads sharing NICs (4 NICs for 8 heads): each head crosses the network at its
            # share of the node's NIC rings, not at a NIC of its own
            share = m.nics * m.nic_bw / m.ppn
            bw_inter = next((s for s in speeds if s <= min(bw_inter, share) + 1e-9), speeds[-1])
        elif m.nnodes > 1 and m.nics:
            # a head with NICs of its own crosses the network no faster than its GPU -> NIC
            # path carries (the inter-node speed of its NIC rings: 200 Gb/s NICs, 24 GB/s)
            share = m.nics * m.nic_bw / m.ppn
            bw_inter = min(bw_inter, float(_speeds_inter_at(m.cc, share)))
        nvls_channels = 16 if m.cc < 100 else (24 if m.nnodes == 1 else 32)
        info = GraphInfo(heads, float(bw_intra), float(bw_inter), nvls_channels)
        out["nvls"] = info
        if m.nnodes > 1:
            out["nvlstree"] = info
    return out


def _net_rings(m) -> tuple:
    """``(rings, GB/s per ring)`` of NCCL's multi-node ring search: one ring per NIC ring the
    node carries (``m.nics``) at the first inter-node speed its best GPU -> NIC path allows,
    as many as fit every GPU's NVLink. A ring runs ``NET -> GPU a -> ... -> GPU x -> NET``:
    every GPU of the node forwards it over NVLink except the one whose NIC it leaves by, so
    with ``r`` rings spread over ``ppn`` GPUs a GPU forwards ``r - r // ppn`` of them, each at
    the ring's speed. On 8-GPU nodes the NICs bound the rings (8 x 48 GB/s: 7 forwarded, 336
    of H100's 370.8); in a 72-GPU NVLink domain the NVLink does (15 x 48 of 722). When NVLink
    cuts the rings, slower speeds are tried as NCCL's search does (more rings, while the next
    speed is above 0.49 x the best and ``rings x speed`` grows), at most ``MAXCHANNELS / 2``."""
    speeds = _speeds_inter(m.cc)
    start = next((i for i, s in enumerate(speeds) if s <= m.nic_bw + 1e-9), len(speeds) - 1)
    total = m.nvlink_total if m.intra == "nvlink" else float("inf")
    best = None
    for speed in speeds[start:]:
        if best is not None and (speed <= 0.49 * best[1] or best[0] >= max(m.nics, 1)):
            break
        most = max(m.nics, 1) if best is None else MAXCHANNELS // 2
        rings = min(most, MAXCHANNELS // 2)
        while rings > 1 and (rings - rings // m.ppn) * speed > total + 1e-9:
            rings -= 1
        if best is None or rings * speed > best[0] * best[1] + 1e-9:
            best = (rings, speed)
        if best[0] * best[1] >= total - 1e-9:
            break
    return best


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


def nvlstree_links(machine, channel: int) -> dict:
    """``rank -> (parent rank or None, [children ranks])`` of ``channel``'s NVLSTree: tree
    ``channel % 2`` over the nodes, between the heads of one local index (one rail)."""
    make = btree if channel % 2 == 0 else dtree
    nn = machine.nnodes
    links = {}
    for v, ranks in enumerate(machine.nodes):
        pnode, knodes = make(nn, v)
        for h, r in enumerate(ranks):
            parent = None if pnode is None else machine.nodes[pnode][h]
            links[r] = (parent, [machine.nodes[k][h] for k in knodes])
    return links


def trees_of(channels: int) -> list:
    """``[(tree, [channels using it])]``: channel ``c`` uses tree ``c % 2`` (NCCL's nvls.cc
    ``treeUp[c % 2]``); a tree no channel uses is left out."""
    return [(t, [c for c in range(channels) if c % 2 == t]) for t in (0, 1) if t < channels]
