"""Topology drawing layout: each rack's switches above it, the top row over the whole width, rows."""

import pytest

import topologies
from simcollective.drawings import draw_topology, layered_layout
from simcollective.drawings.layout import rack_groups as _racks, servers as _servers


def _rack_spans(g, pos):
    server = _servers(g)
    spans = []
    for leaves, servers_ in _racks(g, server):
        xs = [pos[n][0] for n, s in server.items() if s in servers_]
        spans.append((leaves, servers_, min(xs) - 0.5, max(xs) + 0.5))
    return spans


def _switches(g, level):
    return [n for n, a in g.nodes(data=True) if a.get("kind") == "switch" and a.get("level") == level]


@pytest.mark.parametrize("name, nodes, opts, racks, above, top", [
    ("abci", 40, {}, [34, 6], ("leaf", "fbb"), "spine"),
    ("fat-tree", 16, {"hosts_per_leaf": "4"}, [4, 4, 4, 4], ("leaf",), "spine"),
    ("fat-tree", 32, {"levels": "3", "hosts_per_leaf": "4", "leaves_per_pod": "2"}, [8, 8, 8, 8],
     ("leaf", "agg"), "core"),
    ("dgx-h100", 40, {}, [32, 8], ("leaf",), "spine"),
])
def test_switches_sit_above_their_rack_and_the_top_row_spans_all(name, nodes, opts, racks, above, top):
    g = topologies.build(name, nodes, opts)
    pos = layered_layout(g)
    spans = _rack_spans(g, pos)
    assert [len(s) for _, s, _, _ in spans] == racks
    for i, (leaves, servers_, lo, hi) in enumerate(spans):
        assert leaves and all(lo <= pos[n][0] <= hi for n in leaves), i
        nxt = spans[i + 1][2] if i + 1 < len(spans) else float("inf")
        assert hi < nxt                          # racks side by side, not interleaved
    rack_x = [(lo, hi) for _, _, lo, hi in spans]
    for level in above:                          # every such switch inside exactly one rack's span
        for n in _switches(g, level):
            assert sum(lo <= pos[n][0] <= hi for lo, hi in rack_x) == 1, n
    ys = {level: {pos[n][1] for n in _switches(g, level)} for level in (*above, top)}
    assert all(len(v) == 1 for v in ys.values())
    row_y = [min(ys[lv]) for lv in (*above, top)]
    assert row_y == sorted(row_y) and len(set(row_y)) == len(row_y)      # leaves, (FBB/agg), top upwards
    tops = sorted(pos[n][0] for n in _switches(g, top))
    left, right = rack_x[0][0], rack_x[-1][1]
    assert tops[0] < left + (right - left) / len(tops) and tops[-1] > right - (right - left) / len(tops)
    assert len(set(pos.values())) == len(pos)


def test_rail_leaves_in_rail_order_above_their_scalable_unit():
    g = topologies.build("dgx-h100", 40, {})
    pos = layered_layout(g)
    for su in ("su0", "su1"):
        xs = [pos[f"{su}/leaf{i}"][0] for i in range(8)]
        assert xs == sorted(xs)
    assert max(pos[f"su0/leaf{i}"][0] for i in range(8)) < min(pos[f"su1/leaf{i}"][0] for i in range(8))


def test_abci_racks_are_the_34_server_racks_boxed_with_their_switches():
    import matplotlib.pyplot as plt

    g = topologies.build("abci", 40, {})
    fig = draw_topology(g)
    ax = fig.axes[0]
    boxes = sorted((p for p in ax.patches if (p.get_gid() or "").startswith("rack:")), key=lambda p: p.get_gid())
    assert [b.get_gid() for b in boxes] == ["rack:0", "rack:1"]
    texts = sorted(t.get_text() for t in ax.texts if t.get_text().startswith("rack "))
    assert texts == ["rack 0 (34 servers; leaf0, leaf1, leaf2, leaf3)", "rack 1 (6 servers; leaf0, leaf1, leaf2, leaf3)"]
    pos = layered_layout(g)
    for b, r in zip(boxes, ("r0", "r1")):        # the box holds the rack's leaves and FBB switches
        x0, y0, w, h = b.get_x(), b.get_y(), b.get_width(), b.get_height()
        for n in [f"{r}/leaf{i}" for i in range(4)] + [f"{r}/fbb{i}" for i in range(3)]:
            x, y = pos[n]
            assert x0 <= x <= x0 + w and y0 <= y <= y0 + h, n
        assert not any(y0 <= pos[n][1] <= y0 + h for n in ("spine0", "spine1"))
    plt.close(fig)


@pytest.mark.parametrize("name", ["dgx1", "dgx2", "fat-tree", "dgx-h100"])
def test_layout_rows(name):
    import topologies

    from simcollective.drawings import layered_layout

    g = topologies.build(name, 2)
    pos = layered_layout(g)
    assert set(pos) == set(g.nodes)
    gpu_y = {pos[n][1] for n, a in g.nodes(data=True) if a["kind"] == "gpu"}
    sw_y = {pos[n][1] for n, a in g.nodes(data=True) if a["kind"] == "switch"}
    assert len(gpu_y) == (2 if name == "dgx1" else 1) and min(sw_y) > max(gpu_y)   # DGX-1: its cube-mesh rows
    assert len(set(pos.values())) == len(pos)            # no two nodes on one spot
