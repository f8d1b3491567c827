"""The layered layout of a hardware graph: rows by node kind and switch level, servers side
by side, each rack's leaf switches above it, the top switch row across the whole width."""

from __future__ import annotations

import re
from collections import defaultdict

__all__ = ["layered_layout", "layout", "servers", "rack_groups", "cube_mesh_grid", "natural", "CUBE_ROW_GAP"]

# bottom to top; switch levels by their ``level`` attribute
_ROWS = ("nvswitch", "gpu", "pcie_switch", "cpu", "nic", "leaf", "switch", "fbb", "agg", "spine", "core", "root")
_SERVER_RE = re.compile(r"^n(\d+)/")


def row_name(graph, n) -> str:
    a = graph.nodes[n]
    kind = a.get("kind", "switch")
    if kind == "switch":
        level = a.get("level")
        return level if level in _ROWS else "switch"
    return kind if kind in _ROWS else "switch"


def servers(graph) -> dict:
    """Server index of every node that belongs to one (GPUs and in-server devices)."""
    server = {}
    for n, a in graph.nodes(data=True):
        if a.get("kind") == "gpu" and "server" in a:
            server[n] = int(a["server"])
        elif a.get("kind") != "switch":
            m = _SERVER_RE.match(str(n))
            if m:
                server[n] = int(m.group(1))
    changed = True
    while changed:                  # user graphs: in-server devices next to a server's nodes
        changed = False
        for n, a in graph.nodes(data=True):
            if n in server or a.get("kind") == "switch":
                continue
            near = {server[m] for m in graph.successors(n) if m in server}
            if len(near) == 1:
                server[n] = near.pop()
                changed = True
    return server


def layered_layout(graph) -> dict:
    """Node -> (x, y): rows by node kind / switch level, servers side by side, each rack's
    leaf switches (and other switches only it uses) above it, the top row over all."""
    return layout(graph)[0]


def layout(graph) -> tuple[dict, dict]:
    """(positions, switch -> index of the rack it is drawn over)."""
    rows_present = sorted({row_name(graph, n) for n in graph.nodes}, key=_ROWS.index)
    y_of = {}
    y = 0
    for r in rows_present:
        if r == "nvswitch":
            continue
        y_of[r] = y
        y += 1
    y_of["nvswitch"] = -0.8
    server = servers(graph)
    by_server = defaultdict(lambda: defaultdict(list))
    for n, s in server.items():
        by_server[s][row_name(graph, n)].append(n)
    pos = {}
    x0 = 0.0
    gap = 1.0
    for s in sorted(by_server):
        rows = by_server[s]
        width = max(len(v) for v in rows.values())
        gpus = sorted(rows.get("gpu", []), key=lambda n: graph.nodes[n].get("local", 0))
        grid = cube_mesh_grid(graph, gpus)
        for i, n in enumerate(gpus):
            if grid is not None:        # DGX-1: its 2 x 4 hybrid cube-mesh, two quads side by side
                col, row = grid[n]
                pos[n] = (x0 + (col + 0.5) * width / 4, y_of["gpu"] - CUBE_ROW_GAP * row)
            else:
                pos[n] = (x0 + (i + 0.5) * width / max(1, len(gpus)), y_of["gpu"])
        for rname in sorted(rows, key=lambda r: y_of.get(r, 0)):
            if rname == "gpu":
                continue
            nodes = rows[rname]
            nodes.sort(key=lambda n: (_barycenter(graph, n, pos), natural(n)))
            for i, n in enumerate(nodes):
                pos[n] = (x0 + (i + 0.5) * width / len(nodes), y_of[rname])
        x0 += width + gap
    total = max(x0 - gap, 1.0)
    local = _place_fabric(graph, pos, server, y_of, total)
    return pos, local


def _rack_extent(pos, server, servers_) -> tuple:
    xs = [pos[n][0] for n, s in server.items() if s in servers_]
    return min(xs) - 0.5, max(xs) + 0.5


