"""Hardware presets as built: DGX-1, DGX-2, DGX A100, DGX H100, DGX B200, GB200 NVL72.

These presets describe real machines from their datasheets, beside the study's
platform models of :mod:`topologies.builders` (which stay unchanged). One
module per machine family:

* :mod:`topologies.hardware.v100`: DGX-1 (V100, hybrid cube-mesh) and DGX-2;
* :mod:`topologies.hardware.hgx`: NVSwitch baseboards, DGX A100, H100, B200;
* :mod:`topologies.hardware.nvl72`: GB200 NVL72 (multi-host NVLink domains);
* :mod:`topologies.hardware.cloud`: the machines people rent (cloud instances,
  DGX H200/B300, GB300 NVL72) as shapes over these families, with their network
  transport (:mod:`topologies.transports`); the data in ``shapes.toml``;
* :mod:`topologies.hardware.common`: the parts they share (option checks and
  :data:`OPTION_RANGES`, the PCIe tree, the rail fabric, the options every
  preset has and their sources).

Every hardware figure is a keyword parameter whose docstring names its public
source: a datasheet or system description by name (NVIDIA DGX user guides,
MLPerf system descriptions published by MLCommons, cloud providers' instance
tables); **[NCCL]** NCCL 2.30 source, ``src/graph/tuning.cc`` for the per-hop
latencies and the latency model, ``src/graph/topo.cc`` for NIC rates and
link types, ``src/graph/search.cc`` for the ring search; **[recalled]** a
widely published vendor figure not re-read in its datasheet (to be checked).

Conventions shared by all hardware presets
------------------------------------------
* **Full duplex** everywhere (NVLink, PCIe, InfiniBand/RoCE are full duplex):
  every bandwidth is per direction.
* **Raw line rates**, not NCCL's usable-rate constants: NVLink 2/3/4 carry
  25 GB/s per link and direction, NVLink 5 50 GB/s; NICs their signalling
  rate (400 Gb/s = 50e9 bytes/s). Protocol efficiency is the job of a
  profile (the ``nccl`` profile), not of the graph.
* **NVSwitch chips of one NVLink domain are folded into one node**
  (``n{s}/nvswitch``, or ``nvl{d}/nvswitch`` for a multi-host NVLink domain)
  whose GPU cables carry all of a GPU's links (e.g. 18 x 25 GB/s = 450e9 on
  H100). NVLink hardware stripes every transfer across all links, so one
  folded cable is what a flow sees; separate chips with shortest-path routing
  would put each GPU pair on one chip. The node records ``chips`` (physical
  NVSwitch chips) and ``links_per_gpu``. NCCL also folds them (one NVS node).
* **Latencies as measured**: route latencies equal NCCL's per-hop latencies
  of its LL protocol ([NCCL] ``tuning.cc``: NVLink 0.6 us, PCI 1.0 us, NET
  2.7 us), the closest of NCCL's figures to the hardware's own (a single
  store and a flag poll per hop; LL128 and Simple add protocol overhead,
  which belongs to the ``nccl`` profile). They are split over the cables of
  a route:

  - direct NVLink cable GPU - GPU: ``nvlink_latency = 0.6e-6``;
  - GPU - NVSwitch cable: ``nvswitch_latency = 0.3e-6`` (GPU -> switch ->
    GPU = 0.6 us);
  - PCIe cable: ``pcie_latency = 0.5e-6`` (GPU -> PCIe switch -> GPU = 1.0 us);
  - NIC - leaf cable, including the adapter: ``nic_latency = 0.3e-6`` and a
    switch crossing ``switch_latency = 0.1e-6``, so GPU -> PCIe -> NIC ->
    rail leaf -> NIC -> PCIe -> GPU = 4 x 0.5 + 2 x 0.3 + 0.1 = 2.7 us.

* **Rail-optimized fabric** (``--nodes N``): NIC ``i`` of every node of a
  scalable unit (``nodes_per_su`` nodes) plugs into rail leaf
  ``su{u}/leaf{i}``; leaves reach spines ``spine{j}`` with
  ``round(down / oversubscription)`` uplinks each. Options for every
  hardware preset: ``nics_per_node``, ``nic_bandwidth``,
  ``oversubscription``, ``nodes_per_su``, ``spines`` (validated, with the
  allowed range in the error message); :mod:`topologies.hardware.common`
  documents them and the network transport's ``net_latency``,
  ``net_conn_bandwidth``, ``net_connections``, ``net_goodput`` and
  ``net_devices_per_gpu``.
* **Attributes NCCL-style algorithms read**: every GPU node has ``nic`` (the
  id of its nearest NIC: the one on its own PCIe switch, NIC
  ``floor(local * nics / gpus)``); NVSwitch nodes have ``nvls`` (True when
  the switch can reduce: NVLink SHARP on H100, B200, GB200) and the graph
  has ``nvls`` too; ``rank_order`` is a ring over the fastest links when the
  intra-node NVLink graph is not uniform (DGX-1: the double-link cycle);
  ``platform = "hardware"`` tells these presets from the study's models.

CPU sockets and host-memory paths are not modelled: NCCL never moves GPU
data through them on these machines (GPUDirect P2P and RDMA).

Examples
--------
>>> from topologies import hardware
>>> G = hardware.dgx_h100(2)
>>> G.graph["platform"], G.graph["gpus_per_node"], G.graph["nvls"]
('hardware', 8, True)
>>> sorted(hardware.OPTION_RANGES)
['net_conn_bandwidth', 'net_goodput', 'net_latency', 'nic_bandwidth', 'oversubscription']
"""

from .common import OPTION_RANGES, nearest_nic
from .hgx import dgx_a100, dgx_b200, dgx_h100, hgx_node
from .nvl72 import gb200_nvl72
from .v100 import dgx1_v100, dgx1_v100_node, dgx2_v100, dgx2_v100_node

__all__ = [
    "dgx1_v100",
    "dgx2_v100",
    "dgx_a100",
    "dgx_h100",
    "dgx_b200",
    "gb200_nvl72",
    "hgx_node",
    "dgx1_v100_node",
    "dgx2_v100_node",
    "nearest_nic",
    "OPTION_RANGES",
]
