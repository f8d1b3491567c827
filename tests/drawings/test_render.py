"""``draw-topology``: files drawn, no network options, utilization of the drawn machine only,
cube mesh, busiest links thickest, fabrics in racks, NVSwitch planes."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import simcollective as sc  # noqa: E402
from simcollective.cli import main  # noqa: E402
from tests.conftest import one_line_error  # noqa: E402


MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


def _check_file(path):
    data = path.read_bytes()
    assert len(data) > 1000
    assert data.startswith(MAGIC[path.suffix])


# -- topology drawings -----------------------------------------------------------------------

def test_draw_topology(tmp_path, capsys):
    out = tmp_path / "abci.png"
    assert main(["draw-topology", "--topology", "abci", "--nodes", "2", "-o", str(out)]) == 0
    _check_file(out)
    run = tmp_path / "run.json"
    assert main(["run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring", "--elements", "64K",
                 "--json", str(run), "--quiet"]) == 0
    out2 = tmp_path / "util.png"
    assert main(["draw-topology", "--topology", "abci", "--nodes", "2", "-o", str(out2),
                 "--utilization-from", str(run)]) == 0
    _check_file(out2)
    capsys.readouterr()
    assert main(["draw-topology", "--topology", "abci", "-o", str(tmp_path / "x.gif")]) == 2
    assert ".png, .svg or .pdf" in capsys.readouterr().err


def test_draw_topology_has_no_network_options(capsys, tmp_path):
    for opt in ("--profile", "--routing"):
        code = None
        with pytest.raises(SystemExit) as exc:
            main(["draw-topology", opt, "hash" if opt == "--routing" else "smpi", "-o", str(tmp_path / "t.png")])
        code = exc.value.code
        assert code == 2
        assert f"unrecognized arguments: {opt}" in capsys.readouterr().err


def test_utilization_of_another_machine_is_refused(capsys, tmp_path):
    run = tmp_path / "run.json"
    assert main(["run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring", "--elements", "64K",
                 "--json", str(run)]) == 0
    capsys.readouterr()
    one_line_error(capsys, ["draw-topology", "--topology", "dgx1", "-o", tmp_path / "u.png",
                            "--utilization-from", run], "another machine", "--topology")
    assert not (tmp_path / "u.png").exists()
    assert main(["draw-topology", "--topology", "abci", "--nodes", "2", "-o", str(tmp_path / "u.png"),
                 "--utilization-from", str(run)]) == 0


# -- draw-topology ------------------------------------------------------------------------------------

def _link_artists(fig):
    out = {}
    for ax in fig.axes:
        for art in [*ax.lines, *ax.patches]:
            gid = art.get_gid()
            if gid and gid.startswith("link:"):
                out.setdefault(gid[5:], []).append(art)
    return out


def test_dgx1_drawn_as_its_cube_mesh():
    import matplotlib.pyplot as plt
    import topologies

    from simcollective.drawings import CUBE_ROW_GAP, draw_topology, layered_layout

    g = topologies.build("dgx1", 1)
    pos = layered_layout(g)
    xy = {int(n.rsplit("gpu", 1)[1]): pos[n] for n in g if g.nodes[n].get("kind") == "gpu"}
    rows = sorted({round(y, 6) for _, y in xy.values()})
    assert len(rows) == 2 and rows[1] - rows[0] == pytest.approx(CUBE_ROW_GAP)
    top = [i for i in xy if round(xy[i][1], 6) == rows[1]]
    assert sorted(top) == [0, 1, 4, 5] and sorted(xy, key=lambda i: (-xy[i][1], xy[i][0]))[:4] == [0, 1, 5, 4]
    fig = draw_topology(g)
    arts = _link_artists(fig)
    for u, v, a in g.edges(data=True):
        if a["link_type"] == "nvlink" and u < v:
            double = a["bandwidth"] == 100e9
            assert len(arts[f"{u}|{v}"]) == (2 if double else 1), (u, v)
    plt.close(fig)


def test_utilization_busiest_is_thickest_and_darkest():
    import matplotlib.pyplot as plt
    import numpy as np
    import topologies

    import simcollective as sc
    from simcollective.drawings import draw_topology

    r = sc.run(topology="abci", nodes=2, algorithm="ring", elements="1M")
    util = {}
    for ln in r.to_dict()["links"]:
        if "<->" in ln["link"]:
            a, b = ln["link"].split("<->")
            util[f"{min(a, b)}|{max(a, b)}"] = max(util.get(f"{min(a, b)}|{max(a, b)}", 0), ln["utilization"])
    fig = draw_topology(topologies.build("abci", 2), utilization=r.to_dict())
    arts = _link_artists(fig)
    import matplotlib.colors as mc

    def colour(art):
        c = art.get_color() if hasattr(art, "get_color") and not hasattr(art, "get_edgecolor") else art.get_edgecolor()
        return float(np.mean(mc.to_rgb(c)))

    drawn = [(util[k], arts[k][0].get_linewidth(), colour(arts[k][0])) for k in util if k in arts]
    drawn.sort()
    widths = [w for _, w, _ in drawn]
    lightness = [c for _, _, c in drawn]
    assert widths == sorted(widths) and widths[-1] > widths[0]
    assert lightness == sorted(lightness, reverse=True) and lightness[-1] < lightness[0]
    assert len(fig.axes) == 2                      # the drawing and its colour bar
    plt.close(fig)


def test_fabrics_are_drawn_in_racks():
    import matplotlib.pyplot as plt
    import topologies

    from simcollective.drawings import draw_topology

    def racks(fig):
        return sorted(p.get_gid() for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("rack:"))

    fig = draw_topology(topologies.build("fat-tree", 16, {"hosts_per_leaf": "4"}))
    assert racks(fig) == ["rack:0", "rack:1", "rack:2", "rack:3"]
    texts = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("rack ")]
    assert texts[0] == "rack 0 (4 servers; leaf0)"
    plt.close(fig)
    fig = draw_topology(topologies.build("dgx1", 1))
    assert racks(fig) == []                         # one rack: no box
    plt.close(fig)


@pytest.mark.parametrize("name", ["dgx2", "dgx-h100"])
def test_nvswitch_drawn_as_a_plane_under_vertical_ports(name):
    import matplotlib.pyplot as plt
    import topologies

    from simcollective.drawings import draw_topology

    g = topologies.build(name, 1)
    fig = draw_topology(g)
    ax = fig.axes[0]
    planes = [p for p in ax.patches if (p.get_gid() or "").startswith("plane:")]
    assert len(planes) == 1
    for gid, arts in _link_artists(fig).items():
        if "nvswitch" in gid:
            xs = arts[0].get_xdata()
            assert xs[0] == xs[1]                # vertical port line
    plt.close(fig)



def _texts(ax) -> set:
    return {t.get_text() for t in ax.texts}


def test_a_wide_fabric_is_drawn_taller_with_its_switches_named():
    fig = sc.draw_topology("gb200-nvl72", 18)
    ax = fig.axes[0]
    w, h = fig.get_size_inches()
    assert w == 28.0 and 1.3 * 5.76 < h <= 2 * 5.76             # 5.76 in: the height of its levels alone
    names = _texts(ax)
    assert {f"leaf{i}" for i in range(4)} <= names and {f"spine{i}" for i in range(18)} <= names
    assert "nvswitch (switch plane)" in names
    assert not names & {"0", "1", "2", "3"}                   # 72 GPUs and 72 NICs stay unnamed
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "GPU" in legend and "GPU (label: local index)" not in legend     # no label promised that is not drawn
    assert {ln.get_alpha() for ln in ax.lines} == {0.55}


def test_a_drawing_that_fits_is_unchanged():
    fig = sc.draw_topology("abci", 2)
    ax = fig.axes[0]
    assert list(fig.get_size_inches()) == [7.0, 5.95]
    assert {ln.get_alpha() for ln in ax.lines} == {0.85}
    assert {"leaf0", "spine1", "0", "3"} <= _texts(ax)
    assert "GPU (label: local index)" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_no_labels_names_nothing():
    fig = sc.draw_topology("gb200-nvl72", 18, labels=False)
    assert not [t for t in _texts(fig.axes[0]) if t.startswith(("leaf", "spine"))]
