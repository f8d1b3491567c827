"""The compute model: the ``[compute]`` figures of a profile, the time of the data
operations a rank performs between messages (reductions, sparse merges, splits and the
final assembly). A rate of 0 makes that operation free.

>>> ComputeModel(dense_bytes_per_second=3e9).dense_sum_time(1000)
1e-06
>>> ComputeModel().free
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import UserInputError

__all__ = ["ComputeModel", "COMPUTE_KEYS"]

#: the rates, in the order they are read
_RATES = ("dense_bytes_per_second", "sparse_elements_per_second", "split_elements_per_second",
          "assembly_elements_per_second")
COMPUTE_KEYS = frozenset(_RATES)


def _check_keys(table, section: str, where: str) -> None:
    for key in table:
        if key not in COMPUTE_KEYS:
            raise UserInputError(f"{where}: unknown key '{section}.{key}'; allowed: {', '.join(sorted(COMPUTE_KEYS))}")


def _rate(table, key, where) -> float:
    # (a ``[study_compute]`` value is named ``compute.KEY`` in the message too)
    v = table.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not v >= 0.0:
        raise UserInputError(f"{where}: 'compute.{key}' = {v!r} must be a finite number >= 0.0")
    return float(v)


@dataclass(frozen=True)
class ComputeModel:
    """Compute rates (0: free). ``study_compute``: the ``[study_compute]`` table, rates that
    replace these under ``--study`` (the computation inside the study's SMPI-model
    figures), as (key, value) pairs."""

    dense_bytes_per_second: float = 0.0
    sparse_elements_per_second: float = 0.0
    split_elements_per_second: float = 0.0
    assembly_elements_per_second: float = 0.0
    study_compute: tuple = ()

    @classmethod
    def from_tables(cls, comp: dict, study, where: str) -> "ComputeModel":
        """The model of a profile's ``[compute]`` and ``[study_compute]`` tables (``where``
        names the profile in the one-line errors); unknown keys are errors."""
        _check_keys(comp, "compute", where)
        if not isinstance(study, dict):
            raise UserInputError(f"{where}: 'study_compute' must be a table")
        _check_keys(study, "study_compute", where)
        rates = {key: _rate(comp, key, where) for key in _RATES}
        return cls(**rates, study_compute=tuple((k, _rate(study, k, where)) for k in sorted(study)))

    @property
    def free(self) -> bool:
        """Whether reductions take no simulated time (no dense or sparse rate)."""
        return self.dense_bytes_per_second <= 0 and self.sparse_elements_per_second <= 0

    def dense_sum_time(self, nbytes: float) -> float:
        """Time of an elementwise sum producing ``nbytes`` (reads 2, writes 1)."""
        if self.dense_bytes_per_second <= 0:
            return 0.0
        return 3.0 * nbytes / self.dense_bytes_per_second

    def sparse_merge_time(self, elements: float) -> float:
        """Time of merging sparse streams with ``elements`` entries in total."""
        if self.sparse_elements_per_second <= 0:
            return 0.0
        return elements / self.sparse_elements_per_second

    def split_time(self, elements: float) -> float:
        """Time of cutting a sparse stream of ``elements`` entries into parts."""
        if self.split_elements_per_second <= 0:
            return 0.0
        return elements / self.split_elements_per_second

    def assembly_time(self, elements: float) -> float:
        """Time of assembling a sparse result of ``elements`` entries into the output."""
        if self.assembly_elements_per_second <= 0:
            return 0.0
        return elements / self.assembly_elements_per_second

    def with_study_compute(self) -> "ComputeModel":
        """This model as ``--study`` uses it: its ``[study_compute]`` rates in place of
        its own (itself if it has none)."""
        return replace(self, **dict(self.study_compute)) if self.study_compute else self
