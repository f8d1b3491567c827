"""Drawings of hardware topologies: ``simcollective draw-topology``.

A layered drawing of the graph: NVSwitches under their GPUs, GPUs, then PCIe switches,
network adapters, leaf switches and higher switch levels above. The nodes of a server are
kept together in a box; in a fabric of several racks (servers sharing leaf switches) each
rack is boxed with its leaves (and switches only it uses, e.g. ABCI's FBBs) above it, and
the top switch row (spines, core, root) spans the whole width. Links are coloured by type (legend) and drawn thicker for more
bandwidth; with ``--utilization-from RUN.json`` (a ``simcollective run --json`` file) they
are coloured by how busy the run kept them instead (bytes / capacity / run time).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

from .errors import UserInputError
from .parsing import check_output_path
from .figures import FIGURE_SUFFIXES, save_figure

__all__ = ["layered_layout", "draw_topology", "link_utilization", "add_parser", "LINK_COLORS"]

#: colour of each link type
LINK_COLORS = {
    "nvlink": "#4d9a06",
    "nvswitch": "#1b7837",
    "pcie": "#e08214",
    "infiniband": "#2166ac",
    "ethernet": "#8e44ad",
}
_LINK_LABELS = {"nvlink": "NVLink", "nvswitch": "NVSwitch port", "pcie": "PCIe",
                "infiniband": "InfiniBand", "ethernet": "Ethernet"}
# bottom to top; switch levels by their ``level`` attribute
_ROWS = ("nvswitch", "gpu", "pcie_switch", "cpu", "nic", "leaf", "switch", "fbb", "agg", "spine", "core", "root")
_NODE_STYLE = {
    "gpu": dict(marker="s", s=90, color="#76b900", edgecolor="#2d4a00"),
    "nvswitch": dict(marker="s", s=140, color="#a6d96a", edgecolor="#1b7837"),
    "pcie_switch": dict(marker="D", s=45, color="#fdb863", edgecolor="#b35806"),
    "cpu": dict(marker="h", s=70, color="#d9d9d9", edgecolor="#525252"),
    "nic": dict(marker="o", s=45, color="#92c5de", edgecolor="#2166ac"),
    "switch": dict(marker="s", s=120, color="#4393c3", edgecolor="#053061"),
}
_SERVER_RE = re.compile(r"^n(\d+)/")


def _row_name(graph, n) -> str:
    a = graph.nodes[n]
    kind = a.get("kind", "switch")
    if kind == "switch":
        level = a.get("level")
        return level if level in _ROWS else "switch"
    return kind if kind in _ROWS else "switch"


def _servers(graph) -> dict:
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
    return _layout(graph)[0]


def _layout(graph) -> tuple[dict, dict]:
    """(positions, switch -> index of the rack it is drawn over)."""
    rows_present = sorted({_row_name(graph, n) for n in graph.nodes}, key=_ROWS.index)
    y_of = {}
    y = 0
    for r in rows_present:
        if r == "nvswitch":
            continue
        y_of[r] = y
        y += 1
    y_of["nvswitch"] = -0.8
    server = _servers(graph)
    by_server = defaultdict(lambda: defaultdict(list))
    for n, s in server.items():
        by_server[s][_row_name(graph, n)].append(n)
    pos = {}
    x0 = 0.0
    gap = 1.0
    for s in sorted(by_server):
        rows = by_server[s]
        width = max(len(v) for v in rows.values())
        gpus = sorted(rows.get("gpu", []), key=lambda n: graph.nodes[n].get("local", 0))
        grid = _cube_mesh_grid(graph, gpus)
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
            nodes.sort(key=lambda n: (_barycenter(graph, n, pos), _natural(n)))
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
    racks = _racks(graph, server)
    rack_of = {}                     # placed node -> rack index (servers' nodes, then switches)
    for i, (_, servers_) in enumerate(racks):
        for n, s in server.items():
            if s in servers_:
                rack_of[n] = i
    extent = {i: _rack_extent(pos, server, set(servers_)) for i, (_, servers_) in enumerate(racks)}
    rest = defaultdict(list)
    for n in graph.nodes:
        if n not in pos:
            rest[_row_name(graph, n)].append(n)
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
            nodes.sort(key=lambda n: (_barycenter(graph, n, pos), _natural(n)))
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


def _cube_mesh_grid(graph, gpus):
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


def _racks(graph, server: dict) -> list:
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
    level = {n: _ROWS.index(_row_name(graph, n)) for n, a in graph.nodes(data=True) if a.get("kind") == "switch"}
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


def _natural(n) -> tuple:
    """Sort key: "spine2" before "spine10"."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(n)))


