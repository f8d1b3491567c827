"""A published nccl-tests run beside the simulation of the same collective, sizes, dtype and
rank count (the library behind ``simcollective compare LOG --topology T --nodes N``).

Each size of the log is simulated (``nccl`` with the ``nccl`` profile by default, or the
algorithm given); the table shows measured and simulated time and busbw and their ratios
(simulated / measured). nccl-tests run as one process driving N GPUs (``-g N``) pay N
serialised kernel launches per call: the simulated time then includes ``(N - 1) x
launch_us_per_extra_gpu`` of the profile (shown in the header).

The NCCL settings the log states for the compared table (:attr:`Table.settings`) are applied
as NCCL applies them, for allreduce: ``NCCL_ALGO=X`` runs ``nccl-X``; ``NCCL_PROTO`` (a list,
``^`` to exclude) restricts the protocols NCCL's model picks from; ``NCCL_NVLS_ENABLE=0``
removes NVLS and NVLSTree from its choice; ``NCCL_MIN_CTAS``/``NCCL_MAX_CTAS`` (and the
``NCCL_MIN_NCHANNELS``/``NCCL_MAX_NCHANNELS`` spellings) clamp the communicator's channel
count, ring and tree channels and NVLS channels alike (NCCL's model still reads the searched
graph's channels and bandwidth, so its pick does not change), before the per-call reduction
for small messages; ``NCCL_IB_QPS_PER_CONNECTION`` sets the preset's ``net_connections`` (the
QPs of each network connection) on NCCL's IB transport (:func:`.settings.topology_settings`). An
explicit ``--algorithm``/``--protocol``/``--channels`` (``--topology-opt net_connections``)
overrides the matching settings (the header says so); every other ``NCCL_*`` setting is listed
as not modelled, never dropped silently.

``--fit KEY --fit-at SIZE[,SIZE...]`` calibrates one numeric ``--topology-opt`` of the preset to
the log before comparing (:mod:`simcollective.validation.fit`): the table is then computed with the
value found, shown in the header like any ``--topology-opt``, under a ``fit:`` line.

The log's settings are read in :mod:`.settings`, the table printed by :mod:`.report`.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import UserInputError
from ..files import iter_lines
from .nccltests import BUS_FACTOR, DTYPES, parse_lines
from .settings import log_settings, settings_note, settings_pick, topology_settings

__all__ = ["compare", "read_table", "band", "disagrees", "summarize", "log_version", "SUPPORTED", "BEST",
           "PER_RANK", "VERIFY"]

#: nccl-tests binary name (without ``_perf``) -> the simulator's collective
SUPPORTED = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce-scatter",
             "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall"}
#: how each size's result is checked: symbolic data, every rank's result holding each contribution exactly
#: once, without drawing and summing the random inputs of every size (the simulated times do not depend on
#: the values: the same to the bit as with real data)
VERIFY = "symbolic"
#: ``--algorithm`` value: the fastest registered dense algorithm of the collective, per size
BEST = "best"


def read_table(log, section=None):
    """The result table of the nccl-tests file ``log`` (path) that a comparison reads
    (``section``: 1, 2, ... for a file with several); one-line errors for a missing file,
    a file that is not nccl-tests output, or an ambiguous or missing section."""
    path = Path(log)
    if not path.is_file():
        raise UserInputError(f"LOG {log!r} is not a file")
    lines = iter_lines(path, "LOG", "nccl-tests log")        # streamed: a large log is not held whole
    table = _pick_table(parse_lines(lines, str(log)), section, str(log))
    if table.problem:
        raise UserInputError(table.problem)
    ops = sorted(table.redops - {"sum", "none"})
    if ops:
        raise UserInputError(f"{log}: the op column says {', '.join(ops)} (nccl-tests -o {ops[0]}); "
                             "compare simulates sum reductions only; allowed: sum")
    return table


def _pick_table(tables, section, where):
    if section is not None:
        if section > len(tables):
            raise UserInputError(f"--section {section}: {where} has {len(tables)} result table(s)")
        return tables[section - 1]
    if len(tables) > 1:
        mixed = len({t.collective for t in tables}) > 1
        names = "; ".join(f"{i + 1}: {t.title or 'untitled'} ({t.collective + '_perf, ' if mixed else ''}"
                          f"{t.nranks or '?'} ranks, {len(t.rows)} sizes)" for i, t in enumerate(tables))
        raise UserInputError(f"{where} has {len(tables)} result tables; pick one with --section ({names})")
    return tables[0]



def _servers(nodes, n, topology, topology_opts) -> tuple:
    """``(nodes, note)``: ``nodes`` as given, else the servers of ``topology`` that hold ``n``
    ranks (one when the log states no count) and what the report says of that count."""
    from ..simulate import RunConfig, build_graph

    if nodes is not None or not n:
        return nodes or 1, None
    one = build_graph(RunConfig(topology=topology, nodes=1, topology_opts=dict(topology_opts or {})))
    per_node = int(one.graph["gpus_per_node"])
    return max(1, math.ceil(n / per_node)), f"{n} ranks over {per_node} GPUs a server"


def compare(log, topology="dgx-h100", nodes=1, topology_opts=None, algorithm="auto", profile="nccl",
            protocol=None, channels=None, section=None, in_place=False, min_size=None, max_size=None,
            routing="auto", topology_file=None, sizes=None, ranks=None, nccl_version=None) -> dict:
    """Simulate every size of ``log`` (path) and return the comparison (JSON-ready dict).

    ``nodes``: the servers of ``topology`` (None: those that hold the log's ranks, said under
    ``nodes_note``). ``sizes``: simulate only these sizes of the log (a calibration's search, see
    :mod:`simcollective.validation.fit`); None: all of them (within ``min_size``/``max_size``).
    ``ranks``: the rank count to simulate instead of the one read from the log. The rows the
    log's parser dropped are listed under ``dropped_rows`` (absent when none). ``nccl_version``:
    the NCCL release whose tuner the nccl algorithms model (None: the one the log names, else the
    newest modelled; see :func:`log_version`)."""
    from ..profiles import load_profile
    from ..simulate import RunConfig, build_graph

    table = read_table(log, section)
    nodes, nodes_note = _servers(nodes, ranks or table.nranks, topology, topology_opts)
    if table.collective not in SUPPORTED:
        raise UserInputError(f"{log}: {table.collective}_perf is not simulated; compare supports "
                             f"{', '.join(c + '_perf' for c in SUPPORTED)}")
    coll = SUPPORTED[table.collective]
    ls = log_settings(table.settings, str(log), coll, algorithm, protocol, channels)
    algorithm, candidates, forced_note = _candidates(table, coll, algorithm, protocol, channels)
    (version, version_note), prof = log_version(log, table, nccl_version, candidates), load_profile(profile)
    graph, opts = _machine(log, ls, RunConfig(topology=topology, nodes=nodes, topology_opts=dict(topology_opts or {}),
                                              topology_file=topology_file, routing=routing))
    n, ranks_note = _ranks(log, table, graph, topology, nodes, topology_file, ranks)
    dtype_name = table.dtype or "float"
    if dtype_name not in DTYPES:
        raise UserInputError(f"{log}: data type {dtype_name!r} is not simulated; allowed: "
                             f"{', '.join(sorted(set(DTYPES)))}")
    dtype = DTYPES[dtype_name]
    gpp = n if table.gpus_per_process == -1 else table.gpus_per_process
    extra_us = _launch_overhead(graph, prof, gpp, n)
    use_ip = in_place or table.format == "busbw-only"
    options = {k: v for k, v in (("protocol", protocol), ("channels", channels)) if v is not None}
    sim = dict(topology=topology, nodes=nodes, topology_opts=opts, topology_file=topology_file,
               collective=coll, gpus=n, dtype=dtype, profile=profile, routing=routing, nccl_version=version, verify=VERIFY)
    runner = _Runner(graph, sim, candidates, options, ls, protocol, channels)
    rows = []
    for row in table.rows:
        if ((min_size is not None and row.size < min_size) or (max_size is not None and row.size > max_size)
                or (sizes is not None and row.size not in sizes)):
            continue
        rows.append(_row(log, row, table, coll, n, dtype, use_ip, extra_us, runner))
    if not rows:
        raise UserInputError(f"{log}: no size of the log is within --min-size/--max-size")
    return {
        "log": str(log), "collective": table.collective, "format": table.format, "section": table.title or None,
        "ranks": n, "ranks_note": ranks_note, "dtype": dtype, "log_dtype": dtype_name, "measured": "in-place" if use_ip else "out-of-place",
        "topology": topology_file or topology, "nodes": None if topology_file else nodes,
        **({"nodes_note": nodes_note} if nodes_note else {}),
        "topology_opts": dict(topology_opts or {}),
        "algorithm": algorithm if algorithm != BEST else f"best of {', '.join(candidates)}",
        "profile": prof.name, "nccl_version": version_note, "options": options, "gpus_per_process": gpp, "launch_overhead_us": extra_us,
        "forced": forced_note or None, "rows": rows, "summary": summarize(rows), "network": _network(rows),
        "log_settings": {k: ls[k] for k in ("read", "applied", "overridden", "not_modelled", "diagnostic")},
        "settings_note": settings_note(ls, rows),
        **({"dropped_rows": list(table.dropped)} if table.dropped else {}),
    }


def _machine(log, ls, config) -> tuple:
    """``(graph, topology options)`` of the run ``config``, with the options the log's transport
    settings give (:func:`.settings.topology_settings`) added to the user's."""
    import dataclasses

    from ..simulate import build_graph

    graph = build_graph(config)
    extra = topology_settings(ls, graph, None if config.topology_file else config.topology,
                              config.topology_opts, log)
    if not extra:
        return graph, dict(config.topology_opts)
    opts = {**config.topology_opts, **extra}
    return build_graph(dataclasses.replace(config, topology_opts=opts)), opts


