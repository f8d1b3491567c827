"""Calibration: ``simcollective compare LOG ... --fit KEY --fit-at SIZE[,SIZE...]``.

Finds the value of one numeric ``--topology-opt`` of a hardware preset (``KEY``: e.g.
``nic_bandwidth``, ``net_conn_bandwidth``, ``net_latency``, ``nvlink_bandwidth``) for which
the simulated busbw at the given sizes of a published nccl-tests log matches the published
one, every other ``--topology-opt`` held fixed; then simulates the whole table once with
the value found (rounded to 4 significant digits, so that ``--topology-opt KEY=VALUE`` as
printed reproduces the table exactly).

The ratio fitted is busbw simulated / published at a size, computed as published time /
simulated time (the same ratio without the log's rounding of busbw to 0.01 GB/s, which
prints 0.00 for small sizes; busbw-only logs: the time derived from their busbw).

The search is deterministic (fixed tolerances and iteration caps, no randomness):

* **range** (the bracket): the option's own range as the preset checks it
  (:data:`topologies.hardware.OPTION_RANGES`, e.g. ``nic_bandwidth`` 1e8 to 1e12),
  or ``--fit KEY=LO:HI``. An option the preset does not range-check (only "> 0") needs
  ``KEY=LO:HI``.
* **scale**: latencies (``*_latency``, whose range starts at 0) are searched linearly;
  every other option (rates, ratios) geometrically, in ln(value).
* **one size**: bisection for ratio = 1 on the bracket. Both ends are simulated first; when
  their ratios are on the same side of 1 the range does not bracket the published busbw
  (e.g. a latency-bound size does not respond to a rate): a one-line error after those 2
  simulations. Stops when \\|ln ratio\\| <= :data:`RATIO_TOL` (0.1 % of the ratio) or after
  :data:`MAX_BISECTIONS` halvings; the value returned is the simulated one with the
  smallest \\|ln ratio\\| (when the simulated busbw steps over 1, e.g. where NCCL's pick
  changes, the bracket closes on the step and the fit says so).
* **several sizes**: every size must be bracketed by the range (same check as above), then
  the largest \\|ln ratio\\| over the sizes is minimised by golden-section search on the
  same scale until the bracket is narrower than :data:`GOLDEN_TOL` (0.1 % of the value on
  the geometric scale; 1e-4 of the range on the linear one) or after :data:`MAX_GOLDEN`
  steps. Each size's ratio is monotone in the option, so \\|ln ratio\\| falls then rises and
  so does their maximum (a unimodal function: golden-section finds its minimum).
  SciPy is not a dependency and NumPy has no minimiser, hence this short search.

Only the fit sizes are simulated during the search; ``simulations`` counts those runs (one
size at one value each), not the final table's.
"""

from __future__ import annotations

import math

from ..errors import TopologyError, UserInputError

__all__ = ["fit", "fit_keys", "option_range", "RATIO_TOL", "GOLDEN_TOL", "MAX_BISECTIONS", "MAX_GOLDEN"]

#: bisection stops when |ln(ratio)| is at most this (0.1 % of the ratio)
RATIO_TOL = 1e-3
#: golden-section stops when the bracket is this narrow: in ln(value) (geometric), or as a
#: fraction of the range (linear)
GOLDEN_TOL = 1e-3
GOLDEN_TOL_LINEAR = 1e-4
#: iteration caps
MAX_BISECTIONS = 40
MAX_GOLDEN = 60

_INVPHI = (math.sqrt(5.0) - 1.0) / 2.0


def fit_keys(topology: str) -> list[str]:
    """The preset's real-valued options (those ``--fit`` can calibrate), in signature order."""
    import topologies

    return [k for k, v in topologies.preset_options(topology).items()
            if isinstance(v, float) and not isinstance(v, bool)]


def option_range(key: str) -> tuple[float, float] | None:
    """``(lo, hi)``: the range the hardware presets allow for ``key``
    (:data:`topologies.hardware.OPTION_RANGES`), or None for an option checked only to be a
    positive number (``--fit KEY=LO:HI`` then)."""
    from topologies.hardware import OPTION_RANGES

    if key not in OPTION_RANGES:
        return None
    lo, hi, _, _ = OPTION_RANGES[key]
    return float(lo), float(hi)


def _parse_spec(spec: str, keys: list[str], topology: str):
    key, sep, rng = str(spec).partition("=")
    key = key.strip()
    if key not in keys:
        import topologies

        what = "unknown option" if key not in topologies.preset_options(topology) else "not a real-valued option"
        raise UserInputError(f"--fit {spec!r}: {what} of topology {topology!r}; allowed: {', '.join(keys)}")
    if not sep:
        return key, None
    lo, colon, hi = rng.partition(":")
    try:
        if not colon:
            raise ValueError
        bounds = float(lo), float(hi)
    except ValueError:
        raise UserInputError(f"--fit {spec!r}: the range must be LO:HI, two numbers (e.g. {key}=1e9:1e11)") from None
    if not all(math.isfinite(b) for b in bounds):
        raise UserInputError(f"--fit {spec!r}: the range must be finite numbers")
    if bounds[0] >= bounds[1]:
        raise UserInputError(f"--fit {spec!r}: the range {rng} is empty or inverted; give LO < HI")
    return key, bounds


