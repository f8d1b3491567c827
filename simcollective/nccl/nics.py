"""Which NIC each NCCL channel uses: the channel plan names the NICs, routing follows.

NCCL gives every ring channel the NICs it leaves and enters a node by: a channel's ring runs
``NET n -> GPU a -> ... -> GPU x -> NET n``, the NICs of a channel are the GPU's local ones
(``ncclTopoSelectNets``: the NICs nearest the GPU first) and successive channels start at
successive NICs (``nets[(nChannels + i) % netCount]``), so a GPU that drives ``k`` NICs
spreads its channels over all ``k`` (NCCL ``src/graph/search.cc``). Here, in the same spirit:
the ``i``-th channel (in channel order) that leaves a node from GPU ``a`` goes out through NIC
``i mod k_a`` of ``a``'s list (:func:`~simcollective.network.routing.nics_of`, nearest first),
and the ``i``-th channel that enters a node at GPU ``b`` comes in through NIC ``i mod k_b`` of
``b``'s. Rings enter and leave nodes on the same local GPU (rail-aligned), so both ends of a
crossing take the same rail; a crossing between GPUs of different local indices (the ring's
wrap over an odd number of nodes) keeps the shortest route (over NVLink to the GPU of the
destination's rail, as NCCL's PXN). A NIC two GPUs share is simply crossed by both GPUs' channels:
the flows share it (max-min).

Tree channels (:func:`tree_vias`) take one NIC per channel for all of a GPU's edges across
nodes: the ``i``-th channel in which the GPU has any uses NIC ``i mod k`` of its list. NVLSTree
(:func:`nvlstree_vias`) applies the same rule with the channels counted tree by tree: every
GPU is a head in every channel and talks only to heads of its own local index, so the ``i``-th
channel of each of the two trees crosses on NIC ``i mod k`` at both ends (the same rail), and
both trees use all ``k`` NICs (counted in plain channel order, tree ``c % 2`` would keep to
NICs of one parity when ``k`` is even).

The simulation's flows then follow the named NICs
(:meth:`~simcollective.network.routing.Router.route` with ``via``); algorithms that are not
NCCL's keep the shortest route, i.e. each GPU's nearest NIC.
"""

from __future__ import annotations

from ..network.routing import nics_of
from .search import SPEED_INTER, SPEED_INTER_SM90, SPEED_INTER_SM100, trees_of

__all__ = ["ring_vias", "tree_vias", "nvlstree_vias", "rings_fed", "inter_speed", "network_note"]


def ring_vias(graph, machine, orders: list) -> list | None:
    """Per channel, ``rank -> (NIC out, NIC in)`` of the rank's send to its next rank in
    ``orders[c]`` when that send leaves its NCCL node (NVLink domain, ``machine.nodes``);
    None when no GPU lists a NIC.

    Examples
    --------
    >>> from topologies.hardware import dgx_h100
    >>> from simcollective.nccl.model import machine_of
    >>> G = dgx_h100(2, nics_per_node=16)
    >>> m = machine_of(G, [f"n{s}/gpu{i}" for s in (0, 1) for i in range(8)])
    >>> ring = list(range(8)) + list(range(15, 7, -1))   # node 1 backward from its GPU 7
    >>> vias = ring_vias(G, m, [ring, ring])
    >>> vias[0][7], vias[1][7], vias[0][8]
    (('n0/nic14', 'n1/nic14'), ('n0/nic15', 'n1/nic15'), ('n1/nic0', 'n0/nic0'))
    """
    gpus = machine.gpus
    nics = [nics_of(graph, g) for g in gpus]
    if not any(nics):
        return None
    node = _node_of(machine)
    local = [graph.nodes[g].get("local") for g in gpus]
    out_count = [0] * len(gpus)
    in_count = [0] * len(gpus)
    vias = []
    for order in orders:
        mine = {}
        for a, b in zip(order, order[1:] + order[:1]):
            if node[a] == node[b] or not nics[a] or not nics[b] or local[a] != local[b]:
                continue   # within a node, no NICs, or across rails (left to the shortest route)
            mine[a] = (nics[a][out_count[a] % len(nics[a])], nics[b][in_count[b] % len(nics[b])])
            out_count[a] += 1
            in_count[b] += 1
        vias.append(mine)
    return vias


def tree_vias(graph, machine, trees: list) -> list | None:
    """Per tree channel, ``rank -> {peer: (NIC out, NIC in)}`` of the rank's tree edges that
    leave its NCCL node: a GPU takes one NIC per channel for all its edges across nodes (the
    ``i``-th channel in which it has any uses NIC ``i mod k`` of its list); None when no GPU
    lists a NIC. ``trees[c]`` maps a rank to ``(parent, children)``.

    Examples
    --------
    >>> from topologies.hardware import dgx_h100
    >>> from simcollective.nccl.model import machine_of
    >>> from simcollective.nccl.search import tree_links
    >>> G = dgx_h100(2, nics_per_node=16)
    >>> m = machine_of(G, [f"n{s}/gpu{i}" for s in (0, 1) for i in range(8)])
    >>> vias = tree_vias(G, m, [tree_links(m, c) for c in range(16)])
    >>> vias[0][0], vias[8][8]
    ({8: ('n0/nic0', 'n1/nic0')}, {0: ('n1/nic1', 'n0/nic1')})
    """
    nics = [nics_of(graph, g) for g in machine.gpus]
    if not any(nics):
        return None
    node = _node_of(machine)
    count = [0] * len(nics)
    vias = []
    for links in trees:
        edges = {r: [q for q in ([parent] if parent is not None else []) + list(kids) if node[q] != node[r]]
                 for r, (parent, kids) in links.items()}
        nic = {}
        for r in sorted(edges):
            if edges[r] and nics[r]:
                nic[r] = nics[r][count[r] % len(nics[r])]
                count[r] += 1
        vias.append({r: {q: (nic[r], nic[q]) for q in peers if q in nic} for r, peers in edges.items()
                     if r in nic})
    return vias


