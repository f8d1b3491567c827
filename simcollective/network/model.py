"""The network model: the ``[network]`` figures of a profile, as the flow engine reads them.

How flows share a bottleneck (``sharing``, ``weight_s``), what bounds a flow (route
capacity, TCP window ``tcp_gamma``), the reverse-route ``cross_traffic``, the
piecewise-constant bandwidth and latency factors, the point-to-point conventions of small
messages, and the link efficiencies and latency scale applied to the graph.

>>> m = NetworkModel(bw_thresholds=(0.0, 256.0), bw_factors=(0.8, 0.3))
>>> m.bandwidth_factor(100), m.bandwidth_factor(1 << 20)
(0.8, 0.3)
>>> NetworkModel().latency_factor(10**9)
1.0
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, replace

from topologies.schema import LINK_TYPES

from ..errors import UserInputError

__all__ = ["NetworkModel", "SMALL_MESSAGES", "BANDWIDTH_FACTOR_MODES", "NETWORK_KEYS", "finite_number"]

NETWORK_KEYS = frozenset({
    "sharing", "weight_s", "bound_by_route_capacity", "tcp_gamma", "cross_traffic",
    "bandwidth_factors", "latency_factors", "eager_threshold", "link_efficiency", "link_latency_scale",
    "small_messages", "bandwidth_factor_mode", "study_bandwidth_factor_mode",
})
#: ``network.small_messages``: "eager" (sends <= eager_threshold flow at once and complete
#: at post) or "smpi" (SimGrid SMPI's point-to-point behaviour: sends < eager_threshold
#: complete at post, and every flow starts only when its message is matched)
SMALL_MESSAGES = ("eager", "smpi")
#: ``network.bandwidth_factor_mode``: "progress" (data advances at rate x f_bw while the
#: flow occupies its full rate) or "bound" (SimGrid SMPI's own convention: f_bw x the
#: route's smallest capacity bounds the flow's rate, and data advances at the rate it
#: occupies)
BANDWIDTH_FACTOR_MODES = ("progress", "bound")


def finite_number(v, where, key, lo=0.0, hi=math.inf, lo_open=False) -> float:
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
        if k not in LINK_TYPES:
            raise UserInputError(f"{where}: 'network.link_efficiency.{k}': unknown link type; allowed: "
                                 f"{', '.join(LINK_TYPES)}")
        out.append((k, finite_number(v, where, f"network.link_efficiency.{k}", 0.0, 1.0, lo_open=True)))
    return tuple(sorted(out))


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


def _choice(table, key, default, allowed, where):
    v = table.get(key, default)
    if v is not None and v not in allowed:
        raise UserInputError(f"{where}: network.{key} {v!r} must be one of: {', '.join(allowed)}")
    return v


def _number(table, key, default, where, maximum=math.inf) -> float:
    v = table.get(key, default)
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or not 0.0 <= v <= maximum):
        upper = "" if maximum == math.inf else f" and <= {maximum}"
        raise UserInputError(f"{where}: 'network.{key}' = {v!r} must be a finite number >= 0.0{upper}")
    return float(v)


def _lookup(thresholds, factors, size):
    # the entry with the largest threshold strictly below size; sizes <= first threshold
    # use the first entry
    i = bisect.bisect_left(thresholds, size) - 1
    return factors[max(i, 0)]


@dataclass(frozen=True)
class NetworkModel:
    """The ``[network]`` table of a profile. Factor tables apply entry ``(threshold, f)``
    when size > threshold."""

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
    #: ((link type, fraction), ...): capacities of those links are scaled by the fraction
    link_efficiency: tuple = ()
    #: every link and switch latency of the graph is multiplied by this (0: none); the
    #: simulate floor applies it to NCCL's algorithms only (the others run with 1)
    link_latency_scale: float = 1.0

    @classmethod
    def from_table(cls, net: dict, where: str) -> "NetworkModel":
        """The model of a profile's ``[network]`` table (``where`` names the profile in
        the one-line errors); unknown keys are errors."""
        for key in net:
            if key not in NETWORK_KEYS:
                raise UserInputError(f"{where}: unknown key 'network.{key}'; allowed: {', '.join(sorted(NETWORK_KEYS))}")
        sharing = net.get("sharing", "equal")
        if sharing not in ("equal", "penalty"):
            raise UserInputError(f"{where}: network.sharing {sharing!r} must be 'equal' or 'penalty'")
        small = net.get("small_messages", "eager")
        if small not in SMALL_MESSAGES:
            raise UserInputError(f"{where}: network.small_messages {small!r} must be one of: {', '.join(SMALL_MESSAGES)}")
        mode = _choice(net, "bandwidth_factor_mode", None, BANDWIDTH_FACTOR_MODES, where)
        study_mode = _choice(net, "study_bandwidth_factor_mode", None, BANDWIDTH_FACTOR_MODES, where)
        bound = net.get("bound_by_route_capacity", True)
        if not isinstance(bound, bool):
            raise UserInputError(f"{where}: 'bound_by_route_capacity' must be true or false")
        bw_t, bw_f = _factor_table(net.get("bandwidth_factors", [[0, 1.0]]), "bandwidth_factors", where)
        lat_t, lat_f = _factor_table(net.get("latency_factors", [[0, 1.0]]), "latency_factors", where)
        return cls(
            sharing=sharing,
            weight_s=_number(net, "weight_s", 0.0, where),
            bound_by_route_capacity=bound,
            tcp_gamma=_number(net, "tcp_gamma", 0.0, where),
            cross_traffic=_number(net, "cross_traffic", 0.0, where, 1.0),
            bw_thresholds=bw_t, bw_factors=bw_f, lat_thresholds=lat_t, lat_factors=lat_f,
            eager_threshold=int(_number(net, "eager_threshold", 65536, where)),
            small_messages=small,
            bandwidth_factor_mode=mode or "progress",
            study_bandwidth_factor_mode=study_mode,
            link_efficiency=_link_efficiency(net.get("link_efficiency", {}), where),
            link_latency_scale=finite_number(net.get("link_latency_scale", 1.0), where, "network.link_latency_scale"),
        )

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

    def bandwidth_factor(self, size: float) -> float:
        """f_bw(size): data advances at rate * f_bw."""
        if len(self.bw_factors) == 1:
            return self.bw_factors[0]
        return _lookup(self.bw_thresholds, self.bw_factors, size)

    def latency_factor(self, size: float) -> float:
        """f_lat(size): the route latency is multiplied by f_lat."""
        if len(self.lat_factors) == 1:
            return self.lat_factors[0]
        return _lookup(self.lat_thresholds, self.lat_factors, size)

    def for_study(self) -> "NetworkModel":
        """This model as ``--study`` uses it: its ``study_bandwidth_factor_mode`` (if set)
        as the bandwidth factor mode (itself if it has none)."""
        if self.study_bandwidth_factor_mode is None:
            return self
        return replace(self, bandwidth_factor_mode=self.study_bandwidth_factor_mode)
