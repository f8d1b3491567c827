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

__all__ = ["describe", "figures", "documented"]


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
    >>> figures("dgx1")[0][:2]
    ('nodes_per_leaf', 6)
    """
    from .hardware.cloud import FAMILIES, SHAPES, figure_rows
    from .registry import PRESETS, preset_options
    from .transports import FIGURES, transport

    if name not in SHAPES:
        said = documented(PRESETS[name][0])
        return [(k, v, said.get(k, "the builder's docstring")) for k, v in preset_options(name).items()]
    said = documented(FAMILIES[SHAPES[name].family])
    rows = [(k, v, said.get(k, src) if src.startswith("as the ") else src)
            for k, v, src in figure_rows(name)]
    t = transport(SHAPES[name].transport)
    return rows + [(f"transport.{f}", t.written(f), t.source(f)) for f in FIGURES]


def documented(builder) -> dict:
    """Option -> the text of its entry in `builder`'s NumPy-style docstring (``Parameters`` and
    ``Other Parameters``; an entry naming several options gives each the same text; one that
    says "As every hardware preset" gives the text of :mod:`topologies.hardware.common`).

    Examples
    --------
    >>> from topologies.hardware import dgx_h100
    >>> documented(dgx_h100)["nic_bandwidth"]
    'NDR 400 Gb/s = 50e9 per direction ([NCCL] ``topo.cc``: Mb/s / 8000).'
    """
    from .hardware import common

    shared = _entries(common.__doc__ or "", "")
    return {k: shared.get(k, v) if v.startswith("As every hardware preset") else v
            for k, v in _entries(builder.__doc__ or "", "    ").items()}


def _entries(doc: str, indent: str) -> dict:
    """The NumPy-style entries ``name[, name...] : type`` at `indent` of `doc`, with their text."""
    out: dict = {}
    keys: list = []
    for line in doc.splitlines():
        if line.startswith(indent) and not line.startswith(indent + " ") and line.strip():
            names = [k.strip() for k in line.strip().split(" : ")[0].split(",")]
            # an entry: "name : type", or names only (the "Other Parameters" lists)
            keys = names if " : " in line or all(k.isidentifier() for k in names) else []
            for k in keys:
                out.setdefault(k, "")
        elif line.startswith(indent + "    ") and keys:
            for k in keys:
                out[k] = f"{out[k]} {line.strip()}".strip()
    return {k: v for k, v in out.items() if v}
