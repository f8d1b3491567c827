"""Node builders: one server (machine) at a time.

Each node builder adds the GPUs, PCIe switches, NVSwitch and network adapters
of ONE server to a graph and returns the ids of that server's *uplink ports*
(the nodes a fabric builder plugs into the network: PLX switches for the
study's machines, NICs for the others). Fabric builders
(:mod:`topologies.fabrics`) connect those port lists; presets
(:mod:`topologies.builders`) compose both.

All node ids of server ``s`` start with ``"n{s}/"``. Figures default to the
study's platform models (:mod:`topologies.builders.study`) and can be
overridden by keyword.
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

from .schema import DUPLEX, LINK_TYPES, TopologyError

__all__ = [
    "DGX1_NVLINK",
    "NODE_TYPES",
    "add_cable",
    "add_gpu",
    "abci_node",
    "dgx1_node",
    "dgx2_node",
    "dgx_h100_node",
    "gpu_host",
]

#: DGX-1 hybrid cube-mesh: (gpu a, gpu b, number of NVLink units).
DGX1_NVLINK = (
    (0, 1, 1), (0, 2, 1), (0, 3, 2), (1, 2, 2), (1, 3, 1), (2, 3, 2),
    (0, 4, 2), (1, 5, 2), (2, 6, 1), (3, 7, 1),
    (4, 5, 1), (4, 6, 1), (4, 7, 2), (5, 6, 2), (5, 7, 1), (6, 7, 2),
)


def add_cable(
    G: nx.DiGraph,
    u: str,
    v: str,
    bandwidth: float,
    latency: float,
    link_type: str,
    duplex: str = "shared",
) -> None:
    """Add one cable between `u` and `v`: the two directed edges ``(u, v)`` and ``(v, u)``.

    Both edges get the same attributes. An existing cable between the same
    nodes is overwritten (fold multiplicity into `bandwidth` instead).

    Parameters
    ----------
    G : networkx.DiGraph
    u, v : str
        End points (added to `G` without attributes if absent).
    bandwidth : float
        Bytes/s; for ``duplex="full"`` the capacity of each direction.
    latency : float
        Seconds.
    link_type : str
        One of ``schema.LINK_TYPES``.
    duplex : {"shared", "full"}

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> add_cable(G, "a", "b", 16e9, 7.5e-6, "pcie")
    >>> sorted(G.edges)
    [('a', 'b'), ('b', 'a')]
    >>> G.edges["b", "a"]["duplex"]
    'shared'
    """
    if link_type not in LINK_TYPES:
        raise TopologyError(f"cable {u!r} - {v!r}: unknown link_type {link_type!r} "
                            f"(allowed: {', '.join(LINK_TYPES)})")
    if duplex not in DUPLEX:
        raise TopologyError(f"cable {u!r} - {v!r}: unknown duplex {duplex!r} "
                            f"(allowed: {', '.join(DUPLEX)})")
    attrs = {
        "bandwidth": float(bandwidth),
        "latency": float(latency),
        "link_type": link_type,
        "duplex": duplex,
    }
    G.add_edge(u, v, **attrs)
    G.add_edge(v, u, **attrs)


def add_gpu(G: nx.DiGraph, server: int, local: int, model: str) -> str:
    """Add GPU `local` of server `server`; return its id ``"n{server}/gpu{local}"``.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> add_gpu(G, 3, 1, "V100")
    'n3/gpu1'
    >>> G.nodes["n3/gpu1"]["kind"], G.nodes["n3/gpu1"]["server"]
    ('gpu', 3)
    """
    gid = f"n{server}/gpu{local}"
    G.add_node(gid, kind="gpu", server=int(server), local=int(local), model=model)
    return gid


def _plx_pairs(G, server, gpu_ids, bandwidth, latency, duplex) -> list[str]:
    """GPU 2i and 2i+1 share PCIe switch i; return the PLX ids."""
    plx = []
    for i in range(len(gpu_ids) // 2):
        pid = f"n{server}/plx{i}"
        G.add_node(pid, kind="pcie_switch")
        add_cable(G, gpu_ids[2 * i], pid, bandwidth, latency, "pcie", duplex)
        add_cable(G, gpu_ids[2 * i + 1], pid, bandwidth, latency, "pcie", duplex)
        plx.append(pid)
    return plx


def _nvswitch(G, server, gpu_ids, bandwidth, latency, duplex) -> str:
    sid = f"n{server}/nvswitch"
    G.add_node(sid, kind="nvswitch")
    for g in gpu_ids:
        add_cable(G, g, sid, bandwidth, latency, "nvswitch", duplex)
    return sid


def abci_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvlink_bandwidth: float = 50e9,
    nvlink_units: int = 2,
    nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    duplex: str = "shared",
) -> list[str]:
    """Add one ABCI node (4 x V100, NVLink fully connected, 2 PLX); return its 2 PLX ids.

    Parameters
    ----------
    G : networkx.DiGraph
    server : int
        Server index (node ids ``"n{server}/..."``).
    nvlink_bandwidth : float
        Bandwidth of one NVLink unit (brick); each GPU pair has
        `nvlink_units` of them folded into one link (2 x 50e9 = 1e11).
    nvlink_units : int
    nvlink_latency : float
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX link (GPUs {0,1} on plx0, {2,3} on plx1).
    duplex : {"shared", "full"}

    Returns
    -------
    list of str
        ``["n{server}/plx0", "n{server}/plx1"]``.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> abci_node(G, 0)
    ['n0/plx0', 'n0/plx1']
    >>> G.edges["n0/gpu0", "n0/gpu3"]["bandwidth"]
    100000000000.0
    """
    gpu_ids = [add_gpu(G, server, i, "V100") for i in range(4)]
    for a in range(4):
        for b in range(a + 1, 4):
            add_cable(G, gpu_ids[a], gpu_ids[b], nvlink_bandwidth * nvlink_units,
                      nvlink_latency, "nvlink", duplex)
    return _plx_pairs(G, server, gpu_ids, pcie_bandwidth, pcie_latency, duplex)


def dgx1_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvlink_bandwidth: float = 50e9,
    nvlink_latency: float = 9e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    duplex: str = "shared",
) -> list[str]:
    """Add one DGX-1 node (8 x V100, hybrid cube-mesh, 4 PLX); return its 4 PLX ids.

    Parameters
    ----------
    G : networkx.DiGraph
    server : int
    nvlink_bandwidth : float
        Bandwidth of one NVLink unit; pairs and multiplicities are
        :data:`DGX1_NVLINK` (e.g. GPU 0-3 has 2 units: 1e11).
    nvlink_latency : float
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX link (GPU 2i and 2i+1 share plx i).
    duplex : {"shared", "full"}

    Returns
    -------
    list of str

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> dgx1_node(G, 1)
    ['n1/plx0', 'n1/plx1', 'n1/plx2', 'n1/plx3']
    >>> G.edges["n1/gpu0", "n1/gpu3"]["bandwidth"], G.has_edge("n1/gpu0", "n1/gpu5")
    (100000000000.0, False)
    """
    gpu_ids = [add_gpu(G, server, i, "V100") for i in range(8)]
    for a, b, units in DGX1_NVLINK:
        add_cable(G, gpu_ids[a], gpu_ids[b], nvlink_bandwidth * units,
                  nvlink_latency, "nvlink", duplex)
    return _plx_pairs(G, server, gpu_ids, pcie_bandwidth, pcie_latency, duplex)


def dgx2_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvswitch_bandwidth: float = 50e9,
    nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    duplex: str = "shared",
) -> list[str]:
    """Add one DGX-2 node (16 x V100 on one NVSwitch node, 8 PLX); return its 8 PLX ids.

    Parameters
    ----------
    G : networkx.DiGraph
    server : int
    nvswitch_bandwidth, nvswitch_latency : float
        Each GPU <-> ``"n{server}/nvswitch"`` link (per hop).
    pcie_bandwidth, pcie_latency : float
        GPU <-> PLX link (GPU 2i and 2i+1 share plx i).
    duplex : {"shared", "full"}

    Returns
    -------
    list of str

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> len(dgx2_node(G, 0))
    8
    >>> G.out_degree("n0/nvswitch")
    16
    """
    gpu_ids = [add_gpu(G, server, i, "V100") for i in range(16)]
    _nvswitch(G, server, gpu_ids, nvswitch_bandwidth, nvswitch_latency, duplex)
    return _plx_pairs(G, server, gpu_ids, pcie_bandwidth, pcie_latency, duplex)


def dgx_h100_node(
    G: nx.DiGraph,
    server: int,
    *,
    nvswitch_bandwidth: float = 450e9,
    nvswitch_latency: float = 5e-6,
    pcie_bandwidth: float = 64e9,
    pcie_latency: float = 7.5e-6,
    duplex: str = "full",
) -> list[str]:
    """Add one DGX H100 node; return its 8 NIC ids (NIC i serves GPU i).

    8 x H100 on one NVSwitch node (NVLink 4: 450e9 per direction), and per
    GPU i a PCIe 5.0 switch ``plx{i}`` (GPU <-> PLX <-> NIC, 64e9 each) and an
    NDR adapter ``nic{i}``. The NIC's network cable is added by the fabric.

    Parameters
    ----------
    G : networkx.DiGraph
    server : int
    nvswitch_bandwidth, nvswitch_latency : float
    pcie_bandwidth, pcie_latency : float
    duplex : {"shared", "full"}

    Returns
    -------
    list of str

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> dgx_h100_node(G, 0)[:2]
    ['n0/nic0', 'n0/nic1']
    >>> G.edges["n0/gpu0", "n0/nvswitch"]["bandwidth"]
    450000000000.0
    """
    gpu_ids = [add_gpu(G, server, i, "H100") for i in range(8)]
    _nvswitch(G, server, gpu_ids, nvswitch_bandwidth, nvswitch_latency, duplex)
    nics = []
    for i, g in enumerate(gpu_ids):
        pid, nid = f"n{server}/plx{i}", f"n{server}/nic{i}"
        G.add_node(pid, kind="pcie_switch")
        G.add_node(nid, kind="nic")
        add_cable(G, g, pid, pcie_bandwidth, pcie_latency, "pcie", duplex)
        add_cable(G, pid, nid, pcie_bandwidth, pcie_latency, "pcie", duplex)
        nics.append(nid)
    return nics


def gpu_host(
    G: nx.DiGraph,
    server: int,
    *,
    pcie_bandwidth: float = 16e9,
    pcie_latency: float = 7.5e-6,
    duplex: str = "shared",
) -> list[str]:
    """Add a single-GPU host (GPU <-> NIC over PCIe); return ``["n{server}/nic0"]``.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> gpu_host(G, 5)
    ['n5/nic0']
    >>> G.edges["n5/gpu0", "n5/nic0"]["link_type"]
    'pcie'
    """
    g = add_gpu(G, server, 0, "GPU")
    nid = f"n{server}/nic0"
    G.add_node(nid, kind="nic")
    add_cable(G, g, nid, pcie_bandwidth, pcie_latency, "pcie", duplex)
    return [nid]


#: Host types usable in fabrics: name -> (node builder, GPUs per node,
#: default group size).
NODE_TYPES: dict[str, tuple[Callable[..., list[str]], int, int]] = {
    "gpu": (gpu_host, 1, 1),
    "abci": (abci_node, 4, 4),
    "dgx1": (dgx1_node, 8, 4),
    "dgx2": (dgx2_node, 16, 4),
    "dgx-h100": (dgx_h100_node, 8, 8),
}
