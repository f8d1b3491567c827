"""A machine too wide for the widest figure (gb200-nvl72, 18 trays: 167 nodes, 576 cables):
drawn taller, its cables lighter and thinner, and its switches named; a drawing that fits
is drawn as it always was."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import simcollective as sc  # noqa: E402


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
    assert {ln.get_alpha() for ln in ax.lines} == {0.55}


def test_a_drawing_that_fits_is_unchanged():
    fig = sc.draw_topology("abci", 2)
    ax = fig.axes[0]
    assert list(fig.get_size_inches()) == [7.0, 5.95]
    assert {ln.get_alpha() for ln in ax.lines} == {0.85}
    assert {"leaf0", "spine1", "0", "3"} <= _texts(ax)


def test_no_labels_names_nothing():
    fig = sc.draw_topology("gb200-nvl72", 18, labels=False)
    assert not [t for t in _texts(fig.axes[0]) if t.startswith(("leaf", "spine"))]
