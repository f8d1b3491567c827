"""The topology schema: how hardware is described as a NetworkX graph.

This module docstring is the contract between the builders of this package and
any code (simulators, routers, plotting) that consumes a topology. Every graph
produced by :mod:`topologies` and every graph accepted by :func:`validate`
follows it.

Graph
-----
A ``networkx.DiGraph`` (not a multigraph). Every physical cable is stored as
TWO directed edges ``(u, v)`` and ``(v, u)``.

Nodes
-----
Node ids are strings, hierarchical and readable::

    "n0/gpu0"      GPU 0 of server (node) 0
    "n0/plx1"      PCIe switch 1 of server 0
    "n0/nvswitch"  the NVSwitch fabric of server 0
    "n3/nic2"      network adapter 2 of server 3
    "r0/leaf2"     leaf switch 2 of rack 0         (ABCI)
    "r0/fbb1"      second-level switch 1 of rack 0 (ABCI)
    "su1/leaf3"    rail leaf 3 of scalable unit 1  (rail-optimized fabrics)
    "n0/nvswitch1" the NVSwitch planes of baseboard 1 of server 0 (DGX-2 as built)
    "nvl1/nvswitch" the NVLink switch trays of NVLink domain 1 (GB200 NVL72)
    "p2/leaf0", "p2/agg1", "core7"                 (3-level fat-trees)
    "leaf5", "spine0", "root"                      (machine-wide switches)

Node attributes:

``kind`` (str, required)
    one of :data:`KINDS`: ``"gpu"``, ``"pcie_switch"``, ``"nvswitch"``,
    ``"nic"``, ``"switch"``, ``"cpu"``.
``server``, ``local`` (int >= 0, required on GPU nodes)
    index of the server (machine) and index of the GPU within its server.
    The pair ``(server, local)`` is unique. Ranks are laid out on GPUs in
    ``(server, local)`` order unless the graph gives a ``rank_order``.
``level`` (str, optional, switches)
    informational: ``"leaf"``, ``"fbb"``, ``"agg"``, ``"spine"``, ``"core"``,
    ``"root"``.
``bandwidth`` (float bytes/s > 0) and ``latency`` (float s >= 0), optional, non-GPU nodes only
    *switch crossing*: a route that passes THROUGH the node (the node is
    neither its source nor its destination) pays ``latency`` once and shares
    the single capacity ``bandwidth`` with every other flow crossing that
    node. Either attribute may be absent (no crossing capacity limit /
    zero crossing latency). In the study's models leaf and FBB switches carry
    9e11 / 9e-8 and director-class switches (spine, root) 1.625e13 / 4e-7;
    PCIe switches and NVSwitches carry none.
``model`` (str, optional)
    informational, e.g. ``"V100"``.
``nic`` (str, optional, GPU nodes of the hardware presets)
    id of the GPU's nearest NIC (the one NCCL's NIC selection gives it).
``nvls`` (bool), ``chips``, ``links_per_gpu`` (int), optional, NVSwitch nodes
    ``nvls`` is True when the switch can reduce (NVLink SHARP: H100, B200,
    GB200); ``chips`` NVSwitch chips folded into the node, ``links_per_gpu``
    the NVLinks each GPU has to it.

Edges
-----
``bandwidth`` (float bytes/s, finite, > 0, required)
    capacity of the link. Multiplicity (2 NVLink bricks, 12 parallel
    InfiniBand cables) is folded into this figure.
``latency`` (float s, finite, >= 0, required)
``link_type`` (str, required)
    one of :data:`LINK_TYPES`: ``"nvlink"``, ``"pcie"``, ``"infiniband"``,
    ``"nvswitch"``, ``"ethernet"``.
``flow_bandwidth`` (float bytes/s, > 0, optional)
    the most one flow crossing the link may carry (a per-connection goodput,
    e.g. the hardware presets' ``net_conn_bandwidth`` x ``net_connections`` on
    NIC cables); absent: only the capacities bound a flow.
``line_rate`` (float bytes/s, optional)
    the rate the link signals at where its ``bandwidth`` is the payload share
    of it (a network transport's ``goodput``, :mod:`topologies.transports`):
    what NCCL's model reads as the device's speed; absent: ``bandwidth``.
``duplex`` (str, required)
    ``"shared"``: one capacity for both directions of the cable (the study's
    convention): both directed edges must exist with equal bandwidth and
    ``duplex == "shared"``; a simulator counts flows of both directions
    against one capacity. ``"full"``: each direction has its own capacity.

Graph attributes
----------------
``name`` (str, required), ``description`` (str, required),
``gpus_per_node`` (int >= 1, required), ``default_group_size`` (int >= 1,
required: the group size two-level algorithms use by default), and
optionally ``rank_order`` (str of comma-separated local GPU indices, a
permutation of ``0..gpus_per_node-1``, e.g. ``"0,3,2,1,5,6,7,4"``: the
``i``-th rank placed on a server runs on its local GPU ``rank_order[i]``).
Builders set ``gpus_per_node`` to the GPUs of each server; the study's
two-level algorithms use ``default_group_size`` ranks per group.

The hardware presets (:mod:`topologies.hardware`) also set ``platform``
(``"hardware"``) and ``nvls`` (bool: an NVSwitch of the graph can reduce);
``gb200-nvl72`` sets ``hosts_per_domain`` (int).

Only ``str``, ``int``, ``float`` (and ``bool`` for ``nvls``) values are used anywhere, so a topology
round-trips through GraphML and node-link JSON (:mod:`topologies.io`).
Additional attributes of those types are allowed and ignored.

Routing is not part of the graph: routes are shortest paths (by hop count) of
this directed graph; a route may pass through a GPU (e.g. two NVLink hops in a
DGX-1), through PCIe switches and network adapters.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import networkx as nx

__all__ = [
    "KINDS",
    "LINK_TYPES",
    "DUPLEX",
    "TopologyError",
    "validate",
    "gpus",
]

#: Allowed values of the node attribute ``kind``.
KINDS = ("gpu", "pcie_switch", "nvswitch", "nic", "switch", "cpu")
#: Allowed values of the edge attribute ``link_type``.
LINK_TYPES = ("nvlink", "pcie", "infiniband", "nvswitch", "ethernet")
#: Allowed values of the edge attribute ``duplex``.
DUPLEX = ("shared", "full")


class TopologyError(ValueError):
    """A topology is malformed, cannot be built, loaded or saved.

    The one exception raised by this package; its message is one line and
    names the offending node, edge, option or file.

    Examples
    --------
    >>> issubclass(TopologyError, ValueError)
    True
    """


#: an attribute an edge does not carry
_ABSENT = object()


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _check_bandwidth(value: Any, where: str) -> None:
    if value is None:
        raise TopologyError(f"{where} has no 'bandwidth' attribute")
    if not _is_real(value) or not math.isfinite(value) or value <= 0:
        raise TopologyError(
            f"{where} has bandwidth {value!r}; expected a finite number > 0 (bytes/s)"
        )


def _check_latency(value: Any, where: str) -> None:
    if value is None:
        raise TopologyError(f"{where} has no 'latency' attribute")
    if not _is_real(value) or not math.isfinite(value) or value < 0:
        raise TopologyError(
            f"{where} has latency {value!r}; expected a finite number >= 0 (seconds)"
        )


def _check_graph_attrs(G: nx.DiGraph) -> None:
    for key in ("name", "description"):
        if not isinstance(G.graph.get(key), str):
            raise TopologyError(
                f"graph attribute {key!r} must be a str, got {G.graph.get(key)!r}"
            )
    for key in ("gpus_per_node", "default_group_size"):
        value = G.graph.get(key)
        if not _is_int(value) or value < 1:
            raise TopologyError(
                f"graph attribute {key!r} must be an int >= 1, got {value!r}"
            )
    order = G.graph.get("rank_order")
    if order is not None:
        n = G.graph["gpus_per_node"]
        try:
            items = [int(x) for x in str(order).split(",")] if isinstance(order, str) else None
        except ValueError:
            items = None
        if items is None or sorted(items) != list(range(n)):
            raise TopologyError(
                f"graph attribute 'rank_order' {order!r} is not a comma-separated "
                f"permutation of 0..{n - 1}"
            )


def validate(G: nx.DiGraph) -> nx.DiGraph:
    """Check that `G` follows the topology schema; return `G` unchanged.

    Parameters
    ----------
    G : networkx.DiGraph
        The topology (see the module docstring for the schema).

    Returns
    -------
    networkx.DiGraph
        `G` itself, so calls can be chained: ``validate(build(...))``.

    Raises
    ------
    TopologyError
        With a one-line message naming the offending node, edge or graph
        attribute. Reachability is checked by two graph searches from one GPU
        (all GPUs must lie in one strongly connected component), so the cost
        is linear in the size of the graph.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph(name="pair", description="two GPUs", gpus_per_node=2,
    ...                default_group_size=2)
    >>> G.add_node("n0/gpu0", kind="gpu", server=0, local=0)
    >>> G.add_node("n0/gpu1", kind="gpu", server=0, local=1)
    >>> for u, v in [("n0/gpu0", "n0/gpu1"), ("n0/gpu1", "n0/gpu0")]:
    ...     G.add_edge(u, v, bandwidth=5e10, latency=9e-6, link_type="nvlink",
    ...                duplex="shared")
    >>> validate(G) is G
    True
    >>> G.remove_edge("n0/gpu1", "n0/gpu0")
    >>> validate(G)
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: shared edge 'n0/gpu0' -> 'n0/gpu1' has no reverse edge 'n0/gpu1' -> 'n0/gpu0'
    """
    if not isinstance(G, nx.DiGraph) or G.is_multigraph():
        raise TopologyError(
            f"a topology must be a networkx.DiGraph, got {type(G).__name__}"
        )
    _check_graph_attrs(G)
    gpu_ids = _check_nodes(G)
    _check_edges(G)
    _check_shared_cables(G)
    _check_reachable(G, gpu_ids)
    return G


def _check_nodes(G: nx.DiGraph) -> list[str]:
    """Check every node in turn (id, ``kind``, GPU place, crossing attributes); return the
    GPUs."""
    allowed = ", ".join(KINDS)
    seen: dict[tuple[int, int], str] = {}
    gpu_ids: list[str] = []
    for n, data in G.nodes(data=True):
        if not isinstance(n, str):
            raise TopologyError(f"node {n!r} has a non-str id ({type(n).__name__})")
        kind = data.get("kind")
        if kind is None:
            raise TopologyError(f"node {n!r} has no 'kind' attribute (allowed: {allowed})")
        if kind not in KINDS:
            raise TopologyError(f"node {n!r} has unknown kind {kind!r} (allowed: {allowed})")
        if kind == "gpu":
            _check_gpu(n, data, seen)
            gpu_ids.append(n)
        else:
            if "bandwidth" in data:
                _check_bandwidth(data["bandwidth"], f"node {n!r}")
            if "latency" in data:
                _check_latency(data["latency"], f"node {n!r}")
    return gpu_ids


def _check_gpu(n: str, data: dict, seen: dict[tuple[int, int], str]) -> None:
    """A GPU has a unique int place ``(server, local)`` (recorded in `seen`) and no
    crossing attributes."""
    server, local = data.get("server"), data.get("local")
    if not _is_int(server) or server < 0 or not _is_int(local) or local < 0:
        raise TopologyError(
            f"GPU {n!r} needs int attributes server >= 0 and local >= 0, "
            f"got server={server!r}, local={local!r}"
        )
    other = seen.get((server, local))
    if other is not None:
        raise TopologyError(
            f"GPUs {other!r} and {n!r} both have server={server}, local={local}"
        )
    seen[(server, local)] = n
    if "bandwidth" in data or "latency" in data:
        raise TopologyError(
            f"GPU {n!r} carries switch-crossing attributes (bandwidth/latency); "
            "only non-GPU nodes may"
        )


def _check_edges(G: nx.DiGraph) -> None:
    """Every edge: no self-loop, bandwidth, latency, link type, flow cap, duplex. The
    attribute values are checked once per distinct set of them with their types (a few
    kinds of link make a machine of 160,000 edges), so the first edge at fault is the one
    named."""
    seen: set = set()
    for u, v, data in G.edges(data=True):
        if u == v:
            raise TopologyError(f"edge {u!r} -> {v!r} is a self-loop")
        bw, lat, fb = data.get("bandwidth"), data.get("latency"), data.get("flow_bandwidth", _ABSENT)
        link_type, duplex = data.get("link_type"), data.get("duplex")
        values = (bw, type(bw), lat, type(lat), fb, type(fb), link_type, type(link_type), duplex, type(duplex))
        try:
            if values in seen:
                continue
            seen.add(values)
        except TypeError:   # an unhashable value: checked on its own
            pass
        _check_edge_values(f"edge {u!r} -> {v!r}", bw, lat, fb, link_type, duplex)


def _check_edge_values(where: str, bw, lat, fb, link_type, duplex) -> None:
    """One edge's attribute values (``fb``: its flow_bandwidth, :data:`_ABSENT` if none)."""
    _check_bandwidth(bw, where)
    _check_latency(lat, where)
    if link_type not in LINK_TYPES:
        raise TopologyError(f"{where} has link_type {link_type!r} (allowed: {', '.join(LINK_TYPES)})")
    if fb is not _ABSENT and (not _is_real(fb) or math.isnan(fb) or fb <= 0):
        raise TopologyError(f"{where} has flow_bandwidth {fb!r}; expected a number > 0 (bytes/s)")
    if duplex not in DUPLEX:
        raise TopologyError(f"{where} has duplex {duplex!r} (allowed: {', '.join(DUPLEX)})")


