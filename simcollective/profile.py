"""Network and compute profiles: the calibration conventions of the flow model as data.

A profile is a TOML file (see ``simcollective/profiles/*.toml``). Built-in names are
``ideal`` (default), ``cm02`` and ``smpi``; any other value is read as a path, so a user can
copy a built-in file, edit it and pass it by path. Unknown keys are errors.

>>> p = load_profile("smpi")
>>> p.bandwidth_factor(100), p.bandwidth_factor(1 << 20)
(0.812084, 0.940694)
>>> load_profile("ideal").latency_factor(10**9)
1.0
"""

from __future__ import annotations

import bisect
import math
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from .errors import UserInputError

__all__ = ["Profile", "load_profile", "BUILTIN_PROFILES"]

BUILTIN_PROFILES = ("ideal", "cm02", "smpi")
#: ``network.small_messages``: "eager" (sends <= eager_threshold flow at once and complete
#: at post) or "smpi" (SimGrid SMPI: sends < eager_threshold complete at post, and every
#: flow starts only when its message is matched; study-quirks.md section 4)
SMALL_MESSAGES = ("eager", "smpi")

_NETWORK_KEYS = {
    "sharing", "weight_s", "bound_by_route_capacity", "tcp_gamma", "cross_traffic",
    "bandwidth_factors", "latency_factors", "eager_threshold", "small_messages",
    "bandwidth_factor_mode", "study_bandwidth_factor_mode",
}
#: ``network.bandwidth_factor_mode``: "progress" (network-model.md item 4: data advances at
#: rate x f_bw while the flow occupies its full rate) or "bound" (SimGrid SMPI's own
#: convention: f_bw x the route's smallest capacity bounds the flow's rate, and data
#: advances at the rate it occupies)
BANDWIDTH_FACTOR_MODES = ("progress", "bound")
_COMPUTE_KEYS = {"dense_bytes_per_second", "sparse_elements_per_second", "split_elements_per_second",
                 "assembly_elements_per_second"}


def _factor_table(entries, key, where):
    if not isinstance(entries, list) or not entries:
        raise UserInputError(f"{where}: '{key}' must be a non-empty list of [threshold, factor] pairs")
    thresholds, factors = [], []
    for e in entries:
        if not (isinstance(e, list) and len(e) == 2 and all(isinstance(v, (int, float)) for v in e)):
            raise UserInputError(f"{where}: '{key}' entry {e!r} is not a [threshold, factor] pair")
        if e[1] <= 0:
            raise UserInputError(f"{where}: '{key}' factor {e[1]!r} must be > 0")
        thresholds.append(float(e[0]))
        factors.append(float(e[1]))
    if thresholds != sorted(thresholds) or len(set(thresholds)) != len(thresholds):
        raise UserInputError(f"{where}: '{key}' thresholds must be strictly increasing")
    return tuple(thresholds), tuple(factors)


@dataclass(frozen=True)
class Profile:
    """A parsed profile. Factor tables apply entry ``(threshold, f)`` when size > threshold."""

    name: str
    description: str = ""
    sharing: str = "equal"
    weight_s: float = 0.0
    bound_by_route_capacity: bool = True
    tcp_gamma: float = 0.0
    cross_traffic: float = 0.0
    bw_thresholds: tuple = (0.0,)
    bw_factors: tuple = (1.0,)
    lat_thresholds: tuple = (0.0,)
    lat_factors: tuple = (1.0,)
    eager_threshold: int = 65536
    small_messages: str = "eager"
    bandwidth_factor_mode: str = "progress"
    study_bandwidth_factor_mode: str | None = None
    dense_bytes_per_second: float = 0.0
    sparse_elements_per_second: float = 0.0
    split_elements_per_second: float = 0.0
    assembly_elements_per_second: float = 0.0
    # the ``[study_compute]`` table: compute rates that replace ``[compute]`` under --study
    # (the computation inside the study's SMPI-model figures), as (key, value) pairs
    study_compute: tuple = ()
    source: str = field(default="", compare=False)

    @staticmethod
    def _lookup(thresholds, factors, size):
        # the entry with the largest threshold strictly below size; sizes <= first threshold
        # use the first entry
        i = bisect.bisect_left(thresholds, size) - 1
        return factors[max(i, 0)]

    def bandwidth_factor(self, size: float) -> float:
        """f_bw(size): data advances at rate * f_bw."""
        if len(self.bw_factors) == 1:
            return self.bw_factors[0]
        return self._lookup(self.bw_thresholds, self.bw_factors, size)

    def latency_factor(self, size: float) -> float:
        """f_lat(size): the route latency is multiplied by f_lat."""
        if len(self.lat_factors) == 1:
            return self.lat_factors[0]
        return self._lookup(self.lat_thresholds, self.lat_factors, size)

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

    def with_study_compute(self) -> "Profile":
        """This profile as ``--study`` uses it: its ``[study_compute]`` rates as the
        compute rates and its ``network.study_bandwidth_factor_mode`` (if set) as the
        bandwidth factor mode (itself if it has neither)."""
        changes = dict(self.study_compute)
        if self.study_bandwidth_factor_mode is not None:
            changes["bandwidth_factor_mode"] = self.study_bandwidth_factor_mode
        return replace(self, **changes) if changes else self

    def summary(self) -> str:
        return f"{self.name}: {self.description}"


