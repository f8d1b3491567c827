"""Helpers of the ``smpi-*`` algorithms: SMPI's (SimGrid 3.32) collectives as SMPI has them.

The rank-count requirement SMPI puts on some of its algorithms (a power of two), as a
registry ``check``, so a run is refused before it starts, as SMPI refuses it.
"""

from __future__ import annotations

from ..errors import UserInputError
from .sparse import is_pof2

__all__ = ["needs_pof2"]


def needs_pof2(name: str, smpi_name: str):
    """A registry ``check``: ``name`` (SMPI's ``smpi_name``) runs on a power-of-two number
    of ranks only, as in SMPI, which refuses other counts."""
    def check(nranks: int, **_) -> None:
        if not is_pof2(nranks):
            raise UserInputError(f"{name} needs a power-of-two number of ranks (SMPI's {smpi_name} refuses others), "
                                 f"not {nranks}: use 2, 4, 8, 16, 32, 64, ...")
    return check