def _network(rows) -> str | None:
    """The network line of the largest size's run (its transport, NICs and what NCCL counts)."""
    return next((r["network"] for r in reversed(rows) if r["network"]), None)


def log_version(log, table, explicit, candidates) -> tuple:
    """``(version to simulate or None, what the report says of it)``: ``explicit``
    (``--nccl-version``; a note when the log names another), else the version the table's
    text or the file's header names, else None (the newest modelled). ``(None, None)`` when the
    simulated algorithms are not NCCL's (an explicit version is then an error)."""
    from ..nccl.versions import NEWEST, modelled_range, version_of

    if not all(str(c).startswith("nccl") for c in candidates):
        if explicit is not None:
            raise UserInputError(f"--nccl-version is not used: the simulated algorithms ({', '.join(candidates)}) "
                                 "are not NCCL's; drop it")
        return None, None
    logged = table.nccl_version
    if explicit is not None:
        version_of(explicit)
        said = f"; the log says {logged}" if logged and logged != explicit else ""
        return explicit, f"{explicit} (--nccl-version{said})"
    if logged is not None:
        try:
            version_of(logged)
        except UserInputError:
            raise UserInputError(f"{log}: the log's NCCL version {logged!r} is not modelled (modelled: "
                                 f"{modelled_range()}); give --nccl-version X.Y to simulate a modelled one") from None
        return logged, f"{logged} (from the log)"
    return None, f"{NEWEST} (the newest modelled: the log names no NCCL version)"


