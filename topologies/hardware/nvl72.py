"""GB200 NVL72 as built: hosts of 4 B200 in NVLink domains of up to 72 GPUs, on rails.

Unlike the HGX servers of :mod:`topologies.hardware.hgx`, several hosts share
one NVLink domain. A host is a compute tray, one OS node: 2 Grace + 4 B200.
Hosts ``d * hosts_per_domain .. (d+1) * hosts_per_domain - 1`` share the
NVLink domain ``nvl{d}/nvswitch`` (the 9 switch trays, 18 NVSwitch chips,
folded into one node with NVLS); every GPU has 18 NVLink 5 links to it.
Each GPU has its own NIC (``n{s}/nic{i}``), NIC i of every host on rail i
across domains. The GPU - NIC path is one PCIe Gen5 x16 cable: the tray's
real path (NIC on the Grace CPU's PCIe, Grace - B200 over NVLink-C2C, about
200 GB/s by nvbandwidth in Azure's AI-benchmarking-guide results for ND
GB200 v6) is faster than the NIC, so it never binds and is not modelled hop
by hop. The graph records ``hosts_per_domain``. Sources: "9 NVLink switch
trays per rack" (NVIDIA Base Command Manager documentation); "4-GPU node,
NV18 via NVSwitch" (Crusoe GB200 NVL72 MLPerf system description); the
72-GPU domain of 18 compute trays [recalled]. Conventions and sources:
:mod:`topologies.hardware`.
"""

from __future__ import annotations

import math

import networkx as nx

from ..schema import TopologyError, validate
from .common import common_checks, fabric_options, fabric_text, hardware_graph, rails, switch_node
from .hgx import hgx_node

__all__ = ["gb200_nvl72", "domains_of"]


def _check_hosts_per_domain(hosts_per_domain: object) -> None:
    if (isinstance(hosts_per_domain, bool) or not isinstance(hosts_per_domain, int)
            or not 1 <= hosts_per_domain <= 18):
        raise TopologyError(f"hosts_per_domain must be an int from 1 to 18 (4-GPU hosts per "
                            f"NVLink domain of up to 72 GPUs), got {hosts_per_domain!r}")


def _description(nodes, domains, hosts_per_domain, links_per_gpu, nvlink_bandwidth, net) -> str:
    return (f"GB200 NVL72: {nodes} host(s) x 4 B200 in {domains} "
            f"NVLink domain(s) of up to {4 * hosts_per_domain} GPUs ({links_per_gpu} x "
            f"{nvlink_bandwidth / 1e9:g} GB/s/dir per GPU, NVLS), {fabric_text(**net)}")


def domains_of(nodes: int, hosts_per_domain: int, domain_hosts: str = "") -> list[int]:
    """The NVLink domain of each of `nodes` hosts: consecutive domains of `hosts_per_domain`
    hosts, or of the sizes listed in `domain_hosts` (e.g. ``"18,16"``: racks of unequal
    sizes, which must add up to `nodes`, each from 1 to 18).

    Examples
    --------
    >>> domains_of(5, 2), domains_of(5, 18, "3,2")
    ([0, 0, 1, 1, 2], [0, 0, 0, 1, 1])
    >>> domains_of(5, 18, "3,3")
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: domain_hosts must be comma-separated ints from 1 to 18 (4-GPU hosts per NVLink domain) adding up to nodes = 5, got '3,3'
    """
    _check_hosts_per_domain(hosts_per_domain)
    if not domain_hosts:
        return [s // hosts_per_domain for s in range(nodes)]
    try:
        sizes = [int(x) for x in str(domain_hosts).split(",")]
    except ValueError:
        sizes = []
    if not sizes or sum(sizes) != nodes or not all(1 <= k <= 18 for k in sizes):
        raise TopologyError(f"domain_hosts must be comma-separated ints from 1 to 18 (4-GPU hosts "
                            f"per NVLink domain) adding up to nodes = {nodes}, got {domain_hosts!r}")
    return [d for d, k in enumerate(sizes) for _ in range(k)]


def _host(G, s, domain, *, links_per_gpu, **figures) -> list[str]:
    """Add host `s` (4 B200, a NIC each) to the switch of NVLink domain `domain` (added with
    the domain's first host); return its NICs."""
    sid = f"nvl{domain}/nvswitch"
    if sid not in G:
        switch_node(G, sid, chips=18, links_per_gpu=links_per_gpu, nvls=True)
    return hgx_node(G, s, model="B200", gpus=4, links_per_gpu=links_per_gpu, chips=18, nvls=True,
                    pcie_switches=4, nic_model="ConnectX-7", switch=sid, direct_nics=True,
                    **figures)


def gb200_nvl72(
    nodes: int = 18, *,
    hosts_per_domain: int = 18, domain_hosts: str = "",
    nics_per_node: int = 4, nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0, nodes_per_su: int = 32, spines: int = 0,
    nvlink_bandwidth: float = 50e9, links_per_gpu: int = 18, nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 6.4e12, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """GB200 NVL72 as built: hosts of 4 B200 in NVLink domains of 72 GPUs, 4 x 400G NICs per host.

    Parameters
    ----------
    nodes, hosts_per_domain : int
        Hosts (4 GPUs each; 18 = one NVL72 rack) and hosts per NVLink domain:
        18, the compute trays of a rack (layout and sources: the module's text); 1 to 18.
    domain_hosts : str
        Racks of unequal sizes, e.g. ``"18,16"`` (:func:`domains_of`); "" = `hosts_per_domain`.
    nics_per_node : int
        4 x 400 Gb/s RoCE/IB per host (OCI GB200 shape, OCI quick-start
        documentation); 1 to 8.
    nvlink_bandwidth, links_per_gpu : float, int
        NVLink 5: 18 x 50e9 = 900e9 per direction per GPU (as :func:`dgx_b200`).

    Other Parameters
    ----------------
    nic_bandwidth, nodes_per_su, pcie_bandwidth, switch_bandwidth
        As :func:`topologies.hardware.dgx_h100` (400 Gb/s NICs, NDR fabric, PCIe Gen5).
    oversubscription, spines, nvswitch_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`).

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 4``, ``default_group_size = 4``, ``nvls = True``.

    Examples
    --------
    >>> G = gb200_nvl72(18)
    >>> G.out_degree("nvl0/nvswitch"), G.edges["n17/gpu3", "nvl0/nvswitch"]["bandwidth"]
    (72, 900000000000.0)
    >>> H = gb200_nvl72(20)
    >>> H.has_edge("n18/gpu0", "nvl1/nvswitch"), H.nodes["n19/gpu2"]["nic"]
    (True, 'n19/nic2')
    """
    net = fabric_options(locals())
    common_checks(nodes, 4, **net)
    domains = domains_of(nodes, hosts_per_domain, domain_hosts)
    G = hardware_graph("gb200-nvl72", _description(nodes, domains[-1] + 1, hosts_per_domain,
                                                   links_per_gpu, nvlink_bandwidth, net), 4, nvls=True)
    G.graph["hosts_per_domain"] = hosts_per_domain
    ports = [_host(G, s, domains[s], nvlink_bandwidth=nvlink_bandwidth,
                   nvswitch_latency=nvswitch_latency, links_per_gpu=links_per_gpu,
                   nics=nics_per_node, pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                   duplex=duplex)
             for s in range(nodes)]
    rails(G, ports, **net)
    return validate(G)
