"""The parts every fabric is made of: switches, cables to them, uplink counts, checks.

Examples
--------
>>> import networkx as nx
>>> G = nx.DiGraph()
>>> add_switch(G, "leaf0", "leaf", 9e11, 9e-8), uplinks_for(24, 3.0)
('leaf0', 8)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import networkx as nx

from ..nodes import add_cable
from ..schema import TopologyError

__all__ = ["IB", "check_count", "add_switch", "attach_ports", "connect_up", "uplinks_for"]

#: The link type of every cable a fabric adds.
IB = "infiniband"


def check_count(name: str, value: object, minimum: int = 1) -> int:
    """Return `value` if it is an int >= `minimum`, else raise TopologyError naming `name`.

    Examples
    --------
    >>> check_count("nodes", 3)
    3
    >>> check_count("nodes", 0)
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: nodes must be an int >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise TopologyError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def add_switch(
    G: nx.DiGraph,
    sid: str,
    level: str,
    bandwidth: float | None = None,
    latency: float | None = None,
) -> str:
    """Add a network switch with crossing figures; return its id.

    Parameters
    ----------
    G : networkx.DiGraph
    sid : str
        Node id, e.g. ``"r0/leaf2"``.
    level : str
        Informational level (``"leaf"``, ``"fbb"``, ``"agg"``, ``"spine"``,
        ``"core"``, ``"root"``).
    bandwidth, latency : float, optional
        Crossing capacity (bytes/s) and latency (s); omitted when None.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> add_switch(G, "leaf0", "leaf", 9e11, 9e-8)
    'leaf0'
    >>> G.nodes["leaf0"]
    {'kind': 'switch', 'level': 'leaf', 'bandwidth': 900000000000.0, 'latency': 9e-08}
    """
    attrs: dict[str, object] = {"kind": "switch", "level": level}
    if bandwidth is not None:
        attrs["bandwidth"] = float(bandwidth)
    if latency is not None:
        attrs["latency"] = float(latency)
    G.add_node(sid, **attrs)
    return sid


def attach_ports(
    G: nx.DiGraph,
    ports: Sequence[str],
    switch: str,
    bandwidth: float,
    latency: float,
    duplex: str,
) -> None:
    """Cable every port of `ports` to `switch` (one cable each).

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> attach_ports(G, ["n0/plx0", "n1/plx0"], "leaf0", 12.5e9, 2.6e-8, "shared")
    >>> G.in_degree("leaf0")
    2
    """
    for p in ports:
        add_cable(G, p, switch, bandwidth, latency, IB, duplex)


def connect_up(
    G: nx.DiGraph,
    lower: Sequence[str],
    upper: Sequence[str],
    cables: int | Sequence[int],
    bandwidth: float,
    latency: float,
    duplex: str,
) -> Counter[str]:
    """Connect each lower switch to the upper switches with `cables` cables each.

    Cable ``j`` of a lower switch goes to ``upper[j % len(upper)]``; parallel
    cables to the same upper switch are folded into one cable of
    ``k * bandwidth``.

    Parameters
    ----------
    G : networkx.DiGraph
    lower, upper : sequence of str
        Switch ids (must already be in `G`).
    cables : int or sequence of int
        Number of cables per lower switch (one value for all, or one each).
    bandwidth, latency : float
        Figures of ONE cable.
    duplex : {"shared", "full"}

    Returns
    -------
    collections.Counter
        Number of cables that arrive at each upper switch.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> down = connect_up(G, ["leaf0"], ["spine0", "spine1"], 3, 12.5e9, 0.0, "full")
    >>> G.edges["leaf0", "spine0"]["bandwidth"], G.edges["leaf0", "spine1"]["bandwidth"]
    (25000000000.0, 12500000000.0)
    >>> dict(down)
    {'spine0': 2, 'spine1': 1}
    """
    if not upper:
        raise TopologyError("connect_up: no upper switch to connect to")
    counts = [cables] * len(lower) if isinstance(cables, int) else list(cables)
    arriving: Counter[str] = Counter()
    n_up = len(upper)
    for sw, k in zip(lower, counts):
        base, extra = divmod(k, n_up)
        for j in range(min(k, n_up)):
            mult = base + (1 if j < extra else 0)
            add_cable(G, sw, upper[j], bandwidth * mult, latency, IB, duplex)
            arriving[upper[j]] += mult
    return arriving


def uplinks_for(down_ports: int, oversubscription: float) -> int:
    """Uplink count for a leaf with `down_ports` host ports: ``round(down / ratio)``, at least 1.

    Examples
    --------
    >>> uplinks_for(16, 1.0), uplinks_for(24, 3.0), uplinks_for(16, 3.0), uplinks_for(1, 4.0)
    (16, 8, 5, 1)
    """
    if (isinstance(oversubscription, bool) or not isinstance(oversubscription, (int, float))
            or not oversubscription > 0 or not math.isfinite(oversubscription)):
        raise TopologyError(f"oversubscription must be a finite number > 0, got {oversubscription!r}")
    return max(1, math.floor(down_ports / oversubscription + 0.5))
