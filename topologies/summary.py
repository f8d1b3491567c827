"""A topology at a glance: :func:`describe` counts what a graph holds (for a CLI summary).

Examples
--------
>>> from topologies import dgx1_cluster
>>> describe(dgx1_cluster(2))["links"]
{'infiniband': 9, 'nvlink': 32, 'pcie': 16}
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx

from .schema import KINDS, gpus

__all__ = ["describe", "figures"]


def describe(G: nx.DiGraph) -> dict[str, Any]:
    """Summarise a topology as a JSON-serialisable dict (for a CLI summary).

    Parameters
    ----------
    G : networkx.DiGraph
        A topology.

    Returns
    -------
    dict
        Keys: ``name``, ``description``, ``nodes``, ``directed_edges``,
        ``cables`` (unordered node pairs joined by at least one edge),
        ``gpus``, ``servers``, ``gpus_per_node``, ``default_group_size``,
        ``rank_order`` (or None), ``kinds`` (node count per kind, all of
        :data:`KINDS`), ``switch_levels`` (switch count per ``level``),
        ``links`` (cable count per link type), ``duplex`` (cable count per
        duplex mode), ``crossing_nodes`` (nodes with crossing attributes).

    Examples
    --------
    >>> from topologies import abci
    >>> d = describe(abci(2))
    >>> d["gpus"], d["servers"], d["kinds"]["pcie_switch"], d["links"]["nvlink"]
    (8, 2, 4, 12)
    >>> d["switch_levels"]
    {'fbb': 3, 'leaf': 4, 'spine': 2}
    """
    kinds = Counter(d.get("kind") for _, d in G.nodes(data=True))
    levels = Counter(
        d["level"] for _, d in G.nodes(data=True)
        if d.get("kind") == "switch" and "level" in d
    )
    links: Counter[str] = Counter()
    duplex: Counter[str] = Counter()
    for u, v, d in G.edges(data=True):
        if G.has_edge(v, u) and str(v) < str(u):
            continue  # count each cable once
        links[d.get("link_type")] += 1
        duplex[d.get("duplex")] += 1
    gpu_list = gpus(G)
    return {
        "name": G.graph.get("name"),
        "description": G.graph.get("description"),
        "nodes": G.number_of_nodes(),
        "directed_edges": G.number_of_edges(),
        "cables": sum(links.values()),
        "gpus": len(gpu_list),
        "servers": len({G.nodes[g]["server"] for g in gpu_list}),
        "gpus_per_node": G.graph.get("gpus_per_node"),
        "default_group_size": G.graph.get("default_group_size"),
        "rank_order": G.graph.get("rank_order"),
        "kinds": {k: kinds.get(k, 0) for k in KINDS},
        "switch_levels": dict(sorted(levels.items(), key=lambda kv: str(kv[0]))),
        "links": dict(sorted(links.items(), key=lambda kv: str(kv[0]))),
        "duplex": dict(sorted(duplex.items(), key=lambda kv: str(kv[0]))),
        "crossing_nodes": sum(
            1 for _, d in G.nodes(data=True) if "bandwidth" in d or "latency" in d
        ),
    }


def figures(name: str) -> list:
    """(key, default, source) of every ``--topology-opt`` key of preset `name` and, for a
    rented shape (:mod:`topologies.hardware.cloud`), of its transport's figures (keys
    ``transport.<figure>``, not options): what ``simcollective topologies --show`` lists.

    Examples
    --------
    >>> rows = {k: (v, s) for k, v, s in figures("aws-p4d")}
    >>> rows["nics_per_node"][0], rows["transport"][0], rows["transport.net_latency"][0]
    (4, 'efa-v1', 7.5e-05)
    >>> figures("dgx1")[0]
    ('nodes_per_leaf', 6, "the builder's docstring")
    """
    from .hardware.cloud import SHAPES, figure_rows
    from .registry import preset_options
    from .transports import FIGURES, transport

    if name not in SHAPES:
        return [(k, v, "the builder's docstring") for k, v in preset_options(name).items()]
    t = transport(SHAPES[name].transport)
    return figure_rows(name) + [(f"transport.{f}", getattr(t, f), t.source(f)) for f in FIGURES]
