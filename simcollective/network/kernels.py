"""Compiled max-min kernel: :func:`.filling.fill` under ``@njit(cache=True)``.

Importing this module imports numba; :func:`.filling.max_min_rates` does so only once a
process has run enough filling interpreted (:attr:`~.tuning.Tuning.jit_after`), and the
array store (:mod:`.bulk_kernels`) on entering it. ``NUMBA_DISABLE_JIT=1`` runs the same
code as Python.
"""

from __future__ import annotations

from numba import njit

from . import filling
from .filling import max_min_rates

__all__ = ["fill", "max_min_rates"]

fill = njit(cache=True)(filling.fill)
