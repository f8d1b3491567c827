"""Profiles: the calibration conventions of the simulation as data, and their loader.

A profile is a TOML file (the ``*.toml`` files of this package). Built-in names are
``ideal`` (default), ``cm02``, ``smpi`` and ``nccl``; any other value is read as a path, so
a user can copy a built-in file, edit it and pass it by path. Unknown keys are errors.

The loader splits a profile into the objects of the layers that read it: the
``[network]`` table into a :class:`~simcollective.network.model.NetworkModel` (the flow
engine), ``[compute]`` and ``[study_compute]`` into a
:class:`~simcollective.runtime.compute.ComputeModel` (the runtime), ``[nccl]`` into
:class:`~simcollective.nccl.constants.NcclConstants` (NCCL's plans).

>>> p = load_profile("smpi")
>>> p.network.bandwidth_factor(100), p.network.bandwidth_factor(1 << 20)
(0.812084, 0.940694)
>>> load_profile("ideal").network.latency_factor(10**9)
1.0
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from ..errors import UserInputError
from ..nccl.constants import NcclConstants
from ..network.model import NetworkModel
from ..parsing import check_nesting, read_text
from ..runtime.compute import ComputeModel

__all__ = ["Profile", "load_profile", "BUILTIN_PROFILES"]

BUILTIN_PROFILES = ("ideal", "cm02", "smpi", "nccl")
_TOP_KEYS = {"name", "description", "network", "compute", "study_compute", "nccl"}


@dataclass(frozen=True)
class Profile:
    """A parsed profile: its name and description, and the figures of each layer."""

    name: str
    description: str = ""
    network: NetworkModel = NetworkModel()
    compute: ComputeModel = ComputeModel()
    #: NCCL's latencies and protocol figures (the ``[nccl]`` table), or None
    nccl: NcclConstants | None = field(default=None, compare=False, hash=False)
    source: str = field(default="", compare=False)

    def with_study_compute(self) -> "Profile":
        """This profile as ``--study`` uses it: its ``[study_compute]`` rates as the
        compute rates and its ``network.study_bandwidth_factor_mode`` (if set) as the
        bandwidth factor mode (itself if it has neither)."""
        network, compute = self.network.for_study(), self.compute.with_study_compute()
        if network is self.network and compute is self.compute:
            return self
        return replace(self, network=network, compute=compute)

    def with_graph_latencies(self) -> "Profile":
        """This profile as an algorithm that does not spend NCCL's latency model runs it:
        the graph's link and switch latencies as they are (``link_latency_scale`` 1; itself
        if it already is). ``link_latency_scale`` stands for NCCL's per-hop latencies, which
        only NCCL's algorithms (``nccl``, ``nccl-*``) spend."""
        if self.network.link_latency_scale == 1.0:
            return self
        return replace(self, network=replace(self.network, link_latency_scale=1.0))

    def summary(self) -> str:
        return f"{self.name}: {self.description}"


def _parse(data: dict, where: str, name_default: str) -> Profile:
    for key in data:
        if key not in _TOP_KEYS:
            raise UserInputError(f"{where}: unknown key '{key}'; allowed: {', '.join(sorted(_TOP_KEYS))}")
    return Profile(
        name=str(data.get("name", name_default)),
        description=str(data.get("description", "")),
        network=NetworkModel.from_table(data.get("network", {}), where),
        compute=ComputeModel.from_tables(data.get("compute", {}), data.get("study_compute", {}), where),
        nccl=NcclConstants.from_table(data["nccl"], where) if "nccl" in data else None,
        source=where,
    )


def load_profile(spec: str | Path | Profile | None = None) -> Profile:
    """Load a built-in profile by name (``ideal``, ``cm02``, ``smpi``, ``nccl``) or a TOML
    file by path."""
    if isinstance(spec, Profile):
        return spec
    if spec is None:
        spec = "ideal"
    spec = str(spec)
    if spec in BUILTIN_PROFILES:
        text = resources.files(__name__).joinpath(f"{spec}.toml").read_text()
        where = f"profile '{spec}'"
    else:
        path = Path(spec)
        if not path.is_file():
            raise UserInputError(
                f"profile {spec!r} is neither a built-in ({', '.join(BUILTIN_PROFILES)}) nor an existing TOML file"
            )
        text = read_text(path, "profile file", "profile file")
        where = f"profile file {spec}"
        check_nesting(text, where, "toml")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"{where}: not valid TOML ({exc})") from None
    return _parse(data, where, Path(spec).stem)