def nvlstree_vias(graph, machine, links: list) -> list | None:
    """Per NVLSTree channel, ``rank -> {peer: (NIC out, NIC in)}`` as :func:`tree_vias` gives
    them, the channels counted tree by tree (channel ``c`` runs on tree ``c % 2``,
    :func:`~simcollective.nccl.search.trees_of`): the ``i``-th channel of each tree uses NIC
    ``i mod k``, so both trees spread over all of a head's ``k`` NICs. ``links[c]``: channel
    ``c``'s :func:`~simcollective.nccl.search.nvlstree_links`.

    Examples
    --------
    >>> from topologies.hardware import dgx_h100
    >>> from simcollective.nccl.model import machine_of
    >>> from simcollective.nccl.search import nvlstree_links
    >>> G = dgx_h100(3, nics_per_node=16)
    >>> m = machine_of(G, [f"n{s}/gpu{i}" for s in range(3) for i in range(8)])
    >>> vias = nvlstree_vias(G, m, [nvlstree_links(m, c) for c in range(4)])
    >>> [sorted({out for out, _ in vias[c][1].values()}) for c in range(4)]   # GPU 1 of node 0
    [['n0/nic2'], ['n0/nic2'], ['n0/nic3'], ['n0/nic3']]
    """
    order = [c for _, chans in trees_of(len(links)) for c in chans]
    vias = tree_vias(graph, machine, [links[c] for c in order])
    if vias is None:
        return None
    by_channel = dict(zip(order, vias))
    return [by_channel[c] for c in range(len(links))]


def _node_of(machine) -> list:
    """The NCCL node (NVLink domain) of every rank."""
    node = [0] * len(machine.gpus)
    for i, ranks in enumerate(machine.nodes):
        for r in ranks:
            node[r] = i
    return node


def inter_speed(cc: int, bw: float) -> float:
    """The per-ring speed (GB/s) NCCL's multi-node search starts at: the first of its
    inter-node speeds (``speedArrayInter``, per architecture) not above ``bw``, the best
    GPU -> NIC path.

    Examples
    --------
    >>> inter_speed(90, 48.0), inter_speed(90, 25.0), inter_speed(90, 12.5)
    (48, 24, 12)
    """
    speeds = SPEED_INTER_SM100 if cc >= 100 else SPEED_INTER_SM90 if cc >= 90 else SPEED_INTER
    return next((s for s in speeds if s <= bw + 1e-9), speeds[-1])


def rings_fed(capacity: float, speed: float, most: int | None = None) -> int:
    """Rings at ``speed`` GB/s one link of ``capacity`` GB/s carries (NCCL's search takes each
    ring's speed from every link on its path), at least one and at most ``most`` (a GPU:
    one ring per NIC it drives).

    Examples
    --------
    >>> rings_fed(48.0, 24.0, 2), rings_fed(48.0, 48.0, 2), rings_fed(48.0, 12.0, 4), rings_fed(50.0, 48.0)
    (2, 1, 4, 1)
    """
    n = max(1, int(capacity / speed + 1e-9))
    return n if most is None else min(n, most)


def network_note(graph, machine, graphs: dict, algorithm: str) -> str | None:
    """One line on the network of a multi-node call and what NCCL's model counts of it: the
    NICs' transport (a rented machine's, graph ``transport``) and advertised latency, how the
    node's GPUs and NICs pair up (several NICs per GPU, GPUs sharing a NIC, a GPU's PCIe link
    narrower than its NICs): the reason when the simulated time and NCCL's prediction differ on
    such machines. NCCL's node is a server, or an NVLink domain of several hosts. None on one
    node or a graph without NICs."""
    if machine.nnodes < 2:
        return None
    first = [machine.gpus[r] for r in machine.nodes[0]]
    lists = [nics_of(graph, g) for g in first]
    count = len({n for names in lists for n in names})
    if not count:
        return None
    ppn = machine.ppn
    pairing = (f"{count // ppn} NIC{'s' if count > ppn else ''} per GPU" if count >= ppn and count % ppn == 0
               else f"{ppn / count:g} GPUs per NIC" if ppn % count == 0 else f"{count} NICs for {ppn} GPUs")
    name = "nvlstree" if algorithm == "nvlstree" else "ring"
    g = graphs.get(name)
    if g is None:
        return None
    if name == "nvlstree":
        seen = f"NVLSTree: {g.nchannels} heads cross the network at {g.bw_inter:g} GB/s each"
    else:
        rings = machine.nics
        seen = f"{rings} network ring{'s' if rings != 1 else ''} at {inter_speed(machine.cc, machine.nic_bw):g} GB/s"
    bound = " (a GPU's PCIe link, not its NICs, bounds its rings)" if count > ppn and machine.nics < count else ""
    return f"{_nics_per_node(graph, first, count)}, {pairing}{_latency(machine)}; NCCL's model: {seen}{bound}"


def _nics_per_node(graph, first: list, count: int) -> str:
    """``"32 efa-v2 NICs per node"``, ``"72 NICs per NVLink domain (18 hosts)"``."""
    transport = graph.graph.get("transport")
    what = f"{count} {transport + ' ' if transport else ''}NIC{'s' if count != 1 else ''}"
    hosts = {graph.nodes[g].get("server") for g in first}
    return f"{what} per {'node' if len(hosts) <= 1 else f'NVLink domain ({len(hosts)} hosts)'}"


def _latency(machine) -> str:
    lat = getattr(machine, "net_latency_us", 0.0)
    return f", {lat:g} us advertised per network hop" if lat else ""
