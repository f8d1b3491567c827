"""Parsing and formatting of sizes, rates and fractions (SI units: bytes, seconds, bytes/s).

Sizes accept binary suffixes: ``K`` = 2**10, ``M`` = 2**20, ``G`` = 2**30, ``T`` = 2**40
(``KiB``/``MiB``/``GiB`` are accepted too).

>>> parse_size("32M")
33554432
>>> parse_size("1G")
1073741824
>>> parse_fraction("1/128")
0.0078125
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from .errors import UserInputError

__all__ = ["parse_size", "parse_fraction", "parse_float", "format_bytes", "format_time", "format_rate", "MAX_SIZE"]

#: the largest size (elements, bytes, k, chunk size, memory budget) accepted: 2^53, the largest
#: integer a float64 holds exactly (far beyond any memory; symbolic runs may still use it)
MAX_SIZE = 2**53

_SUFFIX = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE]\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text, what: str = "size") -> int:
    """Parse a non-negative integer count with an optional binary suffix (``32M``)."""
    if isinstance(text, bool):
        raise UserInputError(f"{what} {text!r} is not a size; use an integer like 4096 or 32M")
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise UserInputError(
                f"{what} {text!r} is not a size; use a non-negative integer with an optional "
                "binary suffix K, M, G or T (e.g. 32M = 33554432)"
            )
        digits, scale = m.group(1), _SUFFIX[m.group(2).upper()]
        if digits.isdigit():
            value = int(digits) * scale              # exact, however long
        else:
            number = float(digits) * scale
            if not math.isfinite(number) or number > MAX_SIZE:
                raise UserInputError(f"{what} {text!r} is too large; sizes go up to 2^53 = {MAX_SIZE}")
            if number != int(number):
                raise UserInputError(f"{what} {text!r} is not a whole number")
            value = int(number)
    if value < 0:
        raise UserInputError(f"{what} {text!r} is negative; it must be >= 0")
    if value > MAX_SIZE:
        raise UserInputError(f"{what} {text!r} is too large; sizes go up to 2^53 = {MAX_SIZE}")
    return value


def parse_fraction(text, what: str = "fraction") -> float:
    """Parse ``1/128``, ``0.01`` or a number into a float in (0, 1]."""
    try:
        value = float(Fraction(str(text).strip()))
    except (ValueError, ZeroDivisionError, OverflowError):
        raise UserInputError(f"{what} {text!r} is not a number or fraction like 1/128") from None
    if not (0.0 < value <= 1.0):
        raise UserInputError(f"{what} {text!r} must be in (0, 1]")
    return value


def parse_float(text, what: str, minimum: float | None = None) -> float:
    """Parse a float, naming ``what`` in the error."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise UserInputError(f"{what} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UserInputError(f"{what} {text!r} must be a finite number")
    if minimum is not None and value < minimum:
        raise UserInputError(f"{what} {text!r} must be >= {minimum}")
    return value


def format_bytes(n: float) -> str:
    """Human-readable bytes with binary prefixes: ``format_bytes(2**25) == '32.0 MiB'``."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def format_time(t: float) -> str:
    """Seconds with an SI prefix: ``format_time(1.5e-3) == '1.500 ms'``.

    Beyond 1000 s, engineering notation (``format_time(3e300) == '3.000e+300 s'``), never
    hundreds of digits; ``None``/NaN/inf print as such.
    """
    if t is None:
        return "-"
    if not math.isfinite(t):
        return f"{t} s"
    if t == 0:
        return "0 s"
    if abs(t) >= 1e3:
        return f"{t:.3e} s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(t) >= scale:
            return f"{t / scale:.3f} {unit}"
    return f"{t:.3e} s"


def format_rate(r: float) -> str:
    """Bytes per second in GB/s (1e9, as nccl-tests prints)."""
    return f"{r / 1e9:.3f} GB/s"
