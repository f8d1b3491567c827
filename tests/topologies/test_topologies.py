"""The ``topologies`` package's public API: exports, no import of simcollective, doctests."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import topologies


MODULES = [
    "topologies",
    "topologies.schema",
    "topologies.summary",
    "topologies.nodes",
    "topologies.fabrics",
    "topologies.fabrics.parts",
    "topologies.fabrics.study",
    "topologies.fabrics.trees",
    "topologies.builders",
    "topologies.builders.study",
    "topologies.builders.parametric",
    "topologies.io",
    "topologies.registry",
    "topologies.hardware",
    "topologies.hardware.common",
    "topologies.hardware.v100",
    "topologies.hardware.hgx",
    "topologies.hardware.nvl72",
    "topologies.hardware.cloud",
    "topologies.transports",
]


# --------------------------------------------------------------- packaging
def test_public_api():
    for name in topologies.__all__:
        assert hasattr(topologies, name), name
    for name in ["TopologyError", "validate", "gpus", "describe", "load", "save", "PRESETS",
                 "build", "abci", "dgx1_cluster", "dgx2_cluster", "fat_tree",
                 "dgx_h100_cluster"]:
        assert name in topologies.__all__
    for mod in MODULES:
        assert hasattr(importlib.import_module(mod), "__all__"), mod


def test_does_not_import_simcollective():
    code = ("import sys, topologies; topologies.build('abci', 2); "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('simcollective',)]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("module", MODULES)
def test_doctests(module):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0
