"""Rank placement: which GPU of the hardware graph runs which rank.

``auto`` (the default): the graph's own ``rank_order`` where it declares one (DGX-1: the
study's ring over double NVLinks), linear otherwise. ``linear``: GPUs sorted by (server, local index). ``study``: the study's per-node order
when the graph declares one (graph attribute ``rank_order``, e.g. ``"0,3,2,1,5,6,7,4"`` on
DGX-1: a ring over double NVLinks), linear otherwise. A PATH: a text file listing GPU node
ids (or linear GPU indices), one per line or comma-separated. With ``nranks`` only the
first ``nranks`` GPUs of the order are used.
"""

from __future__ import annotations

from pathlib import Path

from .errors import UserInputError

__all__ = ["resolve_placement", "describe_placement", "PLACEMENTS", "DEFAULT_PLACEMENT"]

PLACEMENTS = ("auto", "linear", "study")
DEFAULT_PLACEMENT = "auto"


def describe_placement(graph, spec) -> str:
    """How ``spec`` places ranks on ``graph``, in words (stated in the output of a run)."""
    order = graph.graph.get("rank_order")
    if spec in ("auto", "study"):
        return (f"{spec}: the graph's rank order {order} on every server" if order
                else f"{spec}: linear (the graph declares no rank order)")
    if spec is None or spec == "linear":
        return "linear"
    if isinstance(spec, (list, tuple)):
        return "list"
    return f"file {spec}"


def _linear(graph) -> list:
    gpus = [n for n, a in graph.nodes(data=True) if a.get("kind") == "gpu"]
    return sorted(gpus, key=lambda n: (graph.nodes[n]["server"], graph.nodes[n]["local"]))


def resolve_placement(graph, spec: str | list | None = "linear", nranks: int | None = None) -> list:
    """GPU node ids in rank order.

    >>> import networkx as nx
    >>> g = nx.DiGraph(rank_order="1,0")
    >>> for s in (0, 1):
    ...     for l in (0, 1):
    ...         g.add_node(f"n{s}/gpu{l}", kind="gpu", server=s, local=l)
    >>> resolve_placement(g, "study")
    ['n0/gpu1', 'n0/gpu0', 'n1/gpu1', 'n1/gpu0']
    >>> resolve_placement(g, "linear", 3)
    ['n0/gpu0', 'n0/gpu1', 'n1/gpu0']
    """
    linear = _linear(graph)
    if spec is None or spec == "linear":
        order = linear
    elif isinstance(spec, (list, tuple)):
        order = _explicit(graph, linear, list(spec), "placement list")
    elif spec in ("study", "auto"):
        text = graph.graph.get("rank_order")
        if not text:
            order = linear
        else:
            local_order = [int(v) for v in str(text).split(",")]
            by_server: dict = {}
            for g in linear:
                by_server.setdefault(graph.nodes[g]["server"], {})[graph.nodes[g]["local"]] = g
            order = []
            for server in sorted(by_server):
                gpus = by_server[server]
                order.extend(gpus[l] for l in local_order if l in gpus)
                order.extend(g for l, g in sorted(gpus.items()) if l not in local_order)
    else:
        path = Path(spec)
        if not path.is_file():
            raise UserInputError(f"placement {spec!r} is not one of {', '.join(PLACEMENTS)} nor an existing file")
        from .parsing import read_text

        text = read_text(path, "placement file", "placement file")
        items = [t.strip() for line in text.splitlines() for t in line.split(",")]
        order = _explicit(graph, linear, [t for t in items if t and not t.startswith("#")], f"placement file {spec}")
    if nranks is not None:
        if nranks < 1:
            raise UserInputError(f"number of GPUs {nranks} must be >= 1")
        if nranks > len(order):
            raise UserInputError(f"--gpus {nranks} is larger than the {len(order)} GPUs of the placement")
        order = order[:nranks]
    return order


def _explicit(graph, linear, items, where) -> list:
    order = []
    for item in items:
        if isinstance(item, str) and item in graph and graph.nodes[item].get("kind") == "gpu":
            order.append(item)
            continue
        try:
            i = int(item)
        except (TypeError, ValueError):
            raise UserInputError(f"{where}: {item!r} is neither a GPU node id nor a GPU index") from None
        if not 0 <= i < len(linear):
            raise UserInputError(f"{where}: GPU index {i} is out of range 0..{len(linear) - 1}")
        order.append(linear[i])
    if len(set(order)) != len(order):
        raise UserInputError(f"{where}: a GPU appears twice")
    if not order:
        raise UserInputError(f"{where}: no GPU listed")
    return order
