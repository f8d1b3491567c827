"""One simulated collective from a configuration: resolve, build, inputs, simulate, verify,
measure.

This is the layer the CLI, sweeps and notebooks call. :func:`run` takes a
:class:`RunConfig` and returns a :class:`Report` whose :meth:`Report.to_json` has stable,
documented keys:

``algorithm, topology, nodes, ranks, elements, dtype, bytes, time_s, algbw, busbw,
verified, verification, phases, messages, wall_s`` and further ``collective, root, count,
profile, placement, message_bytes, bytes_by_link_type, top_links, events, flows, kind,
density, k, result_density, dense_parts, options, seed, routing, timing, study, mode, engine,
engine_note, sim_wall_s, compile_s``;
alltoallv adds ``total_bytes, network_bytes, max_rank_bytes, imbalance, combine`` (and
``moe``, the gate's figures; see :mod:`simcollective.data.alltoallv`).

``collective`` is one of allreduce (the default), allgather, reduce-scatter, broadcast,
reduce, alltoall (:mod:`simcollective.data.collectives` defines each). ``elements`` =
``count`` = the count passed to the collective as NCCL takes it (per-rank for allgather,
reduce-scatter, alltoall: each rank's send, receive, per-peer count); ``bytes`` = the size
nccl-tests prints (count x itemsize, times P for allgather, reduce-scatter and alltoall;
for sparse algorithms the dense size); ``algbw = bytes / time_s``; ``busbw = algbw x``
nccl-tests' factor (allreduce 2(P-1)/P; allgather, reduce-scatter, alltoall (P-1)/P;
broadcast, reduce 1). ``root`` is -1 for collectives without one (as nccl-tests prints).
``phases`` maps phase name to seconds on the last rank to finish, so the values add up to
``time_s``. :func:`run_allreduce` is :func:`run` (the same function under the name callers
use).

The steps: :func:`~simcollective.resolve.resolve` (check and build: a :class:`Plan`),
:func:`make_inputs`, :func:`simulate`, :func:`verify`, :func:`measure`; the configuration
and report types live in :mod:`simcollective.run_config`.
"""

from __future__ import annotations

import functools
import time
from operator import is_

import numpy as np

from . import data
from .data.collectives import Sources
from .data.verify import EMPTY_RESULT, verify_pieces
from .errors import UserInputError, VerificationError
from .guard import check_run_cost, expected_messages, nccl_across_servers
from .memory import available_memory, compiled_bytes
from .network.compile_watch import CompileWatch
from .placement import describe_placement
from .resolve import Plan, count_for_bytes, resolve, resolve_study
from .run_config import (DEFAULT_MEMORY_BUDGET, JSON_KEYS, VERIFY_MODES, Report, RunConfig, build_graph,
                         run_defaults)
from .runtime import run_ranks
from .runtime.collector import collector_paused

__all__ = ["RunConfig", "Report", "run", "run_collective", "run_allreduce", "build_graph", "run_defaults",
           "JSON_KEYS", "count_for_bytes", "resolve_study", "resolve", "Plan", "make_inputs", "simulate",
           "verify", "measure", "expected_messages", "sources", "VERIFY_MODES", "DEFAULT_MEMORY_BUDGET",
           "compiled_refusal", "tries_compiled"]


def make_inputs(plan: Plan):
    """``inputs(rank)``: each rank's input (real, size-only or a sparse stream)."""
    c, n, dtype = plan.config, plan.n, plan.dtype
    if plan.algo.kind == "sparse":
        plan.workload = data.make_workload(c.workload, n, plan.k, plan.P, c.dtype, c.seed,
                                           overlap=c.overlap, inputs_dir=c.inputs)
        return plan.workload.input
    if plan.mode == "symbolic":
        return lambda r: data.symbolic_input(r, n, dtype)
    return lambda r: data.dense_input(r, n, dtype, c.seed)


