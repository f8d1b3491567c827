"""NVSwitch baseboards (HGX) as built: DGX A100, DGX H100, DGX B200.

:func:`hgx_node` adds one server of 8 GPUs on a folded NVSwitch (also the
building block of :mod:`topologies.hardware.nvl72`); each preset puts such
servers on a rail fabric. Conventions and sources: :mod:`topologies.hardware`.
"""

from __future__ import annotations

import math

import networkx as nx

from ..nodes import add_cable, add_gpu
from ..schema import validate
from .common import (FULL, common_checks, fabric_options, fabric_text, hardware_graph, pcie_tree,
                     rails, switch_node)

__all__ = ["hgx_node", "dgx_a100", "dgx_h100", "dgx_b200"]


def hgx_node(
    G: nx.DiGraph,
    server: int,
    *,
    model: str,
    gpus: int,
    nvlink_bandwidth: float,
    nvswitch_latency: float,
    links_per_gpu: int,
    chips: int,
    nvls: bool,
    pcie_switches: int,
    nics: int,
    pcie_bandwidth: float,
    pcie_latency: float,
    nic_model: str = "",
    switch: str | None = None,
    first_local: int = 0,
    direct_nics: bool = False,
    duplex: str = FULL,
) -> list[str]:
    """Add one NVSwitch server (HGX-style baseboard); return its NIC ids (NIC j = rail j).

    Adds GPUs ``n{server}/gpu{i}`` (GPU model `model`), the folded NVSwitch
    ``n{server}/nvswitch`` of `chips` chips (NVLink SHARP when `nvls`), or
    cables to an existing NVLink-domain switch `switch` (GB200 NVL72), one
    cable per GPU of ``links_per_gpu * nvlink_bandwidth`` per direction and
    `nvswitch_latency`, and the PCIe tree of
    :func:`topologies.hardware.common.pcie_tree` (`pcie_switches`
    switches, `nics` NICs of `nic_model`, every cable `pcie_bandwidth` and
    `pcie_latency`; with `direct_nics` each NIC hangs off its GPU). `duplex`
    is ``"full"`` as built, ``"shared"`` only to compare with the study's
    convention. `first_local` is accepted and unused.

    Examples
    --------
    >>> G = nx.DiGraph()
    >>> hgx_node(G, 0, model="H100", gpus=8, nvlink_bandwidth=25e9, nvswitch_latency=3e-7,
    ...          links_per_gpu=18, chips=4, nvls=True, pcie_switches=8, nics=8,
    ...          pcie_bandwidth=63e9, pcie_latency=5e-7)[:2]
    ['n0/nic0', 'n0/nic1']
    >>> G.edges["n0/gpu0", "n0/nvswitch"]["bandwidth"], G.nodes["n0/gpu5"]["nic"]
    (450000000000.0, 'n0/nic5')
    """
    gpu_ids = [add_gpu(G, server, i, model) for i in range(gpus)]
    sid = switch or switch_node(G, f"n{server}/nvswitch", chips=chips,
                                links_per_gpu=links_per_gpu, nvls=nvls)
    for gid in gpu_ids:
        add_cable(G, gid, sid, links_per_gpu * nvlink_bandwidth, nvswitch_latency,
                  "nvswitch", duplex)
    return pcie_tree(G, server, gpu_ids, switches=pcie_switches, nics=nics,
                     pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency,
                     nic_model=nic_model, direct=direct_nics, duplex=duplex)


def _hgx_cluster(name, text, nodes, net, *, model, gpus, links_per_gpu, chips, nvls,
                 pcie_switches, nic_model, nvlink_bandwidth, nvswitch_latency, pcie_bandwidth,
                 pcie_latency) -> nx.DiGraph:
    """`nodes` servers of :func:`hgx_node` on the rail fabric of the options `net`."""
    common_checks(nodes, gpus, **net)
    per_gpu = links_per_gpu * nvlink_bandwidth
    G = hardware_graph(name, f"{text}: {nodes} node(s) x {gpus} {model} on NVSwitch "
                       f"({links_per_gpu} x {nvlink_bandwidth / 1e9:g} GB/s/dir = "
                       f"{per_gpu / 1e9:g} GB/s/dir "
                       f"per GPU{', NVLS' if nvls else ''}), {fabric_text(**net)}",
                       gpus, nvls=nvls)
    ports = [hgx_node(G, s, model=model, gpus=gpus, nvlink_bandwidth=nvlink_bandwidth,
                      nvswitch_latency=nvswitch_latency, links_per_gpu=links_per_gpu,
                      chips=chips, nvls=nvls, pcie_switches=pcie_switches,
                      nics=net["nics_per_node"], pcie_bandwidth=pcie_bandwidth,
                      pcie_latency=pcie_latency, nic_model=nic_model, duplex=net["duplex"])
             for s in range(nodes)]
    rails(G, ports, **net)
    return validate(G)