def _parse(data: dict, where: str, name_default: str) -> Profile:
    allowed_top = {"name", "description", "network", "compute", "study_compute"}
    for key in data:
        if key not in allowed_top:
            raise UserInputError(f"{where}: unknown key '{key}'; allowed: {', '.join(sorted(allowed_top))}")
    net = data.get("network", {})
    comp = data.get("compute", {})
    for key in net:
        if key not in _NETWORK_KEYS:
            raise UserInputError(f"{where}: unknown key 'network.{key}'; allowed: {', '.join(sorted(_NETWORK_KEYS))}")
    for key in comp:
        if key not in _COMPUTE_KEYS:
            raise UserInputError(f"{where}: unknown key 'compute.{key}'; allowed: {', '.join(sorted(_COMPUTE_KEYS))}")
    study = data.get("study_compute", {})
    if not isinstance(study, dict):
        raise UserInputError(f"{where}: 'study_compute' must be a table")
    for key in study:
        if key not in _COMPUTE_KEYS:
            raise UserInputError(f"{where}: unknown key 'study_compute.{key}'; allowed: {', '.join(sorted(_COMPUTE_KEYS))}")
    sharing = net.get("sharing", "equal")
    if sharing not in ("equal", "penalty"):
        raise UserInputError(f"{where}: network.sharing {sharing!r} must be 'equal' or 'penalty'")

    def num(table, key, default, minimum=0.0):
        v = table.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v < minimum:
            raise UserInputError(f"{where}: '{key}' = {v!r} must be a number >= {minimum}")
        return float(v)

    small = net.get("small_messages", "eager")
    if small not in SMALL_MESSAGES:
        raise UserInputError(f"{where}: network.small_messages {small!r} must be one of: {', '.join(SMALL_MESSAGES)}")
    modes = {}
    for key in ("bandwidth_factor_mode", "study_bandwidth_factor_mode"):
        v = net.get(key)
        if v is not None and v not in BANDWIDTH_FACTOR_MODES:
            raise UserInputError(f"{where}: network.{key} {v!r} must be one of: {', '.join(BANDWIDTH_FACTOR_MODES)}")
        modes[key] = v
    bound = net.get("bound_by_route_capacity", True)
    if not isinstance(bound, bool):
        raise UserInputError(f"{where}: 'bound_by_route_capacity' must be true or false")
    bw_t, bw_f = _factor_table(net.get("bandwidth_factors", [[0, 1.0]]), "bandwidth_factors", where)
    lat_t, lat_f = _factor_table(net.get("latency_factors", [[0, 1.0]]), "latency_factors", where)
    return Profile(
        name=str(data.get("name", name_default)),
        description=str(data.get("description", "")),
        sharing=sharing,
        weight_s=num(net, "weight_s", 0.0),
        bound_by_route_capacity=bound,
        tcp_gamma=num(net, "tcp_gamma", 0.0),
        cross_traffic=num(net, "cross_traffic", 0.0),
        bw_thresholds=bw_t, bw_factors=bw_f, lat_thresholds=lat_t, lat_factors=lat_f,
        eager_threshold=int(num(net, "eager_threshold", 65536)),
        small_messages=small,
        bandwidth_factor_mode=modes["bandwidth_factor_mode"] or "progress",
        study_bandwidth_factor_mode=modes["study_bandwidth_factor_mode"],
        dense_bytes_per_second=num(comp, "dense_bytes_per_second", 0.0),
        sparse_elements_per_second=num(comp, "sparse_elements_per_second", 0.0),
        split_elements_per_second=num(comp, "split_elements_per_second", 0.0),
        assembly_elements_per_second=num(comp, "assembly_elements_per_second", 0.0),
        study_compute=tuple((k, num(study, k, 0.0)) for k in sorted(study)),
        source=where,
    )


def load_profile(spec: str | Path | Profile | None = None) -> Profile:
    """Load a built-in profile by name (``ideal``, ``cm02``, ``smpi``) or a TOML file by path."""
    if isinstance(spec, Profile):
        return spec
    if spec is None:
        spec = "ideal"
    spec = str(spec)
    if spec in BUILTIN_PROFILES:
        text = resources.files("simcollective.profiles").joinpath(f"{spec}.toml").read_text()
        where = f"profile '{spec}'"
    else:
        path = Path(spec)
        if not path.is_file():
            raise UserInputError(
                f"profile {spec!r} is neither a built-in ({', '.join(BUILTIN_PROFILES)}) nor an existing TOML file"
            )
        text = path.read_text()
        where = f"profile file {spec}"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"{where}: not valid TOML ({exc})") from None
    return _parse(data, where, Path(spec).stem)
