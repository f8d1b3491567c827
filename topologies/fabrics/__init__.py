"""Fabric builders: switches and cables that connect the uplink ports of servers.

A fabric builder takes the port lists returned by the node builders of
:mod:`topologies.nodes` (one list per server, or one list per leaf) and adds
switches (``kind="switch"``, with a ``level`` and optional crossing
``bandwidth``/``latency``) and the cables between them. Multiple parallel
cables between the same two switches are folded into one cable whose
bandwidth is the sum. All cables added here are ``link_type="infiniband"``.

* :mod:`topologies.fabrics.parts`: switches, cables, uplink counts, checks;
* :mod:`topologies.fabrics.study`: the study's fabrics, :func:`leaf_root`
  (DGX clusters) and :func:`abci_racks`;
* :mod:`topologies.fabrics.trees`: :func:`leaf_spine` (2- or 3-level
  fat-trees) and :func:`rail_optimized` (rails on a leaf-spine).

Examples
--------
>>> import networkx as nx
>>> from topologies import fabrics
>>> G = nx.DiGraph()
>>> fabrics.rail_optimized(G, [["a0", "a1"], ["b0", "b1"]])
['su0/leaf0', 'su0/leaf1']
"""

from .parts import add_switch, attach_ports, check_count, connect_up, uplinks_for
from .study import abci_racks, leaf_root
from .trees import leaf_spine, rail_optimized

__all__ = [
    "add_switch",
    "attach_ports",
    "connect_up",
    "leaf_root",
    "abci_racks",
    "leaf_spine",
    "rail_optimized",
    "uplinks_for",
    "check_count",
]
