"""A run's busiest links drawn as bars in the colours ``draw-topology`` gives their types,
with a legend."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

import simcollective as sc  # noqa: E402
from simcollective.drawings import draw_link_bars, link_color  # noqa: E402
from simcollective.errors import UserInputError  # noqa: E402


@pytest.fixture(scope="module")
def result():
    return sc.run(topology="abci", nodes=2, algorithm="ring-ring", elements="64K", profile="smpi")


def _legend(ax) -> dict:
    leg = ax.get_legend()
    assert leg is not None
    return {t.get_text(): to_rgba(h.get_facecolor() if hasattr(h, "get_facecolor") else h.get_color())
            for t, h in zip(leg.get_texts(), leg.legend_handles)}


def test_link_bars_have_a_legend_in_draw_topology_colours(result):
    links = result.links[result.links["link_type"] != "switch"]
    fig = draw_link_bars(links, top=20)
    ax = fig.axes[0]
    bars = _legend(ax)
    assert list(bars) == ["NVLink", "PCIe", "InfiniBand"]           # the drawing's legend order
    topo = _legend(sc.draw_topology("abci", 2).axes[0])
    for label, color in bars.items():
        assert topo[label] == color                                  # the same colour for the same type
    assert bars["NVLink"] == to_rgba(link_color("nvlink")) != bars["PCIe"] == to_rgba(link_color("pcie"))
    shown = links.sort_values("utilization", ascending=False, kind="stable").head(20)[::-1]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(shown["link"])
    for patch, lt, u in zip(ax.patches, shown["link_type"], shown["utilization"]):
        assert to_rgba(patch.get_facecolor()) == to_rgba(link_color(lt))
        assert patch.get_width() == pytest.approx(100 * u)


def test_link_bars_name_a_table_without_link_columns(result):
    with pytest.raises(UserInputError, match="no column utilization"):
        draw_link_bars(result.links.drop(columns="utilization"))
