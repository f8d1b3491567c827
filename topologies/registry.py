"""Named presets and :func:`build`, the entry point of command-line tools.

A CLI passes a preset name, a size (``--nodes``) and ``--topology-opt
key=value`` strings; :func:`build` converts each value to the type of the
builder parameter's default and returns a validated graph.
"""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import networkx as nx

from .builders import abci, dgx1_cluster, dgx2_cluster, fat_tree
from .hardware import dgx1_v100, dgx2_v100, dgx_a100, dgx_b200, dgx_h100, gb200_nvl72
from .hardware.cloud import SHAPES, shape_builder
from .transports import transport
from .schema import TopologyError

__all__ = ["PRESETS", "build", "preset_options", "preset_label"]

#: Label of the study's presets in listings: models of 2019 machines with the
#: study's conventions (shared-duplex NVLink, the study's latencies).
STUDY_LABEL = "[the study's platform model]"
#: Label of the presets built from datasheets (:mod:`topologies.hardware`).
HARDWARE_LABEL = "[hardware, as built]"
#: Label of the parametric fabrics.
PARAMETRIC_LABEL = "[parametric]"

#: Preset name -> (builder, one-line description). The builder's first
#: parameter is the size given to :func:`build` as ``nodes``. Each
#: description starts with :data:`STUDY_LABEL`, :data:`HARDWARE_LABEL` or
#: :data:`PARAMETRIC_LABEL`.
PRESETS: OrderedDict[str, tuple[Callable[..., nx.DiGraph], str]] = OrderedDict([
    ("abci", (abci, f"{STUDY_LABEL} ABCI: 4 x V100 per node, NVLink fully connected, racks "
                    "of 34 nodes with 4 leaves + 3 FBB switches, 2 spines")),
    ("dgx1", (dgx1_cluster, f"{STUDY_LABEL} DGX-1 cluster: 8 x V100 hybrid cube-mesh per "
                            "node, 6 nodes per leaf, one root, 2:1")),
    ("dgx2", (dgx2_cluster, f"{STUDY_LABEL} DGX-2 cluster: 16 x V100 on NVSwitch per node, "
                            "3 nodes per leaf, one root")),
    ("fat-tree", (fat_tree, f"{PARAMETRIC_LABEL} leaf-spine / 3-level fat-tree of single-GPU "
                            "or DGX hosts, configurable oversubscription (nodes = hosts)")),
    ("dgx-h100", (dgx_h100, f"{HARDWARE_LABEL} DGX H100: 8 x H100, 18 NVLink4 (450 GB/s/dir) "
                            "to NVSwitch with NVLS, 8 x 400G NICs on rails")),
    ("dgx1-v100", (dgx1_v100, f"{HARDWARE_LABEL} DGX-1V: 8 x V100 hybrid cube-mesh NVLink2 "
                              "(25 GB/s/dir per link, double pairs 50), 4 EDR NICs on rails")),
    ("dgx2-v100", (dgx2_v100, f"{HARDWARE_LABEL} DGX-2: 16 x V100, 2 boards x 6 NVSwitch "
                              "planes (6 links per GPU, 150 GB/s/dir), 8 EDR NICs on rails")),
    ("dgx-a100", (dgx_a100, f"{HARDWARE_LABEL} DGX A100: 8 x A100, 12 NVLink3 (300 GB/s/dir) "
                            "to NVSwitch, 8 x 200G HDR NICs on rails")),
    ("dgx-b200", (dgx_b200, f"{HARDWARE_LABEL} DGX B200: 8 x B200, 18 NVLink5 (900 GB/s/dir) "
                            "to NVSwitch with NVLS, 8 x 400G NICs on rails")),
    ("gb200-nvl72", (gb200_nvl72, f"{HARDWARE_LABEL} GB200 NVL72: hosts of 4 B200 in NVLink "
                                  "domains of 72 GPUs (900 GB/s/dir, NVLS), 4 x 400G NICs per "
                                  "host on rails (nodes = hosts)")),
])


def _shape_text(name: str) -> str:
    shape = SHAPES[name]
    t = transport(shape.transport)
    rate = shape.figures["nic_bandwidth"] * 8 / 1e9
    return (f"{HARDWARE_LABEL} {shape.title}: {shape.gpu_model}, {shape.nics} x {rate:g}G "
            f"{t.name} NICs per node (built as {shape.family}; figures: --show {name})")


# the machines people rent (topologies/hardware/shapes.toml), after the families they build on
PRESETS.update((name, (shape_builder(name), _shape_text(name))) for name in SHAPES)