def simulate(plan: Plan, inputs, progress=None):
    """Run every rank's generator on the machine; the :class:`RunResult`. ``--engine``
    (``plan.config.engine``): ``auto`` takes the compiled path where it applies (else the
    SimPy path, the result saying why), ``compiled`` requires it, ``simpy`` never takes it."""
    # the algorithm itself is each rank's generator (no wrapper frame on every resume)
    main = functools.partial(plan.algo.func, **plan.kwargs)
    engine, why, network = plan.config.engine, None, None
    if engine != "simpy":
        why = compiled_refusal(plan)
        if why is None:
            from .runtime.compiled import NotCompilable, run_compiled   # the compiled path's modules

            try:
                result = run_compiled(plan.graph, plan.placement, main, lambda r: (inputs(r),), plan.profile,
                                      plan.routing)
            except NotCompilable as e:
                why, network = str(e), getattr(e, "network", None)  # (routes already computed)
            else:
                if progress is not None:
                    progress(result.makespan, result.messages, result.messages)
                return result
        if engine == "compiled":
            raise UserInputError(f"--engine compiled does not apply here: {why} (use --engine auto or simpy)")
    result = run_ranks(plan.graph, plan.placement, main, lambda r: (inputs(r),), plan.profile,
                       plan.routing, trace=plan.config.trace, progress=progress, network=network, timing=plan.timing,
                       late=plan.config.stragglers)
    result.engine_note = why
    return result


#: ``--engine auto`` takes the compiled path from this many messages (the algorithm's
#: exact count): loading numba and the cached compiled loop costs about 0.5 s of CPU, which
#: the SimPy path's extra cost a message repays from some 30,000 messages (NCCL's ring: equal
#: at 31,744) to 100,000 (the ring: equal at 224 ranks, 100,128 messages)
AUTO_MIN_MESSAGES = 50_000


def compiled_refusal(plan: Plan) -> str | None:
    """Why the compiled path cannot run ``plan`` (known before running), else None."""
    engine = plan.config.engine
    if engine in ("auto", "compiled"):
        count = expected_messages(plan)
        if engine == "auto" and count is not None and count < AUTO_MIN_MESSAGES:
            return (f"auto: {count:,} messages, under {AUTO_MIN_MESSAGES:,}: the SimPy path is faster than "
                    "loading the compiled loop")
        why = None if count is None else _compiled_memory_refusal(plan, count)
        if why is not None:
            return why
    if plan.algo.kind == "sparse":
        return "a sparse algorithm's messages depend on the data"
    if plan.config.stragglers:
        return "stragglers run on the SimPy path"
    if plan.config.trace:
        return "traces are recorded by the SimPy path"
    if plan.timing != "simultaneous":
        return f"--timing {plan.timing} runs on the SimPy path"
    if plan.profile.network.bandwidth_factor_mode == "bound":
        return f"profile {plan.profile.name}: bandwidth factors that bound rates run on the SimPy path"
    return None


def tries_compiled(plan: Plan) -> bool:
    """Whether the run will try the compiled path (its engine allows it and nothing known
    before running refuses it): the path the run guard estimates."""
    return plan.config.engine != "simpy" and compiled_refusal(plan) is None


def _compiled_memory_refusal(plan: Plan, count: int) -> str | None:
    """Where the compiled path's memory does not fit, why (else None): ``auto`` takes it
    where it fits with room, half the memory available (measured: 64 DGX H100, nccl-ring
    256M float32, 8.4 M messages: 44 s of CPU and 1.8 GB compiled, 92 s and 1.0 GB on
    SimPy); ``compiled`` where it fits at all (refused before recording, not killed mid-way)."""
    across = nccl_across_servers(plan)
    need, have = compiled_bytes(count, across), available_memory()
    nccl = "NCCL's algorithms across servers, " if across else ""
    if plan.config.engine == "compiled":
        if need <= have:
            return None
        return (f"{count:,} messages would hold about {need / 2**30:.1f} GiB on the compiled path, more than the "
                f"{have / 2**30:.1f} GiB available; the SimPy path holds a fraction of that")
    if need <= have // 2:
        return None
    return (f"auto: {nccl}{count:,} messages: the compiled path would hold about {need / 2**30:.1f} GiB, "
            "more than half the memory available, the SimPy path a fraction of that; --engine compiled runs it")


