"""``simcollective plot``: scaling curves, speedups, breakdowns, labels with units, one-line
errors, reproducible files, approximate algorithms marked."""

import re

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from simcollective.cli import main  # noqa: E402
from simcollective.errors import UserInputError  # noqa: E402
from simcollective.figures import hue_colors, load_results, plot_results  # noqa: E402
from simcollective.sweeps import run_sweep  # noqa: E402
from tests.conftest import one_line_error  # noqa: E402


MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("res") / "r.csv"
    cfg = {"fixed": {"topology": "abci", "nodes": "auto", "elements": "64K"},
           "grid": {"gpus": [4, 8], "algorithm": ["ring", "ring-ring"], "seed": [1, 2]}}
    df = run_sweep(cfg, out, workers=1, progress=False)
    assert df["ok"].all()
    return out


def _check_file(path):
    data = path.read_bytes()
    assert len(data) > 1000
    assert data.startswith(MAGIC[path.suffix])


@pytest.mark.parametrize("ext", [".png", ".svg", ".pdf"])
def test_scaling_curve(results, tmp_path, ext):
    out = tmp_path / f"scaling{ext}"
    assert main(["plot", str(results), "--x", "gpus", "--y", "time_s", "--hue", "algorithm", "--logx", "--logy",
                 "-o", str(out)]) == 0
    _check_file(out)


def test_speedup_and_breakdown(results, tmp_path):
    out = tmp_path / "speedup.png"
    fig = plot_results(results, x="gpus", hue="algorithm", speedup_over="ring", out=out)
    _check_file(out)
    ax = fig.axes[0]
    assert "speedup over ring" in ax.get_ylabel()
    ring = [ln for ln in ax.get_lines() if ln.get_label() == "ring (baseline)"][0]
    assert list(ring.get_ydata()) == [1.0, 1.0]
    out = tmp_path / "breakdown.svg"
    fig = plot_results(results, x="gpus", hue="algorithm", breakdown=True, out=out)
    _check_file(out)
    assert fig.axes[0].get_ylabel().startswith("time per phase")
    out = tmp_path / "facets.pdf"
    plot_results(results, x="elements", y="busbw", hue="algorithm", facet="gpus", where=["seed=1"], out=out)
    _check_file(out)


def test_labels_have_units(results, tmp_path):
    fig = plot_results(results, x="gpus", y="time_s", hue="algorithm", where={"seed": 1})
    ax = fig.axes[0]
    assert ax.get_xlabel() == "GPUs"
    assert ax.get_ylabel().startswith("allreduce time (") and ax.get_ylabel()[-3:] in ("us)", "µs)", "ms)")
    assert {t.get_text() for t in ax.get_xticklabels()} >= {"4", "8"}


def test_bad_column_is_one_line_error(results, tmp_path, capsys):
    code = main(["plot", str(results), "--x", "gpus", "--y", "tim_s", "-o", str(tmp_path / "x.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "'tim_s'" in err and "available:" in err and "time_s" in err
    with pytest.raises(UserInputError, match="'colour'"):
        plot_results(results, x="gpus", hue="colour")
    with pytest.raises(UserInputError, match="no row has that value"):
        plot_results(results, x="gpus", where=["algorithm=nope"])
    with pytest.raises(UserInputError, match=r"\.png, \.svg or \.pdf"):
        plot_results(results, x="gpus", out=tmp_path / "x.jpg")


def test_ambiguous_rows_are_an_error_but_seeds_average(results):
    with pytest.raises(UserInputError, match="differ in algorithm"):
        plot_results(results, x="gpus")
    fig = plot_results(results, x="gpus", hue="algorithm")     # two seeds per point: averaged
    assert "mean over seeds" in fig._suptitle.get_text()


def test_plot_y_must_be_numeric(capsys, tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('[fixed]\nalgorithm = "ring"\n[grid]\nelements = ["1K", "2K"]\n')
    out = tmp_path / "r.csv"
    assert main(["sweep", str(cfg), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    capsys.readouterr()
    one_line_error(capsys, ["plot", out, "--x", "elements", "--y", "algorithm", "-o", tmp_path / "p.png"],
                   "--y 'algorithm'", "not a numeric column", "time_s")


@pytest.mark.parametrize("ext", [".pdf", ".svg", ".png"])
def test_figures_are_reproducible(tmp_path, ext):
    import matplotlib.pyplot as plt

    from simcollective.figures import save_figure

    paths = []
    for i in range(2):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        paths.append(tmp_path / f"f{i}{ext}")
        save_figure(fig, paths[-1])
        plt.close(fig)
    data = [p.read_bytes() for p in paths]
    assert data[0] == data[1]
    assert not re.search(rb"CreationDate|<dc:date>", data[0])


def test_plot_marks_approximate_algorithms(tmp_path):
    import matplotlib.pyplot as plt

    from simcollective.figures import plot_results
    from simcollective.sweeps import run_sweep

    df = run_sweep({"fixed": {"elements": "64K", "density": "1/64"},
                    "grid": {"algorithm": ["sparse-ring", "gtopk"], "nodes": [1, 2]}},
                   tmp_path / "a.csv", workers=1, progress=False)
    assert list(df.sort_values("algorithm")["exact"].drop_duplicates()) == [False, True]
    fig = plot_results(df, x="nodes", y="busbw", hue="algorithm")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["gtopk (approximate)", "sparse-ring"]
    assert ax.get_ylabel() == "effective bus bandwidth, dense equivalent (GB/s)"
    styles = {ln.get_label(): ln.get_linestyle() for ln in ax.get_lines()}
    assert styles["gtopk (approximate)"] == ":" and styles["sparse-ring"] == "-"
    plt.close(fig)



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


def test_colors_given_keep_one_colour_per_algorithm_across_figures():
    every = {"bruck": "#111111", "direct": "#222222", "ring": "#333333"}
    fig = plot_results(_table({"allgather": ALLGATHER}), x="bytes", hue="algorithm", logx=True, colors=every)
    drawn = {ln.get_label(): to_rgba(ln.get_color()) for ln in fig.axes[0].get_lines()}
    default = hue_colors(sorted(ALLGATHER))
    for algo in ALLGATHER:
        assert drawn[algo] == to_rgba(every.get(algo, default[algo]))


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