def _parse_sizes(at: str, table, log: str, min_size, max_size, use_ip: bool) -> list[int]:
    from ..units import format_bytes, parse_size

    items = [x.strip() for x in str(at).split(",")]
    if not all(items):
        raise UserInputError(f"--fit-at {at!r}: give sizes separated by commas (e.g. 1G or 8,1K,64K)")
    sizes = sorted({parse_size(x, "--fit-at") for x in items})
    logged = [r.size for r in table.rows]
    for s in sizes:
        if s not in logged:
            below = [x for x in logged if x < s][-2:]
            above = [x for x in logged if x > s][:2]
            near = ", ".join(f"{x} ({format_bytes(x)})" for x in below + above)
            raise UserInputError(f"--fit-at {s} ({format_bytes(s)}) is not a size of {log}'s table; "
                                 f"its sizes near it: {near}")
        if (min_size is not None and s < min_size) or (max_size is not None and s > max_size):
            raise UserInputError(f"--fit-at {s} ({format_bytes(s)}) is outside --min-size/--max-size")
        row = next(r for r in table.rows if r.size == s)
        t, b = (row.time_ip_us, row.busbw_ip) if use_ip else (row.time_us, row.busbw)
        if not t and not b:
            raise UserInputError(f"--fit-at {format_bytes(s)}: {log} has no published time or busbw at that size")
    return sizes


def fit(log, spec, at, *, topology="dgx-h100", nodes=1, topology_opts=None, topology_file=None,
        section=None, in_place=False, min_size=None, max_size=None, **others) -> dict:
    """Calibrate ``--topology-opt KEY`` (``spec``: ``KEY`` or ``KEY=LO:HI``) on the sizes
    ``at`` (``"SIZE[,SIZE...]"``) of ``log``, then compare the whole table with the value
    found. Returns :func:`simcollective.validation.compare.compare`'s dict with a ``fit`` object
    (``key``, ``value``, ``sizes``, ``ratios`` (busbw sim/published at the sizes, from the
    final table), ``simulations`` (of the search), ``bracket``, ``bracket_from``, ``scale``,
    ``method``, ``converged``, ``note``). Bad input is refused before any simulation."""
    from .compare import compare, read_table

    # (nodes None: compare counts the servers that hold the log's ranks; one checks the options)
    key, opts, (lo, hi), bracket_from = _request(spec, at, topology, nodes or 1, topology_opts, topology_file)
    linear = key.endswith("_latency")
    table = read_table(log, section)
    use_ip = in_place or table.format == "busbw-only"
    sizes = _parse_sizes(at, table, str(log), min_size, max_size, use_ip)
    common = dict(topology=topology, nodes=nodes, section=section, in_place=in_place,
                  min_size=min_size, max_size=max_size, **others)
    ratios = _Ratios(lambda x: compare(log, topology_opts={**opts, key: float(x)}, sizes=set(sizes), **common),
                     sizes)
    scale = _Scale(linear)
    r_lo, r_hi = ratios(lo), ratios(hi)
    _check_bracket(key, sizes, lo, hi, r_lo, r_hi)
    note, tol = None, RATIO_TOL
    if len(sizes) == 1:
        method = "bisection for ratio 1"
        best, converged = _bisect(ratios, scale, lo, hi, r_lo[0], r_hi[0])
        if not converged:
            note = (f"not within {RATIO_TOL:.1%} of 1: the bracket closed on a step of the simulated busbw "
                    f"near {best:.4g}")
    else:
        method = "golden-section minimising the largest |ln ratio|"
        tol = GOLDEN_TOL if not linear else GOLDEN_TOL_LINEAR * (hi - lo)
        best, converged = _golden(ratios, scale, lo, hi, tol)
    text = f"{best:.4g}"
    res = compare(log, topology_opts={**opts, key: text}, **common)
    by = {r["size"]: r for r in res["rows"]}
    res["fit"] = {
        "key": key, "value": float(text), "sizes": sizes,
        "ratios": [by[s]["measured_time_us"] / by[s]["simulated_time_us"] for s in sizes],
        "simulations": ratios.count, "bracket": [lo, hi], "bracket_from": bracket_from,
        "scale": "linear" if linear else "geometric", "method": method, "converged": converged,
        "tolerance": tol, "note": note,
    }
    return res


