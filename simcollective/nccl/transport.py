"""What NCCL's model reads of the network transport a topology names.

A topology built from a shape (:mod:`topologies.hardware.cloud`) records its
transport (:mod:`topologies.transports`) as graph attributes: ``net_latency``
(the latency the transport advertises to NCCL, spent by
:func:`simcollective.nccl.model.latency` per network hop) and
``net_protocols`` (the protocols used over the network, comma-separated:
e.g. ``"simple"`` on GCP's GPUDirect-TCPX). A graph without them is NCCL's IB transport: no
advertised latency, every protocol.

Examples
--------
>>> import networkx as nx
>>> net_protocols(nx.DiGraph(net_protocols="ll128,simple"), 2)
('ll128', 'simple')
>>> net_protocols(nx.DiGraph(net_protocols="simple"), 1)
('ll', 'll128', 'simple')
"""

from __future__ import annotations

__all__ = ["ALL_PROTOCOLS", "net_protocols", "protocol_allowed", "advertised_latency"]

#: Every NCCL protocol (the tuner's order).
ALL_PROTOCOLS = ("ll", "ll128", "simple")


def net_protocols(graph, nnodes: int) -> tuple:
    """The protocols NCCL may use for a communicator over `nnodes` nodes of `graph`: those of
    its transport across nodes, all of them within one node."""
    if nnodes <= 1:
        return ALL_PROTOCOLS
    named = str(graph.graph.get("net_protocols", ",".join(ALL_PROTOCOLS))).split(",")
    return tuple(p for p in ALL_PROTOCOLS if p in {x.strip().lower() for x in named})


def advertised_latency(m, proto: str) -> float:
    """What the transport's advertised latency (``graph.latencyInter``: ncclNetProperties'
    latency, 0 for NCCL's IB transport) adds to one network hop of machine `m`'s rings and
    trees (us): once, and again for Simple, whose receives wait for a GPUDirect flush
    (tuning.cc)."""
    return m.net_latency_us * (2 if proto == "simple" else 1)


def protocol_allowed(m, proto: str) -> bool:
    """Whether the transport of machine `m` (a :class:`~simcollective.nccl.model.Machine`) carries `proto`."""
    return proto in m.net_protocols
