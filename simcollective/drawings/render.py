"""Drawing a hardware graph with matplotlib: server and rack boxes, links coloured by type
(or by a run's utilization) and drawn thicker for more bandwidth, nodes by kind, legend."""

from __future__ import annotations

import math
from collections import defaultdict

from ..figures import FIGURE_SUFFIXES, save_figure
from ..parsing import check_output_path
from .layout import CUBE_ROW_GAP, cube_mesh_grid, layout, natural, rack_groups, servers
from .utilization import check_same_machine, link_utilization

__all__ = ["draw_topology", "LINK_COLORS", "link_color", "link_label"]

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


def link_color(link_type: str) -> str:
    """The colour of a link type in every drawing (grey for a type without one)."""
    return LINK_COLORS.get(link_type, "#7f7f7f")


def link_label(link_type: str) -> str:
    """The legend name of a link type (``nvlink`` -> ``NVLink``)."""
    return _LINK_LABELS.get(link_type, link_type)

_NODE_STYLE = {
    "gpu": dict(marker="s", s=90, color="#76b900", edgecolor="#2d4a00"),
    "nvswitch": dict(marker="s", s=140, color="#a6d96a", edgecolor="#1b7837"),
    "pcie_switch": dict(marker="D", s=45, color="#fdb863", edgecolor="#b35806"),
    "cpu": dict(marker="h", s=70, color="#d9d9d9", edgecolor="#525252"),
    "nic": dict(marker="o", s=45, color="#92c5de", edgecolor="#2166ac"),
    "switch": dict(marker="s", s=120, color="#4393c3", edgecolor="#053061"),
}

def _edge_width(bw: float) -> float:
    return min(3.5, max(0.6, 1.0 + 0.4 * math.log2(max(bw, 1.0) / 12.5e9)))



class _Scene:
    """What the steps of one drawing share: the graph, positions, axes, utilization colours."""

    def __init__(self, graph, utilization, labels):
        import matplotlib
        import matplotlib.pyplot as plt
        import numpy as np

        self.graph, self.utilization = graph, utilization
        self.pos, self.rack_switches = layout(graph)
        self.server = servers(graph)
        self.labels = graph.number_of_nodes() <= 160 if labels is None else labels
        # the switches (a few dozen) keep their names in a drawing too big to name every node
        switches = sum(1 for _, a in graph.nodes(data=True) if a.get("kind", "switch") in ("switch", "nvswitch"))
        self.switch_labels = self.labels or (labels is None and switches <= 64)
        self.xs = [p[0] for p in self.pos.values()]
        self.ys = [p[1] for p in self.pos.values()]
        width_units = max(self.xs) - min(self.xs) + 1
        want_w = 0.42 * width_units + 1.5
        fig_w = min(28.0, max(7.0, want_w))
        # squeezed into the widest figure: taller (up to twice), so links between levels are not flat,
        # and links drawn lighter and thinner, so a fabric's many cables stay apart
        self.squeeze = min(2.0, max(1.0, want_w / fig_w))
        fig_h = max(3.8, 0.95 * (max(self.ys) - min(self.ys) + 1) + 1.2) * self.squeeze
        self.fig, self.ax = plt.subplots(figsize=(fig_w, fig_h))
        self.util_edges, self.util_nodes, self.note = ({}, {}, "")
        self.cmap = self.norm = None
        if utilization is not None:
            self.util_edges, self.util_nodes, self.note = link_utilization(utilization)
            check_same_machine(graph, self.util_edges, self.util_nodes, utilization)
            self.cmap = matplotlib.colors.LinearSegmentedColormap.from_list(
                "util", plt.get_cmap("inferno_r")(np.linspace(0.12, 1.0, 256)))   # idle pale, busiest darkest
            vmax = max([*self.util_edges.values(), *self.util_nodes.values(), 1e-9])
            self.norm = matplotlib.colors.Normalize(vmin=0.0, vmax=max(vmax, 0.01))
        self.members = defaultdict(list)
        for n, s in self.server.items():
            self.members[s].append(self.pos[n])


