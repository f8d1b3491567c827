"""``simcollective plot``: scaling curves, speedups, breakdowns, labels with units, one-line
errors, reproducible files, approximate algorithms marked."""

import re

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.figures import plot_results
from simcollective.sweeps import run_sweep
from tests.conftest import one_line_error


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
