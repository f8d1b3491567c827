"""The points of a sweep: the grid expanded, each point keyed by a hash of its inputs."""

from __future__ import annotations

import hashlib
import itertools
import json
import math

from ..errors import UserInputError
from .config import DEFAULTS, INPUT_KEYS, WHEN_SET_OPTIONS, load_config, opts_dict, resolve_path

__all__ = ["point_key", "expand_grid", "iter_points", "grid_size", "resolve_auto_nodes"]


def point_key(point: dict) -> str:
    """Stable 16-hex-digit key of a point: hash of its canonical inputs (``None`` omitted)."""
    canon = {k: point.get(k) for k in INPUT_KEYS if point.get(k) is not None}
    if canon.get("routing") == "auto":
        # NOTE: auto, the default, keys as first, the default it replaced, so that existing
        # tables resume; the two differ only on hardware presets over several scalable units,
        # and a grid that lists both is refused (checks.validate_grid)
        canon["routing"] = "first"
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_GPN_CACHE: dict = {}


def _gpus_per_node(point: dict, base: str) -> int:
    key = (point["topology"], point["topology_opts"], point["topology_file"])
    if key not in _GPN_CACHE:
        import topologies

        from ..run_config import load_topology_file

        if point["topology_file"]:     # size- and nesting-checked, as every user file
            g = load_topology_file(resolve_path(point["topology_file"], base))
        else:
            g = topologies.build(point["topology"], 1, opts_dict(point["topology_opts"]))
        _GPN_CACHE[key] = int(g.graph.get("gpus_per_node", 1) or 1)
    return _GPN_CACHE[key]


def resolve_auto_nodes(point: dict, base: str) -> dict:
    if point.get("nodes") != "auto":
        return point
    if point.get("gpus") is None:
        raise UserInputError("nodes = \"auto\" needs gpus (the GPU count) in the same point")
    p = dict(point)
    p["nodes"] = math.ceil(point["gpus"] / _gpus_per_node(point, base))
    return p


def expand_grid(config) -> list[dict]:
    """Every point of a sweep configuration, in grid order, duplicates removed.

    Each point is a dict with ``key`` followed by every input of :data:`INPUT_KEYS`
    (defaults filled in; ``nodes = "auto"`` resolved where the topology can be built).
    """
    return list(iter_points(config))


def iter_points(config):
    """The points of :func:`expand_grid`, one at a time (a grid of 1e9 points is never held:
    ``itertools.product`` is lazy; only the keys seen so far are kept, to drop duplicates)."""
    cfg = config if isinstance(config, dict) and "grids" in config else load_config(config)
    seen = set()
    for grid in cfg["grids"]:
        keys = list(grid)
        for combo in itertools.product(*(grid[k] for k in keys)):
            p = dict(DEFAULTS)
            p.update(cfg["fixed"])
            p.update(zip(keys, combo))
            if p["nodes"] == "auto":
                if p.get("gpus") is None:
                    raise UserInputError("nodes = \"auto\" needs gpus (the GPU count) in every point")
                try:
                    p = resolve_auto_nodes(p, cfg["base"])
                except Exception:   # a bad topology: the point records the error when run
                    pass
            key = point_key(p)
            if key in seen:
                continue
            seen.add(key)
            # the options outside the fixed columns only when set (see config.WHEN_SET_OPTIONS)
            yield {"key": key, **{k: p[k] for k in INPUT_KEYS if k not in WHEN_SET_OPTIONS or p[k] is not None}}


def grid_size(config) -> int:
    """Number of points of a configuration, counted without expanding it (duplicates included)."""
    cfg = config if isinstance(config, dict) and "grids" in config else load_config(config)
    return sum(math.prod(len(v) for v in g.values()) for g in cfg["grids"])