def _check_shared_cables(G: nx.DiGraph) -> None:
    """A shared edge has a reverse edge, shared too, of the same bandwidth."""
    pred = G._pred  # fast reverse-edge lookups
    for u, v, data in G.edges(data=True):
        if data["duplex"] == "shared":
            where = f"edge {u!r} -> {v!r}"
            back = pred[u].get(v)  # edge v -> u
            if back is None:
                raise TopologyError(
                    f"shared {where} has no reverse edge {v!r} -> {u!r}"
                )
            if back.get("duplex") != "shared" or back.get("bandwidth") != data["bandwidth"]:
                raise TopologyError(
                    f"shared {where} (bandwidth {data['bandwidth']!r}) differs from its "
                    f"reverse edge (bandwidth {back.get('bandwidth')!r}, "
                    f"duplex {back.get('duplex')!r})"
                )


def _check_reachable(G: nx.DiGraph, gpu_ids: list[str]) -> None:
    """All GPUs lie in one strongly connected component (two searches from the first GPU)."""
    if not gpu_ids:
        raise TopologyError("topology has no GPU node")
    gpu_ids.sort(key=lambda g: (G.nodes[g]["server"], G.nodes[g]["local"]))
    first = gpu_ids[0]
    # the nodes within reach of ``first`` and those it is within reach of (NetworkX's plain
    # breadth-first searches: half the time of ``descendants`` / ``ancestors`` at 50,000 nodes)
    forward = nx.single_source_shortest_path_length(G, first)
    backward = dict(nx.single_target_shortest_path_length(G, first))
    for g in gpu_ids[1:]:
        if g not in forward:
            raise TopologyError(f"GPU {first!r} cannot reach GPU {g!r}")
        if g not in backward:
            raise TopologyError(f"GPU {g!r} cannot reach GPU {first!r}")


def gpus(G: nx.DiGraph) -> list[str]:
    """Return the GPU node ids of `G`, sorted by ``(server, local)``.

    Parameters
    ----------
    G : networkx.DiGraph
        A topology.

    Returns
    -------
    list of str

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> G.add_node("n1/gpu0", kind="gpu", server=1, local=0)
    >>> G.add_node("n0/gpu1", kind="gpu", server=0, local=1)
    >>> G.add_node("leaf0", kind="switch")
    >>> gpus(G)
    ['n0/gpu1', 'n1/gpu0']
    """
    found = [(d["server"], d["local"], n)
             for n, d in G.nodes(data=True) if d.get("kind") == "gpu"]
    found.sort()
    return [n for _, _, n in found]
