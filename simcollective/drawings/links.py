"""A bar chart of a run's busiest links: utilization per link, each bar in its link type's
colour, the colour of that type in ``draw-topology``'s drawings (:func:`.render.link_color`),
with a legend naming the types."""

from __future__ import annotations

from .render import LINK_COLORS, link_color, link_label

__all__ = ["draw_link_bars"]


def draw_link_bars(links, top: int = 20, ax=None, title: str | None = None):
    """Horizontal bars of ``links`` (a ``Result.links`` DataFrame: ``link``, ``link_type``,
    ``utilization``), the ``top`` busiest first from the top; return the Figure.

    ``ax``: draw into this matplotlib Axes. The legend lists the link types drawn, in
    the order of the drawings' legend."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from ..errors import UserInputError

    missing = [c for c in ("link", "link_type", "utilization") if c not in links.columns]
    if missing:
        raise UserInputError(f"links table: no column {', '.join(missing)} (a Result.links table has them)")
    rows = links.sort_values("utilization", ascending=False, kind="stable").head(top)[::-1]
    if ax is None:
        fig, ax = plt.subplots(figsize=(8, max(2.5, 0.2 * len(rows) + 1.2)))
    ax.barh(rows["link"].astype(str), 100 * rows["utilization"], color=[link_color(t) for t in rows["link_type"]])
    ax.set_xlabel("utilization over the run (% of capacity)")
    ax.tick_params(axis="y", labelsize=7)
    seen = list(dict.fromkeys(rows["link_type"][::-1]))
    order = [t for t in LINK_COLORS if t in seen] + sorted(t for t in seen if t not in LINK_COLORS)
    ax.legend(handles=[Patch(color=link_color(t), label=link_label(t)) for t in order], title="link type",
              fontsize=8, title_fontsize=8, loc="lower right", frameon=True)
    if title:
        ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure
