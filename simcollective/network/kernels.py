"""Compiled max-min kernels: :func:`.filling.fill`, :func:`.filling.fill_with` (the same
in caller-owned scratch) under ``@njit(cache=True)``, and :func:`.filling.fill_unit` (the
filling of unit weights and coefficients given its entries by flow, inlined into the array
store's step).

Importing this module imports numba; :func:`.filling.max_min_rates` does so only once a
process has run enough filling interpreted (:attr:`~.tuning.Tuning.jit_after`), and the
array store (:mod:`.bulk_kernels`) on entering it. ``NUMBA_DISABLE_JIT=1`` runs the same
code as Python. The helpers :func:`.filling.fill` calls are inlined into it
(``inline="always"``: compiled once, as part of ``fill``), and the compiled ``fill`` and
helpers are the same code objects with those names bound to the compiled helpers (numba
resolves a function's globals when it compiles it).
"""

from __future__ import annotations

import types

from numba import njit

from . import filling
from .filling import max_min_rates

# numba cache: callees 2ca202c720e5
__all__ = ["fill", "fill_with", "fill_unit", "max_min_rates"]

_HELPERS = ("_unit", "_csr", "_settle", "_settle_unit", "_fix", "_fill_unit", "fill_unit", "_pass_unit")
_globals = dict(vars(filling))
_globals.update({name: njit(cache=True, inline="always")(types.FunctionType(getattr(filling, name).__code__, _globals,
                                                                             name)) for name in _HELPERS})
_globals["fill_with"] = fill_with = njit(cache=True)(types.FunctionType(filling.fill_with.__code__, _globals,
                                                                         "fill_with"))
fill = njit(cache=True)(types.FunctionType(filling.fill.__code__, _globals, "fill"))
fill_unit = _globals["fill_unit"]
