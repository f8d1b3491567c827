"""Drawings of hardware topologies: ``simcollective draw-topology``.

A layered drawing of the graph: NVSwitches under their GPUs, GPUs, then PCIe switches,
network adapters, leaf switches and higher switch levels above. The nodes of a server are
kept together in a box; in a fabric of several racks (servers sharing leaf switches) each
rack is boxed with its leaves (and switches only it uses, e.g. ABCI's FBBs) above it, and
the top switch row (spines, core, root) spans the whole width. Links are coloured by type
(legend) and drawn thicker for more bandwidth; with ``--utilization-from RUN.json`` (a
``simcollective run --json`` file) they are coloured by how busy the run kept them instead
(bytes / capacity / run time).

The package: :mod:`.layout` (where each node goes), :mod:`.utilization` (a run's link
utilization), :mod:`.render` (the matplotlib drawing; :func:`.render.link_color`, the one
colour of each link type) and :mod:`.links` (a bar chart of a run's busiest links in those
colours).
"""

from __future__ import annotations

from ..parsing import check_output_path
from .layout import CUBE_ROW_GAP, layered_layout
from .links import draw_link_bars
from .render import LINK_COLORS, draw_topology, link_color, link_label
from .utilization import link_utilization

__all__ = ["layered_layout", "draw_topology", "draw_link_bars", "link_utilization", "add_parser", "LINK_COLORS",
           "link_color", "link_label", "CUBE_ROW_GAP"]


# -- command line ----------------------------------------------------------------------------

def add_parser(subparsers) -> None:
    from ..arguments import add_topology_arguments

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
    from ..parsing import load_json

    # the run JSON read (size, depth, UTF-8 checked) before matplotlib and the drawing
    utilization = (load_json(args.utilization_from, "--utilization-from", "run JSON")
                   if args.utilization_from is not None else None)
    import matplotlib

    matplotlib.use("Agg")      # the command line draws to files only
    from ..arguments import check_topology_conflicts, topology_config
    from ..figures import FIGURE_SUFFIXES
    from ..simulate import build_graph

    check_topology_conflicts(args)
    check_output_path(args.out, "-o", FIGURE_SUFFIXES)
    graph = build_graph(topology_config(args))
    draw_topology(graph, args.out, utilization=utilization, title=args.title,
                  labels=False if args.no_labels else None)
    print(f"wrote {args.out}")
    return 0

