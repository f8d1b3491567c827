"""Read and write topologies: GraphML (``.graphml``) and NetworkX node-link JSON (``.json``).

:func:`load` converts whatever it reads to a ``networkx.DiGraph`` with the
attribute types of :mod:`topologies.schema` and validates it; :func:`save`
writes a topology so that ``load(path)`` gives back an equal graph (nodes,
edges, node/edge/graph attributes and their types).
"""

from __future__ import annotations

import io
import json
import math
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import networkx as nx

from .schema import TopologyError, validate

__all__ = ["load", "save", "FORMATS"]

#: File extensions understood by :func:`load` and :func:`save`.
FORMATS = (".graphml", ".json")

_FLOAT = ("bandwidth", "latency")
_NODE_INT = ("server", "local")
_GRAPH_INT = ("gpus_per_node", "default_group_size")
_SCALARS = (str, int, float, bool)


def _ext(path: Path) -> str:
    ext = path.suffix.lower()
    if ext not in FORMATS:
        raise TopologyError(
            f"{str(path)!r}: unknown topology file extension {ext or '(none)'!r} "
            f"(allowed: {', '.join(FORMATS)})"
        )
    return ext


def _coerce(value: Any, kind: type, what: str, path: Path) -> Any:
    if kind is int:
        if isinstance(value, bool):
            raise TopologyError(f"{str(path)!r}: {what} is {value!r}, expected an int")
        if isinstance(value, int):
            return value
        try:
            f = float(value)
        except (TypeError, ValueError):
            f = math.nan
        if not math.isfinite(f) or f != int(f):
            raise TopologyError(f"{str(path)!r}: {what} is {value!r}, expected an int")
        return int(f)
    if isinstance(value, bool):
        raise TopologyError(f"{str(path)!r}: {what} is {value!r}, expected a number")
    try:
        return float(value)
    except OverflowError:                  # an integer beyond a float's range (10**400)
        raise TopologyError(f"{str(path)!r}: {what} is {_short(value)}, beyond the range of a float "
                            "(about 1.8e308)") from None
    except (TypeError, ValueError):
        raise TopologyError(f"{str(path)!r}: {what} is {value!r}, expected a number") from None


def _short(value: Any) -> str:
    """An integer of hundreds of digits as its first digits and its length."""
    text = str(value)
    return text if len(text) <= 20 else f"{text[:12]}... ({len(text)} digits)"


def _to_digraph(H: nx.Graph, path: Path) -> nx.DiGraph:
    if H.is_multigraph():
        for u, v in H.edges():
            if H.number_of_edges(u, v) > 1:
                raise TopologyError(
                    f"{str(path)!r}: parallel edges {u!r} -> {v!r}; fold them into one "
                    "edge (sum the bandwidth)"
                )
    G = nx.DiGraph()
    G.graph.update(H.graph)
    G.add_nodes_from(H.nodes(data=True))
    if H.is_directed():
        G.add_edges_from((u, v, dict(d)) for u, v, d in H.edges(data=True))
    else:
        for u, v, d in H.edges(data=True):
            G.add_edge(u, v, **d)
            G.add_edge(v, u, **d)
    for key in _GRAPH_INT:
        if key in G.graph:
            G.graph[key] = _coerce(G.graph[key], int, f"graph attribute {key!r}", path)
    for n, d in G.nodes(data=True):
        for key in _FLOAT:
            if key in d:
                d[key] = _coerce(d[key], float, f"node {n!r} attribute {key!r}", path)
        for key in _NODE_INT:
            if key in d:
                d[key] = _coerce(d[key], int, f"node {n!r} attribute {key!r}", path)
    for u, v, d in G.edges(data=True):
        for key in _FLOAT:
            if key in d:
                d[key] = _coerce(d[key], float, f"edge {u!r} -> {v!r} attribute {key!r}", path)
    return G


def load(path: str | os.PathLike, data: bytes | str | None = None) -> nx.DiGraph:
    """Load a topology from a ``.graphml`` or node-link ``.json`` file and validate it.

    ``data``: the file's bytes (or, for JSON, its text), already read (the command line reads user files with size and
    nesting limits first); ``path`` then only names the file and its format.

    Undirected graphs become two directed edges per edge. ``bandwidth`` and
    ``latency`` become floats; ``server``, ``local``, ``gpus_per_node`` and
    ``default_group_size`` become ints.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    networkx.DiGraph

    Raises
    ------
    TopologyError
        Missing or unreadable file, unknown extension, malformed GraphML/JSON,
        bad attribute types, or a graph that fails :func:`validate` (the
        message names the path).

    Examples
    --------
    >>> import tempfile, os
    >>> from topologies import abci
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "abci.graphml")
    ...     save(abci(2), p)
    ...     G = load(p)
    >>> G.graph["name"], G.nodes["n1/gpu3"]["server"]
    ('abci', 1)
    """
    path = Path(path)
    ext = _ext(path)
    G = _to_digraph(_read(path, ext, data), path)
    try:
        return validate(G)
    except TopologyError as exc:
        raise TopologyError(f"{str(path)!r}: {exc}") from None