def _candidates(table, coll, algorithm, protocol, channels) -> tuple:
    """``(algorithm, candidates, note)``: what ``--algorithm`` (``auto``: NCCL's, or the log's
    NCCL_ALGO, or the best registered one) simulates for the log's collective."""
    from ..algorithms import get_algorithm
    from ..algorithms.registry import algorithms_for

    registered = algorithms_for(coll)
    forced_note = ""
    if algorithm == "auto":
        algorithm = "nccl" if "nccl" in registered else BEST
        if algorithm == BEST:
            forced_note = f"NCCL has no {coll} algorithm here: the fastest registered one per size"
        forced = table.forced_algorithm
        if forced in ("ring", "tree", "nvls") and f"nccl-{forced}" in registered:
            algorithm = f"nccl-{forced}"
            forced_note = f"NCCL_ALGO={forced} in the log"
    if algorithm == BEST:
        candidates = [name for name, a in registered.items() if a.kind == "dense"]
        if protocol is not None or channels is not None:
            raise UserInputError(f"--protocol/--channels apply to NCCL's algorithms; {coll} has none here "
                                 f"(registered: {', '.join(registered)})")
    else:
        algo = get_algorithm(algorithm, coll)
        if algo.kind != "dense":
            raise UserInputError(f"--algorithm {algorithm}: compare simulates dense collectives, not '{algorithm}'")
        candidates = [algorithm]
    return algorithm, candidates, forced_note