def _barycenter(graph, n, pos) -> float:
    xs = [pos[m][0] for m in graph.successors(n) if m in pos]
    return sum(xs) / len(xs) if xs else float("inf")


def link_utilization(run_json) -> tuple[dict, dict, str]:
    """(edge -> utilization, crossing node -> utilization, note) from ``run --json`` output.

    Uses the ``links`` key (every link) when the run has it, else ``top_links`` (the five
    busiest). Keys of the edge map are frozensets of the two endpoints (both directions of
    a full-duplex link share the largest of their utilizations).
    """
    if isinstance(run_json, (str, Path)):
        try:
            with open(run_json) as fh:
                run_json = json.load(fh)
        except FileNotFoundError:
            raise UserInputError(f"--utilization-from {str(run_json)!r} does not exist") from None
        except json.JSONDecodeError as exc:
            raise UserInputError(f"--utilization-from {str(run_json)!r} is not JSON: {exc}") from None
    if not isinstance(run_json, dict) or not ("links" in run_json or "top_links" in run_json):
        raise UserInputError("--utilization-from needs a `simcollective run --json` file (with 'top_links' or 'links')")
    key = "links" if "links" in run_json else "top_links"
    edges, nodes = {}, {}
    for ln in run_json[key]:
        name, u = str(ln["link"]), float(ln["utilization"])
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


def _check_same_machine(graph, edges: dict, nodes: dict, source) -> None:
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


def _edge_width(bw: float) -> float:
    return min(3.5, max(0.6, 1.0 + 0.4 * math.log2(max(bw, 1.0) / 12.5e9)))


