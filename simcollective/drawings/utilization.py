"""A run's link utilization (from ``simcollective run --json``), for colouring a drawing."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserInputError
from ..parsing import load_json

__all__ = ["link_utilization", "check_same_machine"]


def _row(ln, key: str, i: int) -> tuple:
    """``(link name, utilization)`` of row ``i``; a row of another shape is one line."""
    try:
        u = float(ln["utilization"])
        if u == u and abs(u) != float("inf"):
            return str(ln["link"]), u
    except (TypeError, KeyError, ValueError, OverflowError):
        pass
    raise UserInputError(f"--utilization-from: {key}[{i}] = {str(ln)[:80]!r} is not a {{link, utilization}} row "
                         "with a finite utilization (a `simcollective run --json` file)")


def link_utilization(run_json) -> tuple[dict, dict, str]:
    """(edge -> utilization, crossing node -> utilization, note) from ``run --json`` output.

    Uses the ``links`` key (every link) when the run has it, else ``top_links`` (the five
    busiest). Keys of the edge map are frozensets of the two endpoints (both directions of
    a full-duplex link share the largest of their utilizations).
    """
    if isinstance(run_json, (str, Path)):
        run_json = load_json(run_json, "--utilization-from", "run JSON")
    if not isinstance(run_json, dict) or not ("links" in run_json or "top_links" in run_json):
        raise UserInputError("--utilization-from needs a `simcollective run --json` file (with 'top_links' or 'links')")
    key = "links" if "links" in run_json else "top_links"
    edges, nodes = {}, {}
    rows = run_json[key]
    if not isinstance(rows, list):
        raise UserInputError(f"--utilization-from: '{key}' must be a list of {{link, utilization}} rows")
    for i, ln in enumerate(rows):
        name, u = _row(ln, key, i)
        if name.endswith(" (crossing)"):
            nodes[name[: -len(" (crossing)")]] = u
            continue
        for sep in ("<->", "->"):
            if sep in name:
                a, b = name.split(sep, 1)
                k = frozenset((a, b))
                edges[k] = max(edges.get(k, 0.0), u)
                break
    note = "every link" if key == "links" else f"the {len(run_json[key])} busiest links of the run"
    return edges, nodes, note


def check_same_machine(graph, edges: dict, nodes: dict, source) -> None:
    """A run of another machine would colour the wrong links: every link it names must be here."""
    where = f"--utilization-from {str(source)!r}" if isinstance(source, (str, Path)) else "utilization"
    for k in edges:
        a, b = tuple(k) if len(k) == 2 else (next(iter(k)),) * 2
        if a not in graph or b not in graph or not (graph.has_edge(a, b) or graph.has_edge(b, a)):
            raise UserInputError(f"{where} is a run of another machine: its link {a}<->{b} is not in the drawn "
                                 f"topology {graph.graph.get('name', '')!r} ({graph.number_of_nodes()} nodes); "
                                 "give the same --topology/--nodes/--topology-file as the run")
    for n in nodes:
        if n not in graph:
            raise UserInputError(f"{where} is a run of another machine: node {n!r} is not in the drawn topology; "
                                 "give the same --topology/--nodes/--topology-file as the run")