def preset_label(name: str) -> str:
    """``"study"``, ``"hardware"`` or ``"parametric"``: the kind of preset `name`.

    Examples
    --------
    >>> preset_label("dgx1"), preset_label("dgx1-v100"), preset_label("fat-tree")
    ('study', 'hardware', 'parametric')
    """
    desc = PRESETS[_name(name)][1]
    if desc.startswith(STUDY_LABEL):
        return "study"
    if desc.startswith(HARDWARE_LABEL):
        return "hardware"
    return "parametric"


def preset_options(name: str) -> dict[str, Any]:
    """Return the options of preset `name` and their defaults (size parameter excluded).

    Examples
    --------
    >>> preset_options("dgx1")["nodes_per_leaf"]
    6
    >>> "nodes" in preset_options("dgx1")
    False
    """
    builder = _builder(name)
    params = list(inspect.signature(builder).parameters.values())[1:]
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _name(name: str) -> str:
    if not isinstance(name, str) or name not in PRESETS:
        raise TopologyError(f"unknown topology {name!r}; allowed: {', '.join(PRESETS)}")
    return name


def _builder(name: str) -> Callable[..., nx.DiGraph]:
    return PRESETS[_name(name)][0]


def _convert(name: str, key: str, value: Any, default: Any) -> Any:
    def fail(expected: str) -> TopologyError:
        return TopologyError(
            f"bad value {value!r} for option {key!r} of topology {name!r}: expected {expected}"
        )

    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise fail("a boolean")
    if isinstance(default, int):
        if isinstance(value, bool):
            raise fail("an int")
        if isinstance(value, int):
            return value
        try:
            f = float(str(value).strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise fail("an int") from None
        if not math.isfinite(f) or f != int(f):
            raise fail("an int")
        return int(f)
    if isinstance(default, float):
        if isinstance(value, bool):
            raise fail("a number")
        try:
            f = float(value.strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise fail("a number") from None
        if math.isnan(f):
            raise fail("a number")
        return f
    if isinstance(default, str):
        if not isinstance(value, str):
            raise fail("a string")
        return value
    return value


def build(
    name: str,
    nodes: int,
    options: Mapping[str, str | int | float] | None = None,
) -> nx.DiGraph:
    """Build preset `name` with `nodes` servers (hosts, for ``"fat-tree"``) and `options`.

    Parameters
    ----------
    name : str
        One of :data:`PRESETS`: the study's ``"abci"``, ``"dgx1"``,
        ``"dgx2"``; ``"fat-tree"``; the hardware presets ``"dgx-h100"``,
        ``"dgx1-v100"``, ``"dgx2-v100"``, ``"dgx-a100"``, ``"dgx-b200"``,
        ``"gb200-nvl72"``; rented machines, ``"aws-p4d"``, ... (:mod:`topologies.hardware`).
    nodes : int
        Passed as the builder's first parameter; must be >= 1.
    options : mapping of str to str, int or float, optional
        Keyword options of the builder, e.g. from ``--topology-opt
        key=value``. Strings are converted to the type of the parameter's
        default (``"12.5e9"`` -> float, ``"4"`` -> int).

    Returns
    -------
    networkx.DiGraph
        A validated topology (validated once, by the preset's builder).

    Raises
    ------
    TopologyError
        Unknown preset, unknown option (the message lists the allowed ones),
        a value that cannot be converted, ``nodes < 1``, or a resulting graph
        that is invalid.

    Examples
    --------
    >>> G = build("fat-tree", 64, {"oversubscription": "2", "hosts_per_leaf": "8"})
    >>> G.out_degree("leaf0")
    12
    >>> build("abci", 2, {"foo": "1"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topologies.schema.TopologyError: unknown option 'foo' for topology 'abci'; allowed: nodes_per_rack, ...
    """
    builder = _builder(name)
    allowed = preset_options(name)
    if isinstance(nodes, bool) or not isinstance(nodes, int):
        try:
            nodes = _convert(name, "nodes", nodes, 0)
        except TopologyError:
            raise TopologyError(f"nodes must be an int >= 1, got {nodes!r}") from None
    if nodes < 1:
        raise TopologyError(f"nodes must be >= 1, got {nodes!r}")
    kwargs: dict[str, Any] = {}
    for key, value in (options or {}).items():
        if key not in allowed:
            raise TopologyError(
                f"unknown option {key!r} for topology {name!r}; allowed: {', '.join(allowed)}"
            )
        kwargs[key] = _convert(name, key, value, allowed[key])
    return builder(nodes, **kwargs)   # every preset's builder validates the graph it returns