def draw_topology(graph, out=None, utilization=None, title: str | None = None, labels: bool | None = None):
    """Draw ``graph``; return the matplotlib Figure (saved to ``out`` if given).

    ``utilization``: a ``run --json`` dict or path; links are then coloured by utilization.
    """
    import matplotlib
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyBboxPatch, PathPatch
    from matplotlib.path import Path as MPath

    if out is not None:
        check_output_path(out, "-o", FIGURE_SUFFIXES)
    pos, rack_switches = _layout(graph)
    server = _servers(graph)
    n_nodes = graph.number_of_nodes()
    if labels is None:
        labels = n_nodes <= 160
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    width_units = max(xs) - min(xs) + 1
    fig_w = min(28.0, max(7.0, 0.42 * width_units + 1.5))
    fig_h = max(3.8, 0.95 * (max(ys) - min(ys) + 1) + 1.2)
    fig, ax = plt.subplots(figsize=(fig_w, fig_h))

    util_edges, util_nodes, note = ({}, {}, "")
    cmap = norm = None
    if utilization is not None:
        util_edges, util_nodes, note = link_utilization(utilization)
        _check_same_machine(graph, util_edges, util_nodes, utilization)
        cmap = matplotlib.colors.LinearSegmentedColormap.from_list(
            "util", plt.get_cmap("inferno_r")(np.linspace(0.12, 1.0, 256)))   # idle pale, busiest darkest
        vmax = max([*util_edges.values(), *util_nodes.values(), 1e-9])
        norm = matplotlib.colors.Normalize(vmin=0.0, vmax=max(vmax, 0.01))

    # server boxes
    members = defaultdict(list)
    for n, s in server.items():
        members[s].append(pos[n])
    for s, pts in sorted(members.items()):
        x_lo, x_hi = min(p[0] for p in pts) - 0.45, max(p[0] for p in pts) + 0.45
        y_lo, y_hi = min(p[1] for p in pts) - 0.35, max(p[1] for p in pts) + 0.3
        ax.add_patch(FancyBboxPatch((x_lo, y_lo), x_hi - x_lo, y_hi - y_lo, boxstyle="round,pad=0.02,rounding_size=0.15",
                                    facecolor="#f4f4f4", edgecolor="#bdbdbd", linewidth=0.8, zorder=0))
        if len(members) <= 96:
            wide = x_hi - x_lo >= 2.5
            ax.text(x_lo + 0.05 if wide else (x_lo + x_hi) / 2, y_lo + 0.04, f"server {s}" if wide else str(s),
                    fontsize=7 if wide else 5, color="#636363", va="bottom", ha="left" if wide else "center",
                    zorder=1)

    # racks: servers attached to the same leaf switches, boxed together (fabrics of several racks)
    racks = _racks(graph, server)
    if len(racks) > 1:
        for i, (leaves, servers_) in enumerate(racks):
            pts = [p for srv in servers_ for p in members[srv]]
            pts += [pos[n] for n, j in rack_switches.items() if j == i]   # its leaves (and FBBs) too
            x_lo, x_hi = min(p[0] for p in pts) - 0.6, max(p[0] for p in pts) + 0.6
            y_lo, y_hi = min(p[1] for p in pts) - 0.55, max(p[1] for p in pts) + 0.45
            ax.add_patch(FancyBboxPatch((x_lo, y_lo), x_hi - x_lo, y_hi - y_lo, boxstyle="round,pad=0.02",
                                        facecolor="none", edgecolor="#8c8c8c", linewidth=1.0, linestyle="--",
                                        zorder=0, gid=f"rack:{i}"))
            names = ", ".join(sorted((str(n).rsplit("/", 1)[-1] for n in leaves), key=_natural))
            ax.text((x_lo + x_hi) / 2, y_lo + 0.02, f"rack {i} ({len(servers_)} servers; {names})", fontsize=7,
                    color="#525252", ha="center", va="bottom", zorder=1)

    # GPUs of cube-mesh servers: node -> (row, column spacing, single NVLink bandwidth)
    cube_rows = {}
    for srv in set(server.values()):
        gs = [n for n in graph.nodes if server.get(n) == srv and graph.nodes[n].get("kind") == "gpu"]
        gs.sort(key=lambda n: graph.nodes[n].get("local", 0))
        grid = _cube_mesh_grid(graph, gs)
        if grid is None:
            continue
        xs_ = sorted({pos[n][0] for n in gs})
        spacing = min(b - a for a, b in zip(xs_, xs_[1:])) if len(xs_) > 1 else 1.0
        single = min(float(a.get("bandwidth", 0)) for u, v, a in graph.edges(gs, data=True) if v in gs)
        for n in gs:
            cube_rows[n] = (grid[n][1], spacing, single)

    # an NVSwitch that is its server's switch plane: drawn as a bar under the GPUs it joins,
    # each GPU's port a vertical line down to it (not a fan of crossing lines)
    planes = {}
    for n, a in graph.nodes(data=True):
        if a.get("kind") == "nvswitch":
            gs = [m for m in graph.successors(n) if graph.nodes[m].get("kind") == "gpu"]
            if len(gs) >= 2:
                planes[n] = (min(pos[m][0] for m in gs) - 0.3, max(pos[m][0] for m in gs) + 0.3)

    # links (one per cable / pair of directions)
    done = set()
    types_seen = set()
    for u, v, a in graph.edges(data=True):
        k = frozenset((u, v))
        if k in done:
            continue
        done.add(k)
        lt = a.get("link_type", "link")
        types_seen.add(lt)
        bw = float(a.get("bandwidth", 1e10))
        if graph.has_edge(v, u) and a.get("duplex") == "full":
            bw = max(bw, float(graph.edges[v, u].get("bandwidth", bw)))
        color, alpha, z = LINK_COLORS.get(lt, "#7f7f7f"), 0.85, 2
        lw = _edge_width(bw)
        if utilization is not None:         # busiest: thickest, darkest, on top
            if k in util_edges:
                frac = norm(util_edges[k])
                color, alpha, z, lw = cmap(frac), 1.0, 3 + frac, 0.8 + 3.2 * frac
            else:
                color, alpha, lw = "#e3e3e3", 0.9, 0.6
        (x1, y1), (x2, y2) = pos[u], pos[v]
        if v in planes:
            x2 = x1
        elif u in planes:
            x1 = x2
        gid = f"link:{min(u, v)}|{max(u, v)}"      # tests and SVG readers find a link's artists by it
        in_grid = u in cube_rows and v in cube_rows
        neighbours = in_grid and abs(x2 - x1) <= 1.01 * cube_rows[u][1] and abs(y2 - y1) <= CUBE_ROW_GAP + 1e-9
        double = in_grid and bw >= 1.5 * cube_rows[u][2]
        if in_grid and utilization is None:
            lw = 1.3                         # single and double links told apart by the number of lines
        if abs(y1 - y2) < 1e-9 and not neighbours:   # same row, not neighbours: an arc around the row
            dx = abs(x2 - x1)
            depth = min(0.62, 0.2 + 0.08 * dx) if not in_grid else 0.32
            up = in_grid and cube_rows[u][0] == 0          # a cube-mesh's top row arcs upwards
            for extra in ((-0.03, 0.03) if double else (0.0,)):
                cy = y1 + depth + extra if up else y1 - depth - extra
                path = MPath([(x1, y1), ((x1 + x2) / 2, cy), (x2, y2)],
                             [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3])
                ax.add_patch(PathPatch(path, facecolor="none", edgecolor=color, gid=gid,
                                       linewidth=max(0.8, lw * 0.6) if double else lw, alpha=alpha, zorder=z))
        elif double:                         # a double NVLink: two parallel lines
            length = math.hypot(x2 - x1, y2 - y1) or 1.0
            ox, oy = -(y2 - y1) / length * 0.045, (x2 - x1) / length * 0.045
            for sgn in (1, -1):
                ax.plot([x1 + sgn * ox, x2 + sgn * ox], [y1 + sgn * oy, y2 + sgn * oy], color=color,
                        linewidth=lw if utilization is None else max(0.8, lw * 0.6), alpha=alpha, zorder=z,
                        solid_capstyle="round", gid=gid)
        else:
            ax.plot([x1, x2], [y1, y2], color=color, linewidth=lw, alpha=alpha, zorder=z, solid_capstyle="round",
                    gid=gid)

    # nodes
    by_kind = defaultdict(list)
    for n, a in graph.nodes(data=True):
        by_kind[a.get("kind", "switch")].append(n)
    for n, (x_lo, x_hi) in planes.items():
        st = _NODE_STYLE["nvswitch"]
        face = cmap(norm(util_nodes[n])) if utilization is not None and n in util_nodes else st["color"]
        ax.add_patch(FancyBboxPatch((x_lo, pos[n][1] - 0.09), x_hi - x_lo, 0.18, boxstyle="round,pad=0.01",
                                    facecolor=face, edgecolor=st["edgecolor"], linewidth=0.8, zorder=4,
                                    gid=f"plane:{n}"))
        if labels:
            ax.text((x_lo + x_hi) / 2, pos[n][1], f"{str(n).rsplit('/', 1)[-1]} (switch plane)", fontsize=6,
                    ha="center", va="center", zorder=5, color="#00441b")
    for kind, nodes in by_kind.items():
        nodes = [n for n in nodes if n not in planes]
        if not nodes:
            continue
        style = dict(_NODE_STYLE.get(kind, _NODE_STYLE["switch"]))
        face = [style["color"]] * len(nodes)
        if utilization is not None:
            face = [cmap(norm(util_nodes[n])) if n in util_nodes else style["color"] for n in nodes]
        ax.scatter([pos[n][0] for n in nodes], [pos[n][1] for n in nodes], marker=style["marker"], s=style["s"],
                   c=face, edgecolors=style["edgecolor"], linewidths=0.8, zorder=4)
        if labels:
            for n in nodes:
                text = str(n).rsplit("/", 1)[-1]
                if kind == "gpu":
                    text = str(graph.nodes[n].get("local", text))
                    ax.text(pos[n][0], pos[n][1], text, fontsize=6, ha="center", va="center", zorder=5,
                            color="black")
                else:
                    ax.text(pos[n][0], pos[n][1] + 0.17, text, fontsize=6, ha="center", va="bottom", zorder=5,
                            color="#252525")

    # legend, colour bar, title
    handles = []
    if utilization is None:
        for lt in [t for t in LINK_COLORS if t in types_seen] + sorted(t for t in types_seen if t not in LINK_COLORS):
            handles.append(Line2D([], [], color=LINK_COLORS.get(lt, "#7f7f7f"), linewidth=2.2,
                                  label=_LINK_LABELS.get(lt, lt)))
        if cube_rows:
            handles.append(Line2D([], [], color="none", label="NVLink in a cube-mesh: one line = single link,\n"
                                                               "two lines = double link"))
    for kind in [k for k in _NODE_STYLE if k in by_kind]:
        st = _NODE_STYLE[kind]
        handles.append(Line2D([], [], linestyle="none", marker=st["marker"], markersize=7, markerfacecolor=st["color"],
                              markeredgecolor=st["edgecolor"],
                              label={"gpu": "GPU (label: local index)", "pcie_switch": "PCIe switch",
                                     "nvswitch": "NVSwitch", "nic": "network adapter",
                                     "switch": "network switch", "cpu": "CPU"}[kind]))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False,
              title="line width ~ bandwidth" if utilization is None else None, title_fontsize=7)
    if utilization is not None:
        sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
        cb = fig.colorbar(sm, ax=ax, fraction=0.03, pad=0.01, location="right")
        cb.set_label("link utilization (bytes / capacity / run time)", fontsize=8)
        cb.ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(xmax=1.0))
        cb.ax.tick_params(labelsize=7)
    name = graph.graph.get("name", "topology")
    if title is None:
        title = f"{name}: {len([n for n in by_kind.get('gpu', [])])} GPUs"
        if utilization is not None:
            title += (" (coloured by utilization; grey: no traffic)" if note == "every link"
                      else f" (coloured: {note}; grey: not reported)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - (0.8 if len(racks) > 1 else 0.45), max(ys) + 0.45)
    ax.set_axis_off()
    fig.tight_layout()
    if out is not None:
        save_figure(fig, out)
        plt.close(fig)
    return fig


# -- command line ----------------------------------------------------------------------------

def add_parser(subparsers) -> None:
    from .arguments import add_topology_arguments

    p = subparsers.add_parser(
        "draw-topology", help="draw a topology (layered: GPUs, PCIe, NICs, switch levels)",
        description="Draw the hardware graph of a topology preset or file: GPUs at the bottom, PCIe "
                    "switches and NICs above, then each switch level; servers boxed; racks boxed with "
                    "their leaf switches above them, the top switch row across; links coloured by "
                    "type or, with --utilization-from, by a run's link utilization.")
    add_topology_arguments(p, network=False)
    p.add_argument("-o", "--out", required=True, metavar="FILE", help="output .png, .svg or .pdf")
    p.add_argument("--utilization-from", metavar="RUN.json",
                   help="colour links by utilization from `simcollective run ... --json RUN.json`")
    p.add_argument("--title", help="figure title")
    p.add_argument("--no-labels", action="store_true", help="no node labels")
    p.set_defaults(func=cmd_draw)


def cmd_draw(args) -> int:
    import matplotlib

    matplotlib.use("Agg")      # the command line draws to files only
    from .arguments import check_topology_conflicts, topology_config
    from .simulate import build_graph

    check_topology_conflicts(args)
    check_output_path(args.out, "-o", FIGURE_SUFFIXES)
    graph = build_graph(topology_config(args))
    draw_topology(graph, args.out, utilization=args.utilization_from, title=args.title,
                  labels=False if args.no_labels else None)
    print(f"wrote {args.out}")
    return 0
