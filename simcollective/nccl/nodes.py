"""NCCL's nodes: the ranks of a call grouped as NCCL groups them, by NVLink domain (a server,
or the hosts of an NVL72 rack sharing its NVLink switches); NCCL's model needs as many ranks on
each."""

from __future__ import annotations

from ..errors import UserInputError

__all__ = ["NVLINK_TYPES", "nccl_nodes"]

#: the link types of an NVLink domain
NVLINK_TYPES = ("nvlink", "nvswitch")


def nccl_nodes(graph, gpus) -> list:
    """Per NCCL node, the ranks on it in rank order (ranks placed on ``gpus``, graph GPU ids in
    rank order); a one-line error when the nodes hold different numbers of ranks."""
    nodes = _nvlink_domains(graph, gpus)
    ppns = {len(v) for v in nodes}
    if len(ppns) != 1:
        _unequal_nodes(graph, gpus, nodes, ppns)
    return nodes


def _unequal_nodes(graph, gpus, nodes, ppns) -> None:
    """Refuse ranks placed unevenly over NCCL's nodes, naming the counts and the way out."""
    top, *rest = sorted(ppns, reverse=True)
    domain = any(len({graph.nodes[gpus[r]].get("server") for r in ranks}) > 1 for ranks in nodes)
    where, fix = (("an NVLink domain of several hosts", "NVLink domains of equal size (--topology-opt domain_hosts)")
                  if domain else ("a server", f"a rank count that is a multiple of {top} (whole servers)"))
    raise UserInputError(f"NCCL's model needs as many ranks on every NCCL node ({where}): got {top} and "
                         f"{' and '.join(map(str, rest))} ranks; give {fix}, or an algorithm that is not NCCL's "
                         "(ring, tree, ...)")


def _nvlink_domains(graph, gpus) -> list:
    """Per NCCL "node", the ranks on it in rank order. NCCL's node is an NVLink domain:
    servers sharing an NVSwitch (GB200 NVL72) are one."""
    nodes_attr = graph.nodes
    parent: dict = {}

    def find(a):
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    switch_of = {}
    for g in set(gpus):
        srv = nodes_attr[g].get("server", 0)
        for _, v, d in graph.out_edges(g, data=True):
            if d.get("link_type") in NVLINK_TYPES and nodes_attr[v].get("kind") == "nvswitch":
                if v in switch_of:
                    parent[find(srv)] = find(switch_of[v])
                else:
                    switch_of[v] = srv
    by_server: dict = {}
    for r, g in enumerate(gpus):
        by_server.setdefault(find(nodes_attr[g].get("server", 0)), []).append(r)
    return list(by_server.values())
