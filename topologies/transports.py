"""Network transports as data: :data:`TRANSPORTS`, loaded from ``transports.toml``.

A transport is what NCCL talks to across nodes: NCCL's IB verbs transport on
InfiniBand or RoCE, AWS EFA through the aws-ofi-nccl plugin, GCP's
GPUDirect-TCPX/TCPXO or its RDMA plugin. Each entry of the table gives, with
its source, the figures that decide a collective's time across nodes (see
the table's header for what each one means). A NIC node names its transport
(attribute ``transport``, a key of :data:`TRANSPORTS`); the presets of
:mod:`topologies.hardware.cloud` take ``transport=`` and derive the NIC
cables' latency, the advertised ``net_latency``, the per-stream cap and the
streams per connection (``net_conn_bandwidth`` x ``net_connections``: the most
one connection carries), the NIC rate under another transport than the
shape's own, the cables' payload share of their rate (``goodput``), the NICs
each GPU drives (``devices_per_gpu``) and the network protocols from it where
the shape gives no figure of its own (:func:`apply_figures` puts the preset's
options on its graph, :func:`apply_transport` the transport's name).

Examples
--------
>>> t = transport("efa-v1")
>>> t.net_latency, t.link_type, t.source("net_latency")[:23]
(7.5e-05, 'ethernet', 'aws-ofi-nccl reports 75')
>>> transport("ib-ndr").line_rate, transport("ib-ndr").net_protocols
(50000000000.0, ('ll', 'll128', 'simple'))
>>> t.connections, t.goodput, t.devices_per_gpu   # "all" NICs nearest a GPU: inf
(1, 1.0, inf)
>>> transport("myrinet")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topologies.schema.TopologyError: unknown transport 'myrinet'; allowed: ib-edr, ib-hdr, ...
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources

from .schema import TopologyError

__all__ = ["Transport", "TRANSPORTS", "FIGURES", "IB_VERBS", "transport", "apply_transport", "apply_figures"]

#: The figures every transport has, in the order listings show them.
FIGURES = ("link_type", "line_rate", "net_latency", "hop_latency", "net_protocols",
           "conn_bandwidth", "goodput", "connections", "devices_per_gpu")


#: The transports that are NCCL's own IB verbs transport (``src/transport/net_ib``), which reads
#: the ``NCCL_IB_*`` settings; the others are net plugins with settings of their own.
IB_VERBS = ("ib-edr", "ib-hdr", "ib-ndr", "ib-xdr", "roce-v2")


@dataclass(frozen=True)
class Transport:
    """One network transport: its figures (SI units) and, per figure, its source."""

    name: str
    description: str
    link_type: str
    line_rate: float
    net_latency: float
    hop_latency: float
    net_protocols: tuple
    conn_bandwidth: float
    goodput: float
    connections: int
    devices_per_gpu: float           # an int, or inf ("all")
    sources: dict = field(default_factory=dict, compare=False)

    def source(self, figure: str) -> str:
        """The source of `figure` (one of :data:`FIGURES`)."""
        return self.sources[figure]

    def written(self, figure: str):
        """`figure` as the table writes it (``devices_per_gpu`` ``inf``: ``"all"``)."""
        value = getattr(self, figure)
        return "all" if figure == "devices_per_gpu" and value == math.inf else value


def _figure(key: str, value):
    if key == "net_protocols":
        return tuple(value)
    if key == "devices_per_gpu" and value == "all":
        return math.inf
    if key in ("connections", "devices_per_gpu"):
        return int(value)
    if key == "link_type":
        return str(value)
    return math.inf if value == "inf" else float(value)


def _entry(name: str, raw: dict, table: dict) -> Transport:
    """Transport `name` of the raw `table`, its missing figures taken from the entry it is
    ``like`` (one level)."""
    base = table[raw["like"]] if "like" in raw else {}
    figures, sources = {}, {}
    for key in FIGURES:
        cell = raw.get(key, base.get(key))
        if not isinstance(cell, dict) or "value" not in cell or not cell.get("source"):
            raise TopologyError(f"transport {name!r}: figure {key!r} needs a value and a source")
        figures[key] = _figure(key, cell["value"])
        sources[key] = str(cell["source"])
    return Transport(name=name, description=str(raw["description"]), sources=sources, **figures)


def _load() -> dict:
    text = resources.files(__package__).joinpath("transports.toml").read_text()
    table = tomllib.loads(text)
    return {name: _entry(name, raw, table) for name, raw in table.items()}


#: Transport name -> :class:`Transport`, in the table's order.
TRANSPORTS: dict[str, Transport] = _load()


def transport(name: object) -> Transport:
    """The :class:`Transport` called `name`, or a one-line TopologyError listing the allowed ones."""
    if not isinstance(name, str) or name not in TRANSPORTS:
        raise TopologyError(f"unknown transport {name!r}; allowed: {', '.join(TRANSPORTS)}")
    return TRANSPORTS[name]


def apply_transport(G, t: Transport, *, hop_latency: float | None = None) -> None:
    """Name transport `t` on every NIC of `G` and on its NIC - fabric cables (their
    ``transport`` attribute and, when `hop_latency` is given, their latency); every network
    cable takes the transport's ``link_type``; the graph records ``transport`` and
    ``net_protocols`` (comma-separated, e.g. ``"ll128,simple"``). Its other figures are the
    preset's options (:func:`apply_figures`). An Ethernet fabric that spreads its routes
    (graph ``routing`` ``dest``: several scalable units) spreads them by ECMP hash (``hash``),
    as Ethernet switches do, not by the InfiniBand subnet manager's destination tables."""
    G.graph["transport"] = t.name
    if t.link_type == "ethernet" and G.graph.get("routing") == "dest":
        G.graph["routing"] = "hash"
    G.graph["net_protocols"] = ",".join(t.net_protocols)   # a string: graphs save scalars only
    nics = {n for n, d in G.nodes(data=True) if d.get("kind") == "nic"}
    for n in nics:
        G.nodes[n]["transport"] = t.name
    for u, v, d in G.edges(data=True):
        if d.get("link_type") not in ("infiniband", "ethernet"):
            continue
        d["link_type"] = t.link_type          # the whole scale-out fabric
        if u in nics or v in nics:
            d["transport"] = t.name
            if hop_latency is not None:
                d["latency"] = float(hop_latency)


