"""The destination numbers of ``--routing dest`` (D-mod-k routing on fat-trees).

D-mod-k routing gives every destination its own path up a fat-tree: with destinations
numbered leaf by leaf (``d``), a switch with ``k`` equal-cost uplinks sends the traffic for
destination ``d`` up link ``d mod k`` (Zahavi, "D-Mod-K Routing Providing Non-Blocking
Traffic for Shift Permutations on Real Life Fat Trees", 2010; OpenSM's ``ftree`` and
``updn`` engines route each destination LID over its own spine in the same way). On a
two-level tree (the rail-optimized fabrics of the hardware presets) every destination under
one leaf then has its own spine, so the flows into one host never share a spine link with
the flows into another host of the same leaf, and a leaf's downlinks are never contended by
two destinations.

:func:`destination_numbers` numbers the graph's nodes as D-mod-k does: the network ports
(NICs, or whatever hangs under a switch of kind ``switch``) leaf by leaf, in node order,
each port under the first leaf it hangs from; a node that is not a port (a GPU) takes the
number of its first NIC (``nics`` / ``nic`` attributes), as traffic to a GPU is addressed to
its NIC's LID; any other node is numbered after the ports, in node order.
"""

from __future__ import annotations

__all__ = ["destination_numbers"]


def destination_numbers(graph) -> dict:
    """``{node: d}``: the number D-mod-k routes each destination by (see the module's text).

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.DiGraph()
    >>> G.add_nodes_from(["b", "a"], kind="nic")
    >>> G.add_node("g", kind="gpu", nic="a")
    >>> G.add_nodes_from(["leaf0", "leaf1"], kind="switch")
    >>> G.add_edges_from([("leaf1", "a"), ("leaf0", "b"), ("g", "a")])
    >>> destination_numbers(G)
    {'b': 0, 'a': 1, 'g': 1, 'leaf0': 2, 'leaf1': 3}
    """
    kinds = graph.nodes
    order = {n: i for i, n in enumerate(graph.nodes)}
    numbers: dict = {}
    for sw in graph.nodes:
        if kinds[sw].get("kind") != "switch":
            continue
        for port in sorted(graph.successors(sw), key=order.__getitem__):
            if kinds[port].get("kind") != "switch" and port not in numbers:
                numbers[port] = len(numbers)
    ports = len(numbers)
    for n, attrs in graph.nodes(data=True):
        if n in numbers:
            continue
        listed = str(attrs.get("nics") or attrs.get("nic") or "").split(",")[0]
        numbers[n] = numbers[listed] if listed in numbers else ports + order[n]
    return numbers