def _request(spec, at, topology, nodes, topology_opts, topology_file) -> tuple:
    """``(key, fixed options, (lo, hi), where the bracket comes from)``: the request checked,
    before any simulation."""
    import topologies

    from ..simulate import RunConfig, build_graph

    if spec is None:
        raise UserInputError(f"--fit-at {at} needs --fit KEY (the --topology-opt to calibrate)")
    if at is None:
        raise UserInputError(f"--fit {spec} needs --fit-at SIZE[,SIZE...] (the log's sizes to match)")
    if topology_file:
        raise UserInputError("--fit calibrates an option of a preset (--topology), not of --topology-file")
    keys = fit_keys(topology)
    key, bounds = _parse_spec(spec, keys, topology)
    opts = dict(topology_opts or {})
    if key in opts:
        raise UserInputError(f"--fit {key}: {key} is also given as --topology-opt {key}={opts[key]}; "
                             "give one or the other")
    build_graph(RunConfig(topology=topology, nodes=nodes, topology_opts=opts))   # the machine and fixed options are valid
    own = option_range(key)
    if bounds is None:
        if own is None:
            raise UserInputError(f"--fit {key}: topology {topology!r} checks only that {key} is > 0; "
                                 f"give the range as --fit {key}=LO:HI")
        bounds, bracket_from = own, "the preset's range"
    else:
        bracket_from = "--fit"
        for b in bounds:
            try:
                topologies.build(topology, nodes, {**opts, key: b})
            except TopologyError as exc:
                raise UserInputError(f"--fit {spec}: {exc}") from None
    lo, hi = bounds
    if not key.endswith("_latency") and lo <= 0:
        raise UserInputError(f"--fit {key}={lo:g}:{hi:g}: {key} is searched geometrically; LO must be > 0")
    return key, opts, (lo, hi), bracket_from


class _Ratios:
    """busbw sim/published at each fit size for a value of the option, each value simulated
    once; ``count`` is the number of simulations (one size at one value each)."""

    def __init__(self, run, sizes):
        self.run, self.sizes, self.count, self.seen = run, sizes, 0, {}

    def __call__(self, x: float) -> list[float]:
        if x not in self.seen:
            res = self.run(x)
            self.count += len(res["rows"])
            by = {r["size"]: r for r in res["rows"]}
            self.seen[x] = [by[s]["measured_time_us"] / by[s]["simulated_time_us"] for s in self.sizes]
        return self.seen[x]

    def worst(self, x: float) -> float:
        return max(abs(math.log(r)) for r in self(x))

    def best(self) -> float:
        return min(self.seen, key=lambda x: (self.worst(x), x))


class _Scale:
    """The search scale: linear (latencies) or geometric (in ln(value))."""

    def __init__(self, linear: bool):
        self.to_t = (lambda x: x) if linear else math.log
        self.from_t = (lambda t: t) if linear else math.exp


def _check_bracket(key, sizes, lo, hi, r_lo, r_hi) -> None:
    from ..units import format_bytes

    for s, a, b in zip(sizes, r_lo, r_hi):
        la, lb = math.log(a), math.log(b)
        if la * lb > 0:
            side = "above" if la > 0 else "below"
            raise UserInputError(
                f"--fit {key}: busbw sim/published at {format_bytes(s)} is {a:.3f} at {key}={lo:g} and "
                f"{b:.3f} at {key}={hi:g}, both {side} 1: the range {lo:g}:{hi:g} does not bracket the "
                f"published busbw (that size does not respond enough to {key}; fit another size or another range)")


def _bisect(ratios, scale, lo, hi, r_lo, r_hi) -> tuple:
    """One size: bisection for ratio 1; ``(best value, converged)``."""
    a, b = scale.to_t(lo), scale.to_t(hi)
    sign_a = math.log(r_lo) > 0
    if min(abs(math.log(r_lo)), abs(math.log(r_hi))) > RATIO_TOL:
        for _ in range(MAX_BISECTIONS):
            m = (a + b) / 2
            lr = math.log(ratios(scale.from_t(m))[0])
            if abs(lr) <= RATIO_TOL:
                break
            if (lr > 0) == sign_a:
                a = m
            else:
                b = m
    best = ratios.best()
    return best, ratios.worst(best) <= RATIO_TOL


def _golden(ratios, scale, lo, hi, tol) -> tuple:
    """Several sizes: golden-section search minimising the largest |ln ratio|; ``(best, converged)``."""
    worst, from_t = ratios.worst, scale.from_t
    a, b = scale.to_t(lo), scale.to_t(hi)
    c, d = b - _INVPHI * (b - a), a + _INVPHI * (b - a)
    fc, fd = worst(from_t(c)), worst(from_t(d))
    steps = 0
    while b - a > tol and steps < MAX_GOLDEN:
        steps += 1
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _INVPHI * (b - a)
            fc = worst(from_t(c))
        else:
            a, c, fc = c, d, fd
            d = a + _INVPHI * (b - a)
            fd = worst(from_t(d))
    return ratios.best(), b - a <= tol
