"""What disturbs a job: stragglers, link faults and background traffic (the job TOML's
``[[stragglers]]``, ``[[faults]]`` and ``[[background]]`` tables)::

    [[stragglers]]
    rank = 3                  # a world rank
    delay = 0.0005            # its first collective starts this late (seconds), or a draw
    # delay = {distribution = "exponential", mean = 0.0005}   # seeded by the job's seed
    # delay = {distribution = "uniform", low = 0.0, high = 0.001}
    slow = 1.5                # its compute (each step's compute) takes 1.5 x as long

    [[faults]]
    link = "leaf0->spine0"    # a directed link u->v, or u<->v for both directions
    # nic = "node0/nic0"      # or a node (a NIC): every link in and out of it
    at = 0.0                  # seconds
    capacity = 0.5            # the fraction of its capacity left, in [0, 1); 0: it fails

    [[background]]
    name = "noise"
    pattern = "permutation"   # permutation | incast | alltoall
    ranks = [8, 9, 10, 11]    # world ranks that send and receive (default: all)
    bytes = 1048576           # each message
    load = 0.5                # offered load in (0, 1]: of each sender's route capacity
    start = 0.0               # the window (seconds)
    end = 0.001
    # seed = 7                # the permutation (default: the job's seed)
    # root = 0                # incast: the receiving rank (index into ranks)

Parsing is :func:`parse_disturbances` (no machine needed); :func:`check_disturbances`
checks ranks, links and what failures cut off against the machine, before any simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..errors import UserInputError

__all__ = ["StragglerSpec", "FaultSpec", "TrafficSpec", "parse_disturbances", "check_disturbances",
           "straggler_delays", "PATTERNS", "DISTURBANCE_KEYS"]

PATTERNS = ("permutation", "incast", "alltoall")
DISTURBANCE_KEYS = ("stragglers", "faults", "background")
_STRAGGLER_KEYS = ("rank", "delay", "slow")
_FAULT_KEYS = ("link", "nic", "at", "capacity")
_TRAFFIC_KEYS = ("name", "pattern", "ranks", "bytes", "load", "start", "end", "seed", "root")
_DISTRIBUTIONS = {"exponential": ("mean",), "uniform": ("low", "high")}


@dataclass(frozen=True)
class StragglerSpec:
    """A rank that starts late (``delay`` seconds, or a seeded ``distribution``) and/or
    computes ``slow`` times slower."""

    rank: int
    delay: float = 0.0
    distribution: tuple | None = None   # ("exponential", mean) or ("uniform", low, high)
    slow: float = 1.0


@dataclass(frozen=True)
class FaultSpec:
    """A link (``u->v``, ``u<->v``) or a NIC (every link of a node) that keeps
    ``capacity`` of its capacity from ``at`` on (0: fails)."""

    at: float
    capacity: float
    link: str | None = None
    nic: str | None = None

    @property
    def label(self) -> str:
        what = f"link {self.link}" if self.link else f"nic {self.nic}"
        return f"{what} {'fails' if self.capacity == 0 else f'at {self.capacity:g} x capacity'} at {self.at:g} s"


@dataclass(frozen=True)
class TrafficSpec:
    """Seeded synthetic flows over ``ranks`` for the window [start, end)."""

    name: str
    pattern: str
    bytes: int
    load: float
    start: float
    end: float
    ranks: tuple | None = None
    seed: int | None = None
    root: int = 0


def _table(t, keys, where: str) -> dict:
    if not isinstance(t, dict):
        raise UserInputError(f"{where} must be a table")
    for k in t:
        if k not in keys:
            raise UserInputError(f"{where}: unknown key {k!r}; allowed: {', '.join(keys)}")
    return t


def _num(t: dict, key: str, where: str, default=None, lo=0.0, hi=math.inf, lo_open=False, integer=False):
    v = t.get(key, default)
    if v is None:
        raise UserInputError(f"{where}: give {key} = ...")
    ok = not isinstance(v, bool) and isinstance(v, int if integer else (int, float))
    ok = ok and math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        kind = "an integer" if integer else "a number"
        rng = f"{'(' if lo_open else '['}{lo:g}, {hi:g}{']' if hi < math.inf else ')'}"
        raise UserInputError(f"{where}: {key} {v!r} must be {kind} in {rng}")
    return v


def _straggler(t, i: int) -> StragglerSpec:
    where = f"stragglers[{i}]"
    _table(t, _STRAGGLER_KEYS, where)
    rank = _num(t, "rank", where, integer=True)
    slow = float(_num(t, "slow", where, 1.0, lo=1.0))
    delay = t.get("delay", 0.0)
    if isinstance(delay, dict):
        dist = delay.get("distribution")
        if dist not in _DISTRIBUTIONS:
            raise UserInputError(f"{where}: delay distribution {dist!r} is not one of: {', '.join(_DISTRIBUTIONS)}")
        _table(delay, ("distribution", *_DISTRIBUTIONS[dist]), f"{where}.delay")
        args = tuple(float(_num(delay, k, f"{where}.delay")) for k in _DISTRIBUTIONS[dist])
        if dist == "uniform" and args[0] > args[1]:
            raise UserInputError(f"{where}.delay: low {args[0]!r} must be <= high {args[1]!r}")
        return StragglerSpec(rank, distribution=(dist, *args), slow=slow)
    return StragglerSpec(rank, delay=float(_num(t, "delay", where, 0.0)), slow=slow)


def _fault(t, i: int) -> FaultSpec:
    where = f"faults[{i}]"
    _table(t, _FAULT_KEYS, where)
    if ("link" in t) == ("nic" in t):
        raise UserInputError(f"{where}: give link = \"u->v\" (or \"u<->v\") or nic = \"NODE\" (one of them)")
    for k in ("link", "nic"):
        if k in t and not isinstance(t[k], str):
            raise UserInputError(f"{where}: {k} {t[k]!r} must be a string")
    cap = _num(t, "capacity", where, 0.0, hi=1.0)
    if cap == 1:
        raise UserInputError(f"{where}: capacity 1 changes nothing; give the fraction left in [0, 1) (0: fails)")
    return FaultSpec(at=float(_num(t, "at", where, 0.0)), capacity=float(cap), link=t.get("link"), nic=t.get("nic"))


def _traffic(t, i: int) -> TrafficSpec:
    where = f"background[{i}]"
    _table(t, _TRAFFIC_KEYS, where)
    name = t.get("name", f"background{i}")
    pattern = t.get("pattern")
    if pattern not in PATTERNS:
        raise UserInputError(f"{where}: pattern {pattern!r} is not one of: {', '.join(PATTERNS)}")
    ranks = t.get("ranks")
    if ranks is not None and (not isinstance(ranks, list) or len(ranks) < 2
                              or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks)
                              or len(set(ranks)) != len(ranks)):
        raise UserInputError(f"{where}: ranks {ranks!r} must be a list of at least 2 distinct world ranks")
    start = float(_num(t, "start", where, 0.0))
    end = float(_num(t, "end", where, lo=start, lo_open=True))
    seed = t.get("seed")
    if seed is not None:
        seed = _num(t, "seed", where, integer=True)
    return TrafficSpec(name=str(name), pattern=pattern, bytes=_num(t, "bytes", where, lo=1, integer=True),
                       load=float(_num(t, "load", where, lo=0.0, hi=1.0, lo_open=True)), start=start, end=end,
                       ranks=None if ranks is None else tuple(ranks), seed=seed,
                       root=_num(t, "root", where, 0, integer=True))


def parse_disturbances(table: dict) -> dict:
    """``{"stragglers", "faults", "background"}``: tuples of specs from a job table."""
    out = {}
    for key, parse in (("stragglers", _straggler), ("faults", _fault), ("background", _traffic)):
        raw = table.get(key, [])
        if not isinstance(raw, list):
            raise UserInputError(f"{key} must be an array of tables ([[{key}]])")
        out[key] = tuple(parse(t, i) for i, t in enumerate(raw))
    names = [b.name for b in out["background"]]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UserInputError(f"background name {dup!r} appears twice; names must be unique")
    return out


def straggler_delays(stragglers, seed: int) -> dict:
    """World rank -> seconds late: fixed, or drawn (rank ``r``'s draw from seed ``(seed, r)``)."""
    out = {}
    for s in stragglers:
        if s.distribution is None:
            d = s.delay
        else:
            rng = np.random.default_rng((seed, s.rank))
            d = float(rng.exponential(s.distribution[1]) if s.distribution[0] == "exponential"
                      else rng.uniform(s.distribution[1], s.distribution[2]))
        out[s.rank] = out.get(s.rank, 0.0) + d
    return out


def fault_edges_of(graph, fault: FaultSpec) -> tuple:
    """The directed edges of ``fault`` in ``graph`` (checked: they exist)."""
    listing = "list the links with `simcollective job JOB.toml --links`"
    if fault.nic is not None:
        if fault.nic not in graph:
            raise UserInputError(f"fault: nic {fault.nic!r} is not a node of the machine; {listing}")
        return tuple(sorted({*graph.in_edges(fault.nic), *graph.out_edges(fault.nic)}, key=str))
    both = "<->" in fault.link
    parts = fault.link.split("<->" if both else "->")
    if len(parts) != 2:
        raise UserInputError(f"fault: link {fault.link!r} must be written u->v or u<->v; {listing}")
    u, v = (p.strip() for p in parts)
    edges = ((u, v), (v, u)) if both else ((u, v),)
    for e in edges:
        if not graph.has_edge(*e):
            raise UserInputError(f"fault: link {e[0]}->{e[1]} is not in the machine; {listing}")
    return edges


def _cut_off(graph, failed: set, placement: list) -> tuple:
    """(the world ranks cut off, the others) once the ``failed`` edges go: the others are
    the largest group of ranks that still reach each other (ties: the one of rank 0)."""
    g = nx.DiGraph(graph)
    g.remove_edges_from(failed)
    comp = {}
    for i, c in enumerate(nx.strongly_connected_components(g)):
        for n in c:
            comp[n] = i
    counts: dict = {}
    for gpu in placement:
        counts[comp[gpu]] = counts.get(comp[gpu], 0) + 1
    first = {}
    for r, gpu in enumerate(placement):
        first.setdefault(comp[gpu], r)
    main = max(counts, key=lambda c: (counts[c], -first[c]))
    cut = [r for r, gpu in enumerate(placement) if comp[gpu] != main]
    return cut, [r for r, gpu in enumerate(placement) if comp[gpu] == main]


def _ranks(ranks: list) -> str:
    return ", ".join(map(str, ranks)) if len(ranks) <= 8 else f"{', '.join(map(str, ranks[:8]))}, ... ({len(ranks)})"


def check_disturbances(dist: dict, graph, placement: list, routing: str) -> dict:
    """Check ``dist`` against the machine; ``{"edges": [edges per fault]}``."""
    n = len(placement)
    for s in dist["stragglers"]:
        if not 0 <= s.rank < n:
            raise UserInputError(f"straggler rank {s.rank} is out of range: the job has ranks 0..{n - 1}")
    for b in dist["background"]:
        bad = [r for r in (b.ranks or ()) if not 0 <= r < n]
        if bad:
            raise UserInputError(f"background {b.name!r}: rank {bad[0]} is out of range: the job has ranks 0..{n - 1}")
        k = len(b.ranks) if b.ranks else n
        if not 0 <= b.root < k:
            raise UserInputError(f"background {b.name!r}: root {b.root} is out of range 0..{k - 1} (an index into ranks)")
    if dist["faults"] and routing == "study":
        raise UserInputError("faults need routing 'first', 'hash' or 'dest' (the study's declared routes do not re-route)")
    edges = [fault_edges_of(graph, f) for f in dist["faults"]]
    failed = {e for f, es in zip(dist["faults"], edges) if f.capacity == 0 for e in es}
    if failed:
        cut, rest = _cut_off(graph, failed, placement)
        if cut:
            raise UserInputError(f"the failed links cut rank(s) {_ranks(cut)} off from rank(s) {_ranks(rest)} (the "
                                 "graph has no other route between them); fail fewer links or use a machine with more "
                                 "paths")
    return {"edges": edges}
