"""Network and compute profiles: the calibration conventions of the flow model as data.

A profile is a TOML file (see ``simcollective/profiles/*.toml``). Built-in names are
``ideal`` (default), ``cm02``, ``smpi`` and ``nccl``; any other value is read as a path, so a user can
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

BUILTIN_PROFILES = ("ideal", "cm02", "smpi", "nccl")

_NETWORK_KEYS = {
    "sharing", "weight_s", "bound_by_route_capacity", "tcp_gamma", "cross_traffic",
    "bandwidth_factors", "latency_factors", "eager_threshold", "link_efficiency", "link_latency_scale",
    "small_messages", "bandwidth_factor_mode", "study_bandwidth_factor_mode",
}
#: ``network.small_messages``: "eager" (sends <= eager_threshold flow at once and complete
#: at post) or "smpi" (SimGrid SMPI: sends < eager_threshold complete at post, and every
#: flow starts only when its message is matched; study-quirks.md section 4)
SMALL_MESSAGES = ("eager", "smpi")
#: ``network.bandwidth_factor_mode``: "progress" (network-model.md item 4: data advances at
#: rate x f_bw while the flow occupies its full rate) or "bound" (SimGrid SMPI's own
#: convention: f_bw x the route's smallest capacity bounds the flow's rate, and data
#: advances at the rate it occupies)
BANDWIDTH_FACTOR_MODES = ("progress", "bound")
_LINK_TYPES = ("nvlink", "pcie", "infiniband", "nvswitch", "ethernet")
_NCCL_ALGOS = ("tree", "ring", "nvls", "nvlstree")
_NCCL_HOPS = ("nvlink", "pci", "net")
_NCCL_PROTOCOLS = ("simple", "ll", "ll128")
_NCCL_KEYS = {"launch_us", "launch_us_per_extra_gpu", "nvls_efficiency", "wire_factor", "base_latency_us",
              "hop_latency_us"}


def _finite(v, where, key, lo=0.0, hi=math.inf, lo_open=False):
    """``v`` as a float if it is a finite number in the range, else a one-line error."""
    ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
          and (v > lo if lo_open else v >= lo) and v <= hi)
    if not ok:
        rng = (f"in {'(' if lo_open else '['}{lo:g}, {hi:g}]" if math.isfinite(hi)
               else f"{'>' if lo_open else '>='} {lo:g}")
        raise UserInputError(f"{where}: '{key}' = {v!r} must be a finite number {rng}")
    return float(v)


def _link_efficiency(table, where) -> tuple:
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: 'network.link_efficiency' must be a table of link type = fraction")
    out = []
    for k, v in table.items():
        if k not in _LINK_TYPES:
            raise UserInputError(f"{where}: 'network.link_efficiency.{k}': unknown link type; allowed: "
                                 f"{', '.join(_LINK_TYPES)}")
        out.append((k, _finite(v, where, f"network.link_efficiency.{k}", 0.0, 1.0, lo_open=True)))
    return tuple(sorted(out))


def _triples(table, where, key, names) -> dict:
    if not isinstance(table, dict):
        raise UserInputError(f"{where}: '{key}' must be a table")
    out = {}
    for name in names:
        v = table.get(name)
        if not (isinstance(v, list) and len(v) == 3):
            raise UserInputError(f"{where}: '{key}.{name}' must be a list of 3 numbers (ll, ll128, simple)")
        out[name] = tuple(_finite(x, where, f"{key}.{name}") for x in v)
    extra = set(table) - set(names)
    if extra:
        raise UserInputError(f"{where}: unknown key '{key}.{sorted(extra)[0]}'; allowed: {', '.join(names)}")
    return out


def _per_arch(table, where, key) -> dict:
    archs = ("volta", "ampere", "hopper", "blackwell")
    if not isinstance(table, dict) or set(table) != set(archs):
        raise UserInputError(f"{where}: '{key}' must be a table with {', '.join(archs)}")
    return {a: _finite(table[a], where, f"{key}.{a}") for a in archs}


def _nccl_table(t, where) -> dict:
    """The ``[nccl]`` table: NCCL's per-hop and launch latencies (us) and the protocols'
    wire factors, as the ``nccl-*`` algorithms use them (see profiles/nccl.toml)."""
    if not isinstance(t, dict):
        raise UserInputError(f"{where}: 'nccl' must be a table")
    for key in t:
        if key not in _NCCL_KEYS:
            raise UserInputError(f"{where}: unknown key 'nccl.{key}'; allowed: {', '.join(sorted(_NCCL_KEYS))}")
    missing = _NCCL_KEYS - set(t)
    if missing:
        raise UserInputError(f"{where}: missing key 'nccl.{sorted(missing)[0]}'")
    wf = t["wire_factor"]
    if not isinstance(wf, dict) or set(wf) != set(_NCCL_PROTOCOLS):
        raise UserInputError(f"{where}: 'nccl.wire_factor' must give simple, ll and ll128")
    hops = t["hop_latency_us"]
    if not isinstance(hops, dict) or set(hops) != set(_NCCL_HOPS):
        raise UserInputError(f"{where}: 'nccl.hop_latency_us' must have the tables {', '.join(_NCCL_HOPS)}")
    return {
        "launch_us": _finite(t["launch_us"], where, "nccl.launch_us"),
        "launch_us_per_extra_gpu": _per_arch(t["launch_us_per_extra_gpu"], where, "nccl.launch_us_per_extra_gpu"),
        "nvls_efficiency": _finite(t["nvls_efficiency"], where, "nccl.nvls_efficiency", 0.0, 1.0, lo_open=True),
        "wire_factor": {p: _finite(wf[p], where, f"nccl.wire_factor.{p}", 1.0, 16.0) for p in _NCCL_PROTOCOLS},
        "base": _triples(t["base_latency_us"], where, "nccl.base_latency_us", _NCCL_ALGOS),
        "hop": {h: _triples(hops[h], where, f"nccl.hop_latency_us.{h}", _NCCL_ALGOS) for h in _NCCL_HOPS},
    }
_COMPUTE_KEYS = {"dense_bytes_per_second", "sparse_elements_per_second", "split_elements_per_second",
                 "assembly_elements_per_second"}


def _factor_table(entries, key, where):
    if not isinstance(entries, list) or not entries:
        raise UserInputError(f"{where}: '{key}' must be a non-empty list of [threshold, factor] pairs")
    thresholds, factors = [], []
    for e in entries:
        if not (isinstance(e, list) and len(e) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in e)):
            raise UserInputError(f"{where}: '{key}' entry {e!r} is not a [threshold, factor] pair")
        if not (math.isfinite(e[0]) and e[0] >= 0):
            raise UserInputError(f"{where}: '{key}' threshold {e[0]!r} must be a finite number >= 0 (bytes)")
        if not (math.isfinite(e[1]) and e[1] > 0):
            raise UserInputError(f"{where}: '{key}' factor {e[1]!r} must be a finite number > 0")
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
    #: ((link type, fraction), ...): capacities of those links are scaled by the fraction
    link_efficiency: tuple = ()
    #: every link and switch latency of the graph is multiplied by this (0: none)
    link_latency_scale: float = 1.0
    #: NCCL's latencies and protocol figures (the ``[nccl]`` table), or None
    nccl: dict | None = field(default=None, compare=False, hash=False)

    def effective_graph(self, graph):
        """``graph`` itself, or a copy with the link efficiencies and latency scale applied."""
        if not self.link_efficiency and self.link_latency_scale == 1.0:
            return graph
        eff = dict(self.link_efficiency)
        g = graph.copy()
        g.graph["line_rate_graph"] = graph  # the graph as built (NCCL's model reads line rates)
        scale = self.link_latency_scale
        for _, _, d in g.edges(data=True):
            f = eff.get(d.get("link_type"))
            if f is not None:
                d["bandwidth"] = d["bandwidth"] * f
            if "latency" in d:
                d["latency"] = d["latency"] * scale
        for _, d in g.nodes(data=True):
            if d.get("kind") != "gpu" and "latency" in d:
                d["latency"] = d["latency"] * scale
        return g

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
    allowed_top = {"name", "description", "network", "compute", "study_compute", "nccl"}
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

    def num(table, key, default, minimum=0.0, maximum=math.inf):
        v = table.get(key, default)
        section = "network" if table is net else "compute"
        if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                or not minimum <= v <= maximum):
            upper = "" if maximum == math.inf else f" and <= {maximum}"
            raise UserInputError(f"{where}: '{section}.{key}' = {v!r} must be a finite number >= {minimum}{upper}")
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
        cross_traffic=num(net, "cross_traffic", 0.0, 0.0, 1.0),
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
        link_efficiency=_link_efficiency(net.get("link_efficiency", {}), where),
        link_latency_scale=_finite(net.get("link_latency_scale", 1.0), where, "network.link_latency_scale"),
        nccl=_nccl_table(data["nccl"], where) if "nccl" in data else None,
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
        from .parsing import read_text

        text = read_text(path, "profile file")
        where = f"profile file {spec}"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"{where}: not valid TOML ({exc})") from None
    return _parse(data, where, Path(spec).stem)