def dgx_a100(
    nodes: int = 1, *,
    nics_per_node: int = 8, nic_bandwidth: float = 25e9,
    oversubscription: float = 1.0, nodes_per_su: int = 20, spines: int = 0,
    nvlink_bandwidth: float = 25e9, links_per_gpu: int = 12, nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 31.5e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 2e12, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """DGX A100 as built: 8 A100, 12 NVLink 3 links to 6 NVSwitches, 8 HDR NICs, rail fabric.

    Parameters
    ----------
    nodes : int
        DGX A100 servers.
    nics_per_node : int
        8 ConnectX-6 HDR compute adapters; 4 PCIe Gen4 switch complexes each
        with 2 GPUs and 2 NICs [recalled, DGX A100 User Guide], modelled as one
        switch per GPU and its NIC (GPU i, NIC i on ``plx{i}``) with the two
        switches of a complex cabled together, so that GPU i's shortest route
        out is NIC i (rail i); 1 to 16 (AWS p4d: 4, OCI BM.GPU4.8: 16).
    nic_bandwidth : float
        HDR 200 Gb/s = 25e9 per direction ([NCCL] ``topo.cc``: Mb/s / 8000).
    nodes_per_su, switch_bandwidth : int, float
        20 nodes per rail leaf and a crossing capacity of 2e12: a 40-port HDR
        switch, 20 down, 20 up, 40 x 25e9 x 2 [recalled, QM8700 16 Tb/s].
    nvlink_bandwidth, links_per_gpu : float, int
        12 NVLink 3 links of 25e9 per direction = 300e9 per GPU ("600GB/s
        bi-directional (300GB/s TX & 300GB/s RX)", as an A100 node reports
        it in the nccl-tests log ``experiments/nccl-tests/a100x8-1node_sendrecv_liplus.txt``);
        6 NVSwitch chips, no NVLS.
    pcie_bandwidth : float
        PCIe Gen4 x16: 31.5e9 per direction [recalled, PCI-SIG theoretical x16].

    Other Parameters
    ----------------
    oversubscription, spines, nvswitch_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`).

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = False``.

    Examples
    --------
    >>> G = dgx_a100(2)
    >>> G.edges["n0/gpu2", "n0/nvswitch"]["bandwidth"], G.nodes["n0/nvswitch"]["nvls"]
    (300000000000.0, False)
    >>> sorted(G.successors("n1/plx3"))
    ['n1/gpu3', 'n1/nic3', 'n1/plx2']
    """
    net = fabric_options(locals())
    return _hgx_cluster(
        "dgx-a100", "DGX A100", nodes, net, model="A100", gpus=8, links_per_gpu=links_per_gpu,
        chips=6, nvls=False, pcie_switches=4, nic_model="ConnectX-6 HDR",
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency)


def dgx_h100(
    nodes: int = 1, *,
    nics_per_node: int = 8, nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0, nodes_per_su: int = 32, spines: int = 0,
    nvlink_bandwidth: float = 25e9, links_per_gpu: int = 18, nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 6.4e12, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """DGX H100 as built: 8 H100, 18 NVLink 4 links to 4 NVSwitches (NVLS), 8 NDR NICs, rails.

    Parameters
    ----------
    nodes : int
        DGX H100 servers.
    nics_per_node : int
        8 ConnectX-7 400 Gb/s, one per GPU on its PCIe Gen5 switch
        (rail-optimized) (H200 SXM MLPerf Inference v4.1 system description;
        Dell XE9680: 8 x CX-7 IB 400G); 1 to 16 (OCI BM.GPU.H100.8: 16 x 200G).
    nic_bandwidth : float
        NDR 400 Gb/s = 50e9 per direction ([NCCL] ``topo.cc``: Mb/s / 8000).
    nodes_per_su, switch_bandwidth : int, float
        32 nodes per rail leaf and a crossing capacity of 6.4e12: a 64-port NDR
        switch, 32 down, 32 up, 64 x 50e9 x 2 [recalled, QM9700 51.2 Tb/s].
    nvlink_bandwidth, links_per_gpu : float, int
        18 NVLink 4 links of 25e9 per direction = 450e9 per GPU ("18x 4th Gen
        NVLink, 900GB/s" bidirectional, H200 SXM MLPerf system description;
        "450GB/s is the line rate", NVIDIA in the nccl-tests issue tracker);
        4 NVSwitch chips [recalled, NVIDIA Fabric Manager User Guide] with
        NVLink SHARP (``nvls=True``).
    pcie_bandwidth : float
        PCIe Gen5 x16: 63e9 per direction [recalled, PCI-SIG theoretical x16].

    Other Parameters
    ----------------
    oversubscription, spines, nvswitch_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`, which
        also gives the fitted ``net_conn_bandwidth`` of one H100 cluster).

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = True``.

    Examples
    --------
    >>> G = dgx_h100(2)
    >>> G.edges["n0/gpu3", "n0/nvswitch"]["bandwidth"], G.nodes["n0/nvswitch"]["nvls"]
    (450000000000.0, True)
    >>> G.nodes["n1/gpu3"]["nic"], sorted(G.successors("su0/leaf3"))
    ('n1/nic3', ['n0/nic3', 'n1/nic3', 'spine0', 'spine1'])
    """
    net = fabric_options(locals())
    return _hgx_cluster(
        "dgx-h100", "DGX H100", nodes, net, model="H100", gpus=8, links_per_gpu=links_per_gpu,
        chips=4, nvls=True, pcie_switches=8, nic_model="ConnectX-7 NDR",
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency)


def dgx_b200(
    nodes: int = 1, *,
    nics_per_node: int = 8, nic_bandwidth: float = 50e9,
    oversubscription: float = 1.0, nodes_per_su: int = 32, spines: int = 0,
    nvlink_bandwidth: float = 50e9, links_per_gpu: int = 18, nvswitch_latency: float = 0.3e-6,
    pcie_bandwidth: float = 63e9, pcie_latency: float = 0.5e-6, nic_latency: float = 0.3e-6,
    uplink_latency: float = 5e-8, switch_bandwidth: float = 6.4e12, switch_latency: float = 0.1e-6,
    net_latency: float = 0.0, net_conn_bandwidth: float = math.inf, net_connections: int = 1,
    net_goodput: float = 1.0, net_devices_per_gpu: int = 0, duplex: str = "full",
) -> nx.DiGraph:
    """DGX B200 as built: 8 B200, 18 NVLink 5 links to 2 NVSwitches (NVLS), 8 x 400G NICs, rails.

    Parameters
    ----------
    nodes : int
        DGX B200 servers.
    nics_per_node : int
        8 ConnectX-7 400 Gb/s, one per GPU ("8x ConnectX-7 IB NDR 400Gb/s",
        Nebius B200 MLPerf Inference v6.0 system description); 1 to 16.
    nic_bandwidth : float
        400 Gb/s = 50e9 per direction ([NCCL] ``topo.cc``).
    nvlink_bandwidth, links_per_gpu : float, int
        18 NVLink 5 links of 50e9 per direction = 900e9 per GPU ("1.8 TB/s
        bidirectional", "14.4 TB/s aggregated" per 8 GPUs, same system
        description); 2 NVSwitch chips [recalled] with NVLink SHARP.

    Other Parameters
    ----------------
    nodes_per_su, pcie_bandwidth, switch_bandwidth
        As :func:`dgx_h100` (NDR fabric, PCIe Gen5).
    oversubscription, spines, nvswitch_latency, pcie_latency, nic_latency, uplink_latency, switch_latency, net_latency, net_conn_bandwidth, net_connections, net_goodput, net_devices_per_gpu, duplex
        As every hardware preset (:mod:`topologies.hardware.common`).

    Returns
    -------
    networkx.DiGraph
        ``gpus_per_node = 8``, ``default_group_size = 8``, ``nvls = True``.

    Examples
    --------
    >>> G = dgx_b200(2)
    >>> G.edges["n1/nvswitch", "n1/gpu7"]["bandwidth"], G.nodes["n1/nvswitch"]["chips"]
    (900000000000.0, 2)
    """
    net = fabric_options(locals())
    return _hgx_cluster(
        "dgx-b200", "DGX B200", nodes, net, model="B200", gpus=8, links_per_gpu=links_per_gpu,
        chips=2, nvls=True, pcie_switches=8, nic_model="ConnectX-7 NDR",
        nvlink_bandwidth=nvlink_bandwidth, nvswitch_latency=nvswitch_latency,
        pcie_bandwidth=pcie_bandwidth, pcie_latency=pcie_latency)
