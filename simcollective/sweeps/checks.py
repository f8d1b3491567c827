"""The whole grid checked before any point runs: every value of every block that would fail
every point it is in (an unknown collective, algorithm, topology, dtype or profile, a
missing topology file, placement file or inputs directory) is one line naming the block,
the key and the value, and the sweep exits 2 instead of recording failed rows.

Each distinct value is checked once, without building a machine or expanding the grid.
"""

from __future__ import annotations

import os

from ..errors import UserInputError
from .config import DEFAULTS, resolve_path

__all__ = ["validate_grid"]


def _values(cfg: dict, grid: dict, key: str) -> list:
    if key in grid:
        return list(dict.fromkeys(grid[key]))
    return [cfg["fixed"].get(key, DEFAULTS[key])]


def _where(cfg: dict, grid: dict, i: int, key: str) -> str:
    if key not in grid:
        return f"[fixed] {key}" if key in cfg["fixed"] else key
    return f"[grid] {key}" if len(cfg["grids"]) <= 1 else f"[[grid]] #{i + 1} {key}"


def _check_names(cfg: dict, grid: dict, i: int) -> None:
    import topologies

    from ..algorithms import load_all
    from ..algorithms.registry import COLLECTIVES, algorithms_for

    load_all()
    collectives = [c or "allreduce" for c in _values(cfg, grid, "collective")]
    for c in collectives:
        if c not in COLLECTIVES:
            raise UserInputError(f"{_where(cfg, grid, i, 'collective')}: {c!r} is not a collective; "
                                 f"known: {', '.join(COLLECTIVES)}")
    known = {name for c in collectives for name in algorithms_for(c)}
    for a in _values(cfg, grid, "algorithm"):
        if a not in known:
            raise UserInputError(f"{_where(cfg, grid, i, 'algorithm')}: {a!r} is not an algorithm of "
                                 f"{' or '.join(collectives)}; known: {', '.join(sorted(known))}")
    if not any(_values(cfg, grid, "topology_file")):
        for t in _values(cfg, grid, "topology"):
            if t not in topologies.PRESETS:
                raise UserInputError(f"{_where(cfg, grid, i, 'topology')}: {t!r} is not a preset; "
                                     f"known: {', '.join(topologies.PRESETS)}")


def _check_values(cfg: dict, grid: dict, i: int) -> None:
    from .. import data
    from ..files import check_size
    from ..placement import PLACEMENTS
    from ..profiles import load_profile

    for d in _values(cfg, grid, "dtype"):
        _named(lambda v=d: data.check_dtype(v), _where(cfg, grid, i, "dtype"))
    for prof in _values(cfg, grid, "profile"):
        _named(lambda v=prof: load_profile(v if v in ("ideal", "cm02", "smpi", "nccl") else
                                           resolve_path(v, cfg["base"])), _where(cfg, grid, i, "profile"))
    for f in _values(cfg, grid, "topology_file"):
        if f:
            check_size(resolve_path(f, cfg["base"]), _where(cfg, grid, i, "topology_file"), "topology file")
    for pl in _values(cfg, grid, "placement"):
        if isinstance(pl, str) and pl not in PLACEMENTS:
            check_size(resolve_path(pl, cfg["base"]), _where(cfg, grid, i, "placement"), "placement file")
    if {"auto", "first"} <= set(_values(cfg, grid, "routing")):
        raise UserInputError(f"{_where(cfg, grid, i, 'routing')}: lists both 'auto' and 'first', which share a "
                             "point key (auto is first but on hardware presets over several scalable units); "
                             "list 'dest' beside 'first' to compare them")
    for d in _values(cfg, grid, "inputs"):
        if d and not os.path.isdir(resolve_path(d, cfg["base"])):
            raise UserInputError(f"{_where(cfg, grid, i, 'inputs')}: {d!r} is not a directory")


def _named(check, where: str) -> None:
    """Run ``check``; its one-line error prefixed by where the value comes from."""
    try:
        check()
    except UserInputError as exc:
        raise UserInputError(f"{where}: {exc}") from None


def validate_grid(cfg: dict) -> None:
    """Refuse, before any point runs, a value that fails every point it is in."""
    for i, grid in enumerate(cfg["grids"]):
        _check_names(cfg, grid, i)
        _check_values(cfg, grid, i)
