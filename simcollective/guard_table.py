"""The measured per-algorithm costs the run guard estimates from, read from
``guard_table.json`` beside this module (written by ``python -m benchmarks.guard_costs``,
which documents the measurement; its raw runs are in ``benchmarks/guard_costs.json``)."""

from __future__ import annotations

import json
from importlib import resources

__all__ = ["BASE_RSS", "COSTS"]

_DOC = json.loads(resources.files("simcollective").joinpath("guard_table.json").read_text())
#: peak RSS of a tiny run (the interpreter, NumPy, SimPy, NetworkX)
BASE_RSS: int = _DOC["base_rss"]
#: (collective, algorithm) -> fixed_bytes, bytes_per_rank, data_factor, element_factor,
#: wall_per_message (s), events_per_message, wall_per_data_byte (s), topology (measured on)
COSTS: dict = {tuple(key.split("/")): row for key, row in _DOC["costs"].items()}
