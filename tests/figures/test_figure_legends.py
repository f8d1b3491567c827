"""Legends and colours of ``simcollective plot`` figures, and results tables without ``ok``."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from simcollective.figures import hue_colors, load_results, plot_results  # noqa: E402

ALLGATHER = ("bruck", "direct", "recursive-doubling", "ring", "ring-ring")
ALLTOALL = ("bruck", "direct", "hierarchical", "pairwise")


def _table(groups: dict) -> pd.DataFrame:
    rows = [{"collective": coll, "algorithm": a, "bytes": b, "time_s": 1e-6 * (i + 1) * b / 4096, "ok": True}
            for coll, algos in groups.items() for i, a in enumerate(algos) for b in (4096, 65536, 1 << 20)]
    return pd.DataFrame(rows)


def _legend_colors(ax) -> dict:
    leg = ax.get_legend()
    return {t.get_text(): to_rgba(h.get_color()) for t, h in zip(leg.get_texts(), leg.legend_handles)}


def test_panels_with_different_algorithms_each_have_a_legend_in_one_colour_map():
    df = _table({"allgather": ALLGATHER, "alltoall": ALLTOALL})
    fig = plot_results(df, x="bytes", hue="algorithm", facet="collective", logx=True)
    ag, a2a = fig.axes[:2]
    assert ag.get_legend() is not None and a2a.get_legend() is not None and not fig.legends
    ag_colors, a2a_colors = _legend_colors(ag), _legend_colors(a2a)
    assert list(ag_colors) == list(ALLGATHER) and list(a2a_colors) == list(ALLTOALL)
    every = hue_colors(sorted(set(ALLGATHER) | set(ALLTOALL)))
    for algo, c in {**ag_colors, **a2a_colors}.items():
        assert c == to_rgba(every[algo])
    assert ag_colors["bruck"] == a2a_colors["bruck"]                  # one algorithm, one colour
    assert a2a_colors["hierarchical"] not in ag_colors.values()       # never another's colour
    for ax in (ag, a2a):                                              # the lines match their legend
        legend = _legend_colors(ax)
        assert {ln.get_label(): to_rgba(ln.get_color()) for ln in ax.get_lines()} == legend


def test_panels_with_the_same_algorithms_share_one_figure_legend():
    df = _table({"allgather": ALLGATHER, "alltoall": ALLGATHER})
    fig = plot_results(df, x="bytes", hue="algorithm", facet="collective", logx=True)
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in fig.axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(ALLGATHER)


def test_a_table_without_ok_is_read_as_successful_rows(tmp_path):
    sweep = tmp_path / "sweep.csv"
    _table({"allgather": ("ring", "bruck")}).assign(ok=[True] * 5 + [False]).to_csv(sweep, index=False)
    other = tmp_path / "bench.csv"
    _table({"allgather": ("direct",)}).drop(columns="ok").to_csv(other, index=False)
    df = load_results([sweep, other])
    assert df["ok"].tolist() == [True] * 5 + [False] + [True] * 3
    assert df[df["ok"].astype(bool)]["algorithm"].tolist() == ["ring"] * 3 + ["bruck"] * 2 + ["direct"] * 3
    fig = plot_results([sweep, other], x="bytes", hue="algorithm")
    assert sorted(ln.get_label() for ln in fig.axes[0].get_lines()) == ["bruck", "direct", "ring"]


def test_the_time_axis_names_the_collective_drawn():
    two = _table({"allgather": ALLGATHER, "alltoall": ALLTOALL})
    fig = plot_results(two[two["collective"] == "alltoall"], x="bytes", hue="algorithm", logx=True)
    assert fig.axes[0].get_ylabel().startswith("alltoall time (")
    assert fig.axes[0].get_xlabel() == "size (bytes, as nccl-tests)"
    fig = plot_results(two, x="bytes", hue="algorithm", facet="collective", logx=True)
    assert fig.axes[0].get_ylabel().startswith("time (")
    fig = plot_results(two.drop(columns="collective").iloc[:3], x="bytes", logx=True)   # no column: allreduce
    assert fig.axes[0].get_ylabel().startswith("allreduce time (")