def draw_topology(graph, out=None, utilization=None, title: str | None = None, labels: bool | None = None):
    """Draw ``graph``; return the matplotlib Figure (saved to ``out`` if given).

    ``utilization``: a ``run --json`` dict or path; links are then coloured by utilization.
    """
    import matplotlib.pyplot as plt

    if out is not None:
        check_output_path(out, "-o", FIGURE_SUFFIXES)
    sc = _Scene(graph, utilization, labels)
    _server_boxes(sc)
    racks = _rack_boxes(sc)
    cube_rows = _cube_rows(sc)
    planes = _planes(sc)
    types_seen = _links(sc, cube_rows, planes)
    by_kind = _nodes(sc, planes)
    _legend(sc, types_seen, cube_rows, by_kind)
    fig, ax, xs, ys = sc.fig, sc.ax, sc.xs, sc.ys
    name = graph.graph.get("name", "topology")
    if title is None:
        title = f"{name}: {len([n for n in by_kind.get('gpu', [])])} GPUs"
        if utilization is not None:
            title += (" (coloured by utilization; grey: no traffic)" if sc.note == "every link"
                      else f" (coloured: {sc.note}; grey: not reported)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - (0.8 if len(racks) > 1 else 0.45), max(ys) + 0.45)
    ax.set_axis_off()
    fig.tight_layout()
    if out is not None:
        save_figure(fig, out)
        plt.close(fig)
    return fig


def _server_boxes(sc) -> None:
    from matplotlib.patches import FancyBboxPatch

    ax, members = sc.ax, sc.members
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


def _rack_boxes(sc) -> list:
    """Racks: servers attached to the same leaf switches, boxed together (fabrics of several racks)."""
    from matplotlib.patches import FancyBboxPatch

    ax, pos = sc.ax, sc.pos
    racks = rack_groups(sc.graph, sc.server)
    if len(racks) > 1:
        for i, (leaves, servers_) in enumerate(racks):
            pts = [p for srv in servers_ for p in sc.members[srv]]
            pts += [pos[n] for n, j in sc.rack_switches.items() if j == i]   # its leaves (and FBBs) too
            x_lo, x_hi = min(p[0] for p in pts) - 0.6, max(p[0] for p in pts) + 0.6
            y_lo, y_hi = min(p[1] for p in pts) - 0.55, max(p[1] for p in pts) + 0.45
            ax.add_patch(FancyBboxPatch((x_lo, y_lo), x_hi - x_lo, y_hi - y_lo, boxstyle="round,pad=0.02",
                                        facecolor="none", edgecolor="#8c8c8c", linewidth=1.0, linestyle="--",
                                        zorder=0, gid=f"rack:{i}"))
            names = ", ".join(sorted((str(n).rsplit("/", 1)[-1] for n in leaves), key=natural))
            ax.text((x_lo + x_hi) / 2, y_lo + 0.02, f"rack {i} ({len(servers_)} servers; {names})", fontsize=7,
                    color="#525252", ha="center", va="bottom", zorder=1)
    return racks


def _cube_rows(sc) -> dict:
    """GPUs of cube-mesh servers: node -> (row, column spacing, single NVLink bandwidth)."""
    graph, server, pos = sc.graph, sc.server, sc.pos
    cube_rows = {}
    for srv in set(server.values()):
        gs = [n for n in graph.nodes if server.get(n) == srv and graph.nodes[n].get("kind") == "gpu"]
        gs.sort(key=lambda n: graph.nodes[n].get("local", 0))
        grid = cube_mesh_grid(graph, gs)
        if grid is None:
            continue
        xs_ = sorted({pos[n][0] for n in gs})
        spacing = min(b - a for a, b in zip(xs_, xs_[1:])) if len(xs_) > 1 else 1.0
        single = min(float(a.get("bandwidth", 0)) for u, v, a in graph.edges(gs, data=True) if v in gs)
        for n in gs:
            cube_rows[n] = (grid[n][1], spacing, single)
    return cube_rows


def _planes(sc) -> dict:
    """An NVSwitch that is its server's switch plane: drawn as a bar under the GPUs it joins,
    each GPU's port a vertical line down to it (not a fan of crossing lines)."""
    graph, pos = sc.graph, sc.pos
    planes = {}
    for n, a in graph.nodes(data=True):
        if a.get("kind") == "nvswitch":
            gs = [m for m in graph.successors(n) if graph.nodes[m].get("kind") == "gpu"]
            if len(gs) >= 2:
                planes[n] = (min(pos[m][0] for m in gs) - 0.3, max(pos[m][0] for m in gs) + 0.3)
    return planes


def _links(sc, cube_rows, planes) -> set:
    """Draw the links (one per cable / pair of directions); the link types seen."""
    graph = sc.graph
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
        color, alpha, z = link_color(lt), 0.85 if sc.squeeze == 1.0 else 0.55, 2
        lw = _edge_width(bw) / sc.squeeze
        if sc.utilization is not None:         # busiest: thickest, darkest, on top
            if k in sc.util_edges:
                frac = sc.norm(sc.util_edges[k])
                color, alpha, z, lw = sc.cmap(frac), 1.0, 3 + frac, 0.8 + 3.2 * frac
            else:
                color, alpha, lw = "#e3e3e3", 0.9, 0.6
        (x1, y1), (x2, y2) = sc.pos[u], sc.pos[v]
        if v in planes:
            x2 = x1
        elif u in planes:
            x1 = x2
        _link(sc, u, v, (x1, y1, x2, y2), bw, cube_rows, dict(color=color, alpha=alpha, zorder=z), lw)
    return types_seen


def _link(sc, u, v, ends, bw, cube_rows, style, lw) -> None:
    """One link: a line, two parallel lines (a double NVLink), or an arc around its row."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MPath

    ax, (x1, y1, x2, y2) = sc.ax, ends
    color, alpha, z = style["color"], style["alpha"], style["zorder"]
    gid = f"link:{min(u, v)}|{max(u, v)}"      # tests and SVG readers find a link's artists by it
    in_grid = u in cube_rows and v in cube_rows
    neighbours = in_grid and abs(x2 - x1) <= 1.01 * cube_rows[u][1] and abs(y2 - y1) <= CUBE_ROW_GAP + 1e-9
    double = in_grid and bw >= 1.5 * cube_rows[u][2]
    if in_grid and sc.utilization is None:
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
                    linewidth=lw if sc.utilization is None else max(0.8, lw * 0.6), alpha=alpha, zorder=z,
                    solid_capstyle="round", gid=gid)
    else:
        ax.plot([x1, x2], [y1, y2], color=color, linewidth=lw, alpha=alpha, zorder=z, solid_capstyle="round",
                gid=gid)


def _nodes(sc, planes) -> dict:
    """Draw the nodes (switch planes as bars); kind -> nodes."""
    from matplotlib.patches import FancyBboxPatch

    graph, ax, pos = sc.graph, sc.ax, sc.pos
    by_kind = defaultdict(list)
    for n, a in graph.nodes(data=True):
        by_kind[a.get("kind", "switch")].append(n)
    for n, (x_lo, x_hi) in planes.items():
        st = _NODE_STYLE["nvswitch"]
        face = sc.cmap(sc.norm(sc.util_nodes[n])) if sc.utilization is not None and n in sc.util_nodes else st["color"]
        ax.add_patch(FancyBboxPatch((x_lo, pos[n][1] - 0.09), x_hi - x_lo, 0.18, boxstyle="round,pad=0.01",
                                    facecolor=face, edgecolor=st["edgecolor"], linewidth=0.8, zorder=4,
                                    gid=f"plane:{n}"))
        if sc.switch_labels:
            ax.text((x_lo + x_hi) / 2, pos[n][1], f"{str(n).rsplit('/', 1)[-1]} (switch plane)", fontsize=6,
                    ha="center", va="center", zorder=5, color="#00441b")
    for kind, nodes in by_kind.items():
        nodes = [n for n in nodes if n not in planes]
        if not nodes:
            continue
        style = dict(_NODE_STYLE.get(kind, _NODE_STYLE["switch"]))
        face = [style["color"]] * len(nodes)
        if sc.utilization is not None:
            face = [sc.cmap(sc.norm(sc.util_nodes[n])) if n in sc.util_nodes else style["color"] for n in nodes]
        ax.scatter([pos[n][0] for n in nodes], [pos[n][1] for n in nodes], marker=style["marker"], s=style["s"],
                   c=face, edgecolors=style["edgecolor"], linewidths=0.8, zorder=4)
        if sc.labels or (sc.switch_labels and kind in ("switch", "nvswitch")):
            _node_labels(sc, kind, nodes)
    return by_kind


def _node_labels(sc, kind, nodes) -> None:
    for n in nodes:
        text = str(n).rsplit("/", 1)[-1]
        if kind == "gpu":
            text = str(sc.graph.nodes[n].get("local", text))
            sc.ax.text(sc.pos[n][0], sc.pos[n][1], text, fontsize=6, ha="center", va="center", zorder=5,
                       color="black")
        else:
            sc.ax.text(sc.pos[n][0], sc.pos[n][1] + 0.17, text, fontsize=6, ha="center", va="bottom", zorder=5,
                       color="#252525")


def _legend(sc, types_seen, cube_rows, by_kind) -> None:
    """Legend (link types, node kinds) and, for a utilization drawing, the colour bar."""
    import matplotlib
    from matplotlib.lines import Line2D

    handles = []
    if sc.utilization is None:
        for lt in [t for t in LINK_COLORS if t in types_seen] + sorted(t for t in types_seen if t not in LINK_COLORS):
            handles.append(Line2D([], [], color=link_color(lt), linewidth=2.2, label=link_label(lt)))
        if cube_rows:
            handles.append(Line2D([], [], color="none", label="NVLink in a cube-mesh: one line = single link,\n"
                                                               "two lines = double link"))
    for kind in [k for k in _NODE_STYLE if k in by_kind]:
        st = _NODE_STYLE[kind]
        handles.append(Line2D([], [], linestyle="none", marker=st["marker"], markersize=7, markerfacecolor=st["color"],
                              markeredgecolor=st["edgecolor"],
                              label={"gpu": "GPU (label: local index)" if sc.labels else "GPU",
                                     "pcie_switch": "PCIe switch",
                                     "nvswitch": "NVSwitch", "nic": "network adapter",
                                     "switch": "network switch", "cpu": "CPU"}[kind]))
    sc.ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False,
                 title="line width ~ bandwidth" if sc.utilization is None else None, title_fontsize=7)
    if sc.utilization is not None:
        sm = matplotlib.cm.ScalarMappable(norm=sc.norm, cmap=sc.cmap)
        cb = sc.fig.colorbar(sm, ax=sc.ax, fraction=0.03, pad=0.01, location="right")
        cb.set_label("link utilization (bytes / capacity / run time)", fontsize=8)
        cb.ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(xmax=1.0))
        cb.ax.tick_params(labelsize=7)