def _ranks(log, table, graph, topology, nodes, topology_file, ranks=None) -> tuple:
    """``(ranks, note)``: ``ranks`` (``--ranks``) or the log's rank count (checked against the
    machine), or every GPU."""
    gpus_available = sum(1 for _, d in graph.nodes(data=True) if d.get("kind") == "gpu")
    where = f"{topology}" + ("" if topology_file else f" with --nodes {nodes}")
    if ranks is not None:
        if not 2 <= ranks <= gpus_available:
            raise UserInputError(f"--ranks {ranks}: {where} holds {gpus_available} GPUs; allowed: 2 to {gpus_available}")
        return ranks, f"{ranks} ranks (--ranks; the log: {table.nranks or 'not stated'})"
    n = table.nranks
    if n is not None and n < 2:
        raise UserInputError(f"{log}: the log has {n} rank: a collective of one rank moves nothing to compare; "
                             "--ranks N (2 or more) to simulate N")
    if n is None:
        return gpus_available, f"rank count not in the log: all {gpus_available} GPUs of {where}"
    if n > gpus_available:
        raise UserInputError(f"{log}: the log has {n} ranks; {where} holds {gpus_available} GPUs "
                             f"(use --nodes {math.ceil(n / max(1, gpus_available // max(1, nodes)))})")
    m = table.ranks_by_columns
    if m is not None and m != n:
        what = "busbw/algbw" if table.collective == "all_reduce" else "size/count"
        return n, f"{n} ranks (from the log's '# Rank' lines; its {what} says {m}: --ranks {m} to simulate those)"
    return n, f"{n} ranks (from the log)"


def _launch_overhead(graph, prof, gpp, n) -> float:
    """Microseconds of serialised kernel launches per call of one process driving ``gpp`` GPUs."""
    if not (gpp and gpp > 1 and prof.nccl is not None):
        return 0.0
    from ..nccl.model import arch_of, compute_capability

    gpu = next(v for v, d in graph.nodes(data=True) if d.get("kind") == "gpu")
    arch = arch_of(compute_capability(graph.nodes[gpu].get("model", "GPU")))
    return (min(gpp, n) - 1) * prof.nccl.launch_us_per_extra_gpu[arch]


class _Runner:
    """Simulates one size: every candidate (the fastest kept), or NCCL's pick under the log's
    settings when they restrict it (:func:`.settings.settings_pick`)."""

    def __init__(self, graph, sim: dict, candidates, options, ls, protocol, channels):
        self.graph, self.sim, self.candidates, self.options = graph, sim, candidates, options
        self.ls, self.protocol, self.channels = ls, protocol, channels
        self.custom = bool(ls["algos"] or ls["protos"] or ls["min_channels"] or ls["max_channels"])
        if self.custom:   # the log's settings: NCCL's pick under them, per size
            from ..nccl import model
            from ..placement import resolve_placement

            from ..nccl.versions import tuner_named

            self.machine = model.machine_of(graph, resolve_placement(graph, "auto", sim["gpus"]))
            self.machine.tuner = tuner_named(sim.get("nccl_version"))
            self.graphs = model.graphs_of(self.machine)

    def __call__(self, count: int, nbytes: int):
        from ..simulate import RunConfig, run_allreduce

        runs = [(name, self.options) for name in self.candidates]
        if self.custom:
            name, proto, nch = settings_pick(self.machine, self.graphs, self.candidates[0], nbytes, self.ls,
                                             self.protocol, self.channels)
            runs = [(name, {"protocol": proto, "channels": nch})]
        rep = None
        for name, opts in runs:
            config = RunConfig(**{**self.sim, "topology_opts": dict(self.sim["topology_opts"])}, algorithm=name,
                               elements=count, options=dict(opts))
            try:
                got = run_allreduce(config, graph=self.graph)
            except UserInputError:
                if len(self.candidates) == 1:
                    raise
                continue   # 'best': an algorithm that does not run here (e.g. needs a power of two)
            if rep is None or got["time_s"] < rep["time_s"]:
                rep = got
        return rep


