"""Hardware topologies of GPU clusters as NetworkX graphs.

The graph schema (node kinds, edge and switch-crossing attributes, graph
attributes) is documented in :mod:`topologies.schema`. This package holds no
simulation code and does not depend on ``simcollective``.

Examples
--------
>>> import topologies
>>> G = topologies.build("dgx1", 2)
>>> len(topologies.gpus(G)), G.graph["default_group_size"]
(16, 4)
>>> list(topologies.PRESETS)[:10]  # doctest: +NORMALIZE_WHITESPACE
['abci', 'dgx1', 'dgx2', 'fat-tree', 'dgx-h100', 'dgx1-v100', 'dgx2-v100', 'dgx-a100',
 'dgx-b200', 'gb200-nvl72']
>>> list(topologies.PRESETS)[10:13], len(topologies.PRESETS)
(['dgx-h200', 'dgx-b300', 'gb300-nvl72'], 34)
>>> topologies.preset_label("dgx1"), topologies.preset_label("dgx-h100")
('study', 'hardware')
"""

from .builders import abci, dgx1_cluster, dgx2_cluster, dgx_h100_cluster, fat_tree
from .hardware import dgx1_v100, dgx2_v100, dgx_a100, dgx_b200, dgx_h100, gb200_nvl72
from .io import load, save
from .registry import PRESETS, build, preset_label, preset_options
from .schema import DUPLEX, KINDS, LINK_TYPES, TopologyError, gpus, validate
from .summary import describe

__all__ = [
    "TopologyError",
    "validate",
    "gpus",
    "describe",
    "load",
    "save",
    "PRESETS",
    "build",
    "preset_options",
    "abci",
    "dgx1_cluster",
    "dgx2_cluster",
    "fat_tree",
    "dgx_h100_cluster",
    "preset_label",
    "dgx1_v100",
    "dgx2_v100",
    "dgx_a100",
    "dgx_h100",
    "dgx_b200",
    "gb200_nvl72",
    "KINDS",
    "LINK_TYPES",
    "DUPLEX",
]