def _place_fabric(graph, pos, server, y_of, total) -> dict:
    """Place the nodes outside the servers, row by row upwards, rack-shaped: a switch below
    the top row all of whose placed neighbours belong to one rack (its leaves; ABCI's FBB
    switches; a pod's aggregation switches) is spread over that rack's width, above it;
    the others (the top row: spines, roots) over the whole width. In each case in the order of their neighbours' mean x (then by name), so
    rail i's leaf sits above the NICs of rail i. Returns switch -> rack index."""
    racks = rack_groups(graph, server)
    rack_of = {}                     # placed node -> rack index (servers' nodes, then switches)
    for i, (_, servers_) in enumerate(racks):
        for n, s in server.items():
            if s in servers_:
                rack_of[n] = i
    extent = {i: _rack_extent(pos, server, set(servers_)) for i, (_, servers_) in enumerate(racks)}
    rest = defaultdict(list)
    for n in graph.nodes:
        if n not in pos:
            rest[row_name(graph, n)].append(n)
    local = {}
    top = max(y_of[r] for r in rest) if rest else 0
    for rname in sorted(rest, key=lambda r: y_of[r]):
        groups = defaultdict(list)   # rack index (None: the whole width) -> nodes
        for n in rest[rname]:
            near = {rack_of.get(m, -1) for m in graph.successors(n) if m in pos}
            # the top row (spines, roots) spans the fabric even where a switch has uplinks
            # from one rack only
            i = near.pop() if len(near) == 1 and len(racks) > 1 and y_of[rname] < top else None
            groups[None if i == -1 else i].append(n)
        for i, nodes in groups.items():
            nodes.sort(key=lambda n: (_barycenter(graph, n, pos), natural(n)))
            lo, hi = (0.0, total) if i is None else extent[i]
            for j, n in enumerate(nodes):
                pos[n] = (lo + (j + 0.5) * (hi - lo) / len(nodes), y_of[rname])
                if i is not None:
                    rack_of[n] = local[n] = i
    return local


#: vertical distance of the two GPU rows of a cube-mesh server
CUBE_ROW_GAP = 0.75
# local GPU -> (column, row) of the hybrid cube-mesh: quad 0-3 on the left, quad 4-7 on the
# right, so every link but 0-4 and 3-7 (drawn as arcs around) joins neighbours
_CUBE_MESH = {0: (0, 0), 1: (1, 0), 2: (1, 1), 3: (0, 1), 5: (2, 0), 4: (3, 0), 7: (3, 1), 6: (2, 1)}
_CUBE_MESH_EDGES = {frozenset(e) for e in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (4, 5), (4, 6), (4, 7),
                                           (5, 6), (5, 7), (6, 7), (0, 4), (1, 5), (2, 6), (3, 7)]}


def cube_mesh_grid(graph, gpus):
    """GPU -> (column, row) when a server's GPUs are wired as DGX-1's hybrid cube-mesh, else None."""
    if len(gpus) != 8:
        return None
    local = {n: graph.nodes[n].get("local") for n in gpus}
    if sorted(local.values()) != list(range(8)):
        return None
    edges = {frozenset((local[u], local[v])) for u in gpus for v in graph.successors(u) if v in local}
    if edges != _CUBE_MESH_EDGES:
        return None
    return {n: _CUBE_MESH[local[n]] for n in gpus}


def rack_groups(graph, server: dict) -> list:
    """[(leaf switches, [servers])]: servers grouped by the switches their devices attach to."""
    leaves_of = defaultdict(set)
    for n, srv in server.items():
        for m in graph.successors(n):
            if graph.nodes[m].get("kind") == "switch":
                leaves_of[srv].add(m)
    groups: dict = {}
    for srv in sorted(leaves_of):
        groups.setdefault(frozenset(leaves_of[srv]), []).append(srv)
    groups = [(k, v) for k, v in groups.items() if k]
    # groups whose leaves share a switch above them that is not the top of the fabric are
    # one rack (ABCI: the servers on leaves 0/1 and on leaves 2/3 of a rack share its FBB
    # switches; a 3-level fat-tree's pod shares its aggregation switches); switches at the
    # top (spines, roots) join racks, they do not make them one
    level = {n: _ROWS.index(row_name(graph, n)) for n, a in graph.nodes(data=True) if a.get("kind") == "switch"}
    owner = list(range(len(groups)))

    def find(i):
        while owner[i] != i:
            owner[i] = owner[owner[i]]
            i = owner[i]
        return i

    first: dict = {}
    for i, (leaves, _) in enumerate(groups):
        for leaf in leaves:
            for up in graph.successors(leaf):
                if level.get(up, -1) > level[leaf] and any(level.get(m, -1) > level[up] for m in graph.successors(up)):
                    j = first.setdefault(up, i)
                    owner[find(i)] = find(j)
    merged: dict = {}
    for i, (leaves, servers_) in enumerate(groups):
        k = find(i)
        lv, sv = merged.get(k, (frozenset(), []))
        merged[k] = (lv | leaves, sv + servers_)
    return [(lv, sorted(sv)) for lv, sv in merged.values()]


def natural(n) -> tuple:
    """Sort key: "spine2" before "spine10"."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(n)))


def _barycenter(graph, n, pos) -> float:
    xs = [pos[m][0] for m in graph.successors(n) if m in pos]
    return sum(xs) / len(xs) if xs else float("inf")