def sources(plan: Plan):
    """``sources(bitset) -> Reference`` of the run's expected results (dense/sparse)."""
    algo, P = plan.algo, plan.P
    if algo.kind == "dense":
        return Sources(plan.n, plan.dtype, plan.config.seed, P)
    wl = plan.workload
    full = (1 << P) - 1
    cache: dict = {}

    def ref(source):
        if source not in cache:
            if source == full and plan.coll.reduces or plan.coll.name == "allreduce":
                r = algo.reference(wl, P, **{**plan.kwargs, "k": plan.k}) if algo.reference is not None else None
                cache[source] = wl.exact_reference() if r is None else data.as_reference(r)
                if r is not None:   # the algorithm's own definition (gtopk, --resparsify), not the sum
                    ref.approximate = True
            else:
                j = source.bit_length() - 1
                s = wl.input(j)
                cache[source] = data.Reference.accumulate(plan.n, plan.dtype, 1, [(
                    None if s.is_dense else s.indices, s.values)])
        return cache[source]

    ref.approximate = False
    return ref


def verify(plan: Plan, result, refs=None) -> str:
    """Check every rank's result against its expected pieces (one walk for dense, size-only
    and sparse results). Returns how results were held; raises VerificationError.
    ``refs``: the run's :func:`sources`, if the caller keeps them (runs of the same inputs)."""
    mode = "sparse" if plan.algo.kind == "sparse" else "symbolic" if plan.mode == "symbolic" else "dense"
    refs = None if mode == "symbolic" else refs if refs is not None else sources(plan)
    # The walk keeps one key per distinct part (a million for an alltoall of 1024 ranks) and
    # makes no reference cycles: the cyclic collector is paused while it runs.
    with collector_paused():
        how = _verify_ranks(plan, result, mode, refs)
    if mode == "symbolic" and plan.coll.name == "allreduce":
        how = "symbolic: every element holds each of the P contributions exactly once"
    if plan.coll.name == "reduce":
        how = f"{how} (the root's result; the other ranks have none)"
    if plan.algo.kind == "sparse" and (not plan.algo.exact or getattr(refs, "approximate", False)):
        how = f"against the NumPy definition of {plan.algo.name} (approximate by design): {how}"
    return how


def _verify_ranks(plan: Plan, result, mode: str, refs) -> str | None:
    """:func:`verify`'s walk of every rank's result; the description of the rule met."""
    seen: set = set()   # parts shared between ranks are verified once
    how = None
    last = None         # (pieces, output) of the last rank walked
    for r, out in enumerate(result.outputs):
        pieces = plan.coll.pieces(r, plan.P, plan.count, plan.root)
        if pieces is None:
            continue    # no result on this rank (a reduce's non-root ranks)
        if last is not None and _same_parts(out, last[1]) and pieces == last[0]:
            continue    # the very parts, in order, of a result already verified against the same pieces
        last = (pieces, out)
        try:
            got = verify_pieces(out, pieces, refs, mode, seen)
        except VerificationError as exc:
            raise VerificationError(f"rank {r}: {exc}") from None
        if how is None or got != EMPTY_RESULT:  # a rank whose parts were all seen adds nothing
            how = got
    return how


def _same_parts(a, b) -> bool:
    """Whether two results are the same payload objects in the same order (payloads are
    immutable and shared by reference: after an allgather every rank holds the same parts,
    and one identity test per part replaces a walk of P parts per rank)."""
    if a is b:
        return True
    return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
            and all(map(is_, a, b)))