def apply_figures(G, *, conn_bandwidth: float, connections: int, goodput: float,
                  devices_per_gpu: float) -> None:
    """The network transport's figures on the graph `G` of a hardware preset (its options
    ``net_conn_bandwidth``, ``net_connections``, ``net_goodput``, ``net_devices_per_gpu``):
    the most one connection carries on the NIC cables (:func:`_cap_connections`), the payload
    share of the scale-out cables (:func:`_goodput`) and the NICs each GPU drives
    (:func:`_devices_per_gpu`; 0 or ``inf``: all of them)."""
    _cap_connections(G, conn_bandwidth, connections)
    _goodput(G, goodput)
    _devices_per_gpu(G, devices_per_gpu)


def _cap_connections(G, conn_bandwidth: float, connections: int) -> None:
    """Give every NIC - fabric cable a per-flow cap (edge attribute ``flow_bandwidth``: the
    most one flow crossing it may carry, see :class:`simcollective.network.routing.Router`):
    one connection's ``connections`` streams of ``conn_bandwidth`` each; nothing when
    unlimited. The graph records both figures (``net_connections`` when above 1)."""
    if conn_bandwidth == math.inf:
        return
    G.graph["net_conn_bandwidth"] = float(conn_bandwidth)
    if connections != 1:
        G.graph["net_connections"] = int(connections)
    cap = float(conn_bandwidth) * connections
    for u, v, d in G.edges(data=True):
        if d.get("link_type") in ("infiniband", "ethernet") and "nic" in (
                G.nodes[u].get("kind"), G.nodes[v].get("kind")):
            d["flow_bandwidth"] = cap


def _goodput(G, goodput: float) -> None:
    """Every scale-out cable of `G` carries ``goodput`` x its rate as payload (its
    ``bandwidth``, what the simulation's flows share); the rate itself stays as the cable's
    ``line_rate``, the device speed NCCL's model reads. Nothing at goodput 1."""
    if goodput == 1.0:
        return
    G.graph["goodput"] = float(goodput)
    for _, _, d in G.edges(data=True):
        if d.get("link_type") in ("infiniband", "ethernet"):
            d.setdefault("line_rate", float(d["bandwidth"]))
            d["bandwidth"] = d["line_rate"] * goodput


def _devices_per_gpu(G, most: float) -> None:
    """Each GPU of `G` keeps its ``most`` nearest NICs (its ``nics`` list is nearest first, see
    :func:`topologies.hardware.common.gpu_nics`): NCCL's channels of the GPU cross the network on
    those alone, and NCCL's model counts their rings (graph ``devices_per_gpu``). Nothing when
    every GPU has at most ``most``."""
    if not most or most == math.inf:
        return
    for _, d in G.nodes(data=True):
        listed = str(d.get("nics") or "").split(",") if d.get("kind") == "gpu" else []
        if len(listed) > most:
            d["nics"] = ",".join(listed[:int(most)])
            G.graph["devices_per_gpu"] = int(most)
