"""The keys of the plan cache (:func:`~simcollective.nccl.plans.cached_plan`): a digest of the
graph's values and the ``[nccl]`` figures as nested tuples, each computed once per object
(every rank of a call asks for the same plan)."""

from __future__ import annotations

import hashlib
import pickle
import weakref
from dataclasses import asdict

from .constants import NcclConstants

__all__ = ["graph_key", "constants_key"]

_GRAPH_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_CONSTANT_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _frozen(value):
    """``value`` (dicts, lists, tuples, scalars) as nested tuples, dicts in key order."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def constants_key(table: NcclConstants) -> tuple:
    """The values of ``table`` as nested tuples, computed once per constants object (every rank
    of a call asks for the same plan)."""
    key = _CONSTANT_KEYS.get(table)
    if key is None:
        key = _CONSTANT_KEYS[table] = _frozen(asdict(table))
    return key


def graph_key(graph) -> str:
    """A digest of ``graph``'s values (its attributes, nodes and edges with theirs, in the
    graph's order), computed once per graph object: two graphs that differ in any value never
    share a key. The values are pickled (a value that pickle cannot write: their repr) and the
    bytes digested, 0.15 s at 2048 DGX H100 nodes. Equal graphs built in the same order share
    a key; the same graph built in another order only misses the cache (its plan is built
    again, the same)."""
    key = _GRAPH_KEYS.get(graph)
    if key is None:
        attrs = {k: v for k, v in graph.graph.items() if not hasattr(v, "nodes")}
        values = (type(graph).__name__, attrs, graph.nodes, graph.adj)
        try:
            data = pickle.dumps(values, protocol=5)
        except (pickle.PicklingError, TypeError, AttributeError):  # a value pickle cannot write
            data = repr((values[:2], dict(graph.nodes(data=True)), list(graph.edges(data=True)))).encode()
        key = _GRAPH_KEYS[graph] = hashlib.sha256(data).hexdigest()
    return key
