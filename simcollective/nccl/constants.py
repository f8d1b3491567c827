"""NCCL's constants: the ``[nccl]`` table of a profile (see ``profiles/nccl.toml``).

NCCL's per-hop and launch latencies (microseconds, as NCCL's tuner gives them), the
efficiency of NVLS (in-switch reduction) and the protocols' wire factors, as the
``nccl-*`` algorithms use them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from ..errors import UserInputError
from ..network.model import finite_number
from .protocols import ALGOS, ARCHS, PROTOCOLS

__all__ = ["NcclConstants", "NCCL_KEYS"]

_HOPS = ("nvlink", "pci", "net")
NCCL_KEYS = frozenset({"launch_us", "launch_us_per_extra_gpu", "nvls_efficiency", "wire_factor", "base_latency_us",
                       "hop_latency_us"})


def _triples(table, where, key, names) -> dict:
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: '{key}' must be a table")
    out = {}
    for name in names:
        v = table.get(name)
        if not (isinstance(v, list) and len(v) == 3):
            raise UserInputError(f"{where}: '{key}.{name}' must be a list of 3 numbers (ll, ll128, simple)")
        out[name] = tuple(finite_number(x, where, f"{key}.{name}") for x in v)
    extra = set(table) - set(names)
    if extra:
        raise UserInputError(f"{where}: unknown key '{key}.{sorted(extra)[0]}'; allowed: {', '.join(names)}")
    return out


def _per_arch(table, where, key) -> dict:
    if not isinstance(table, dict) or set(table) != set(ARCHS):
        raise UserInputError(f"{where}: '{key}' must be a table with {', '.join(ARCHS)}")
    return {a: finite_number(table[a], where, f"{key}.{a}") for a in ARCHS}


_DEFAULT: list = []


@dataclass(frozen=True, eq=False)
class NcclConstants:
    """The ``[nccl]`` figures. ``base`` and ``hop``: per algorithm, (LL, LL128, Simple)
    latencies in us (``hop`` per hop type: nvlink, pci, net); ``wire_factor``: bytes on the
    wire per byte of data, per protocol; ``launch_us_per_extra_gpu``: per GPU generation;
    ``version``: the NCCL release these tables are the tuner of (None: the newest modelled,
    :mod:`simcollective.nccl.versions`)."""

    launch_us: float
    launch_us_per_extra_gpu: dict
    nvls_efficiency: float
    wire_factor: dict
    base: dict
    hop: dict
    #: the NCCL release whose tuner the tables are (``--nccl-version``; None: the newest modelled)
    version: str | None = None

    @classmethod
    def from_table(cls, t, where: str) -> "NcclConstants":
        """The constants of a profile's ``[nccl]`` table (``where`` names the profile in the
        one-line errors); unknown or missing keys are errors."""
        if not isinstance(t, dict):
            raise UserInputError(f"{where}: 'nccl' must be a table")
        for key in t:
            if key not in NCCL_KEYS:
                raise UserInputError(f"{where}: unknown key 'nccl.{key}'; allowed: {', '.join(sorted(NCCL_KEYS))}")
        missing = NCCL_KEYS - set(t)
        if missing:
            raise UserInputError(f"{where}: missing key 'nccl.{sorted(missing)[0]}'")
        wf = t["wire_factor"]
        if not isinstance(wf, dict) or set(wf) != set(PROTOCOLS):
            raise UserInputError(f"{where}: 'nccl.wire_factor' must give simple, ll and ll128")
        hops = t["hop_latency_us"]
        if not isinstance(hops, dict) or set(hops) != set(_HOPS):
            raise UserInputError(f"{where}: 'nccl.hop_latency_us' must have the tables {', '.join(_HOPS)}")
        return cls(
            launch_us=finite_number(t["launch_us"], where, "nccl.launch_us"),
            launch_us_per_extra_gpu=_per_arch(t["launch_us_per_extra_gpu"], where, "nccl.launch_us_per_extra_gpu"),
            nvls_efficiency=finite_number(t["nvls_efficiency"], where, "nccl.nvls_efficiency", 0.0, 1.0,
                                          lo_open=True),
            wire_factor={p: finite_number(wf[p], where, f"nccl.wire_factor.{p}", 1.0, 16.0) for p in PROTOCOLS},
            base=_triples(t["base_latency_us"], where, "nccl.base_latency_us", ALGOS),
            hop={h: _triples(hops[h], where, f"nccl.hop_latency_us.{h}", ALGOS) for h in _HOPS},
        )

    @classmethod
    def default(cls) -> "NcclConstants":
        """The built-in ``nccl`` profile's figures (read from its TOML file, once)."""
        if not _DEFAULT:
            text = resources.files("simcollective.profiles").joinpath("nccl.toml").read_text()
            _DEFAULT.append(cls.from_table(tomllib.loads(text)["nccl"], "nccl"))
        return _DEFAULT[0]

    def latency_table(self) -> dict:
        """``{"base": ..., "hop": ...}``, the latency table NCCL's tuner reads."""
        return {"base": self.base, "hop": self.hop}