def _row(log, row, table, coll, n, dtype, use_ip, extra_us, runner) -> dict:
    """One size: the log's measurement (the compared column and the other) beside the simulation."""
    import numpy as np

    item = np.dtype(dtype).itemsize
    factor = BUS_FACTOR(table.collective, n)
    per = n * item if coll in PER_RANK else item
    if row.size % per:
        what = f"{n} ranks x the {dtype} element size" if coll in PER_RANK else f"the {dtype} element size"
        raise UserInputError(f"{log}: size {row.size} is not a multiple of {what}")
    count = row.size // per
    m_time = row.time_ip_us if use_ip else row.time_us
    m_bus = row.busbw_ip if use_ip else row.busbw
    o_time = row.time_us if use_ip else row.time_ip_us      # the log's other column
    o_bus = row.busbw if use_ip else row.busbw_ip
    derived = False
    if m_time is None and m_bus:
        m_time = row.size * factor / (m_bus * 1e3)  # us, from busbw (busbw-only logs)
        derived = True
    rep = runner(count, count * item)
    t_us = rep["time_s"] * 1e6 + extra_us
    s_bus = row.size / (t_us * 1e3) * factor
    return {
        "size": row.size, "elements": count,
        "measured_time_us": m_time, "measured_time_derived": derived, "simulated_time_us": t_us,
        "time_ratio": t_us / m_time if m_time else None,
        "measured_busbw": m_bus, "simulated_busbw": s_bus,
        "busbw_ratio": s_bus / m_bus if m_bus else None,
        "algorithm_chosen": rep.fields.get("algorithm_chosen", rep["algorithm"]),
        "protocol": rep.fields.get("protocol"), "channels": rep.fields.get("channels"),
        "verified": rep["verified"], "network": rep.fields.get("nccl_network"),
        "other_time_us": o_time, "other_busbw": o_bus,
        "log_disagrees": disagrees(row.size, m_time, o_time, m_bus, o_bus),
    }


#: collectives whose nccl-tests size is P x count x itemsize
PER_RANK = ("allgather", "reduce-scatter", "alltoall")


def band(size: int) -> float:
    """The accuracy target's tolerance at ``size``: 10 % of busbw from 64 MiB, 25 % below
    (1-64 MiB; also used between 64 KiB and 1 MiB, where the target sets none), 30 % of the
    time up to 64 KiB."""
    return 0.10 if size >= 64 << 20 else 0.30 if size <= 64 << 10 else 0.25


def disagrees(size, time_us, other_time_us, busbw, other_busbw) -> bool:
    """Whether the log's out-of-place and in-place measurements of one size differ by more
    than the size's :func:`band` (in the quantity the target compares: time up to 64 KiB,
    busbw above); False when the log has one column only."""
    a, b = (time_us, other_time_us) if size <= 64 << 10 else (busbw, other_busbw)
    if not a or not b:
        return False
    return abs(a / b - 1) > band(size)


def summarize(rows) -> dict:
    """Worst ratios per band of the accuracy target: busbw >= 64 MiB, busbw 1-64 MiB, time <= 64 KiB;
    over every row, and (``*_self_consistent``) over the rows where the log agrees with itself
    (see :func:`disagrees`)."""
    def worst(sel, key, rows=rows):
        vals = [r[key] for r in rows if sel(r["size"]) and r[key]]
        return max(vals, key=lambda v: abs(v - 1)) if vals else None

    out = {}
    agree = [r for r in rows if not r.get("log_disagrees")]
    for suffix, sel_rows in (("", rows), ("_self_consistent", agree)):
        out["busbw_ratio_worst_ge_64MiB" + suffix] = worst(lambda s: s >= 64 << 20, "busbw_ratio", sel_rows)
        out["busbw_ratio_worst_1MiB_64MiB" + suffix] = worst(lambda s: (1 << 20) <= s < (64 << 20), "busbw_ratio",
                                                             sel_rows)
        out["time_ratio_worst_le_64KiB" + suffix] = worst(lambda s: s <= 64 << 10, "time_ratio", sel_rows)
    out["rows_log_disagrees"] = len(rows) - len(agree)
    return out