def _read(path: Path, ext: str, data: bytes | str | None) -> nx.Graph:
    """The graph stored in `path` (or in its bytes `data`) as NetworkX reads it; every failure
    a TopologyError naming the path."""
    try:
        if ext == ".graphml":
            H = nx.read_graphml(path if data is None else io.BytesIO(
                data.encode("utf-8") if isinstance(data, str) else data))
            # networkx adds these (dict-valued) defaults; they are not topology data
            H.graph.pop("node_default", None)
            H.graph.pop("edge_default", None)
            return H
        return _read_node_link(path, data)
    except TopologyError:
        raise
    except RecursionError:
        raise TopologyError(f"{str(path)!r}: nested too deeply to read") from None
    except FileNotFoundError:
        raise TopologyError(f"{str(path)!r}: no such file") from None
    except OSError as exc:
        raise TopologyError(f"{str(path)!r}: cannot read ({exc.strerror or exc})") from None
    except (ET.ParseError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TopologyError(f"{str(path)!r}: malformed {ext[1:]} file ({exc})") from None
    except (nx.NetworkXError, KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TopologyError(f"{str(path)!r}: malformed {ext[1:]} file ({msg})") from None


def _read_node_link(path: Path, raw: bytes | str | None) -> nx.Graph:
    """A node-link JSON graph (its edges under ``"edges"`` or, older, ``"links"``)."""
    if raw is None:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    else:
        data = json.loads(raw)
    if not isinstance(data, dict) or "nodes" not in data:
        raise TopologyError(f"{str(path)!r}: not a node-link JSON graph (no 'nodes' list)")
    edges = "links" if "links" in data and "edges" not in data else "edges"
    data.setdefault(edges, [])
    return nx.node_link_graph(data, directed=data.get("directed", True),
                              multigraph=data.get("multigraph", False), edges=edges)


def _check_scalars(G: nx.DiGraph, path: Path) -> None:
    def check(value: Any, what: str) -> None:
        if not isinstance(value, _SCALARS) or (isinstance(value, float) and not math.isfinite(value)):
            raise TopologyError(
                f"{str(path)!r}: {what} is {value!r}; only str/int/float can be saved"
            )

    for key, value in G.graph.items():
        check(value, f"graph attribute {key!r}")
    for n, d in G.nodes(data=True):
        for key, value in d.items():
            check(value, f"node {n!r} attribute {key!r}")
    for u, v, d in G.edges(data=True):
        for key, value in d.items():
            check(value, f"edge {u!r} -> {v!r} attribute {key!r}")


def save(G: nx.DiGraph, path: str | os.PathLike) -> None:
    """Validate `G` and write it to `path` (format chosen by the extension).

    Parameters
    ----------
    G : networkx.DiGraph
        A topology.
    path : str or os.PathLike
        ``*.graphml`` or ``*.json`` (node-link format, key ``"edges"``).

    Raises
    ------
    TopologyError
        Unknown extension, invalid topology, an attribute that is not a
        str/int/float, or a write error.

    Examples
    --------
    >>> import tempfile, os
    >>> from topologies import dgx1_cluster
    >>> G = dgx1_cluster(1)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "dgx1.json")
    ...     save(G, p)
    ...     H = load(p)
    >>> sorted(H.edges(data=True)) == sorted(G.edges(data=True)), H.graph == G.graph
    (True, True)
    """
    path = Path(path)
    ext = _ext(path)
    try:
        validate(G)
    except TopologyError as exc:
        raise TopologyError(f"{str(path)!r}: cannot save: {exc}") from None
    _check_scalars(G, path)
    try:
        if ext == ".graphml":
            nx.write_graphml(G, path, infer_numeric_types=True)
        else:
            data = nx.node_link_data(G, edges="edges")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=1)
                fh.write("\n")
    except OSError as exc:
        raise TopologyError(f"{str(path)!r}: cannot write ({exc.strerror or exc})") from None