def measure(plan: Plan, result, verification: str, t_start: float) -> Report:
    """The report: time, algbw/busbw as nccl-tests defines them, phases, links."""
    config, algo, P = plan.config, plan.algo, plan.P
    t = result.makespan
    nbytes = plan.coll.size_bytes(plan.count, P, plan.dtype.itemsize)
    algbw = nbytes / t if t > 0 else float("inf")
    busbw = algbw * plan.coll.busbw_factor(P) if P > 1 else 0.0
    top = sorted(result.links, key=lambda ls: (-ls.bytes / ls.capacity, ls.name))[:5]
    fields_ = {
        "algorithm": algo.name,
        "kind": algo.kind,
        "topology": config.topology_file or config.topology,
        "nodes": None if config.topology_file else config.nodes,
        "ranks": P,
        "elements": plan.count,
        "dtype": str(plan.dtype),
        "bytes": nbytes,
        "time_s": t,
        "algbw": algbw,
        "busbw": busbw,
        "verified": True,
        "verification": verification,
        # False: approximate by design (gtopk, --resparsify): verified against its own definition
        "exact": bool(algo.exact and not plan.options.get("resparsify")),
        "mode": plan.mode,
        "phases": dict(sorted(result.phases.items(), key=lambda kv: -kv[1])),
        "messages": result.messages,
        "message_bytes": result.message_bytes,
        "bytes_by_link_type": dict(sorted(result.bytes_by_link_type.items())),
        "top_links": [_link_row(ls, t) for ls in top],
        "links": [_link_row(ls, t) for ls in sorted(result.links, key=lambda ls: ls.name)],
        "profile": plan.profile.name,
        "placement": config.placement if isinstance(config.placement, str) else "list",
        "placement_order": describe_placement(plan.graph, config.placement),
        "options": plan.options,
        "seed": config.seed,
        "routing": plan.routing,
        "timing": plan.timing,
        "study": bool(config.study),
        "events": result.events,
        "flows": result.flows,
        "engine": result.engine,
        "engine_note": result.engine_note,
        "wall_s": time.perf_counter() - t_start,  # build, inputs, simulation, verification
        "sim_wall_s": result.wall_s,             # the simulation alone
        "collective": plan.coll.name,
        "root": -1 if plan.root is None else plan.root,
        "count": plan.count,
    }
    if plan.sizes_info is not None:   # alltoallv: its matrix's totals (and its MoE gate)
        fields_.update(plan.sizes_info)
    report_fields = getattr(algo.func, "report_fields", None)  # e.g. NCCL's choice (nccl-*)
    if report_fields is not None:
        fields_.update(report_fields(plan.graph, plan.placement, nbytes, plan.options, plan.profile))
    if config.stragglers:             # --straggler: rank -> seconds it started late
        fields_["stragglers"] = {str(r): d for r, d in sorted(config.stragglers.items())}
    if algo.kind == "sparse":
        fields_.update(_sparse_fields(plan, result))
    return Report(fields_, result)


def _sparse_fields(plan: Plan, result) -> dict:
    """A sparse run's density, k, workload and the density of rank 0's whole result
    (allgather: the P gathered streams, P x n elements)."""
    pieces = plan.coll.pieces(0, plan.P, plan.count, plan.root) or []
    return {"density": plan.k / plan.n, "k": plan.k, "workload": plan.config.workload,
            **_result_density(result.outputs[0], sum(pc.hi - pc.lo for pc in pieces))}


def _link_row(ls, t: float) -> dict:
    """One link's traffic: bytes, busy time and utilization (bytes / capacity / run time)."""
    return {"link": ls.name, "link_type": ls.link_type, "bytes": ls.bytes, "busy_s": ls.busy_time,
            "utilization": (ls.bytes / ls.capacity) / t if t > 0 else 0.0}


def run(config: RunConfig, graph=None, progress=None) -> Report:
    """Simulate one collective, verify every rank's result against NumPy, and measure it.

    ``progress(now, messages_done, messages_posted)`` is called now and then during the
    simulation (and once at its end); if it has a ``set_total`` method, that is called
    first with :func:`expected_messages` (``None`` when the algorithm declares no count).
    A run estimated beyond the wall limit is refused (:mod:`simcollective.guard`). The
    report's ``compile_s`` is the part of its wall time numba spent compiling kernels (their
    first use after installing or upgrading; nothing is printed here, the CLI prints a notice)."""
    t_start = time.perf_counter()
    with CompileWatch() as compiles:
        plan = resolve(config, graph)
        # refused beyond the wall limit unless confirmed (--yes), estimated for the path it will take
        check_run_cost(plan, tries_compiled(plan))
        inputs = make_inputs(plan)
        if progress is not None and hasattr(progress, "set_total"):
            progress.set_total(expected_messages(plan))
        result = simulate(plan, inputs, progress)
        verification = verify(plan, result)
    report = measure(plan, result, verification, t_start)
    report.fields["compile_s"] = compiles.seconds    # numba compiling kernels (a cold cache), part of wall_s
    return report


run_collective = run
#: the same function under its allreduce name (``RunConfig.collective`` defaults to allreduce)
run_allreduce = run


def _result_density(output, n) -> dict:
    parts = list(data.iter_parts(output))
    nnz = 0
    dense = 0
    for p in parts:
        if p.is_dense:
            dense += 1
            nnz += int(np.count_nonzero(p.values))
        else:
            nnz += p.nnz
    return {"result_density": nnz / n, "dense_parts": dense, "result_parts": len(parts)}

