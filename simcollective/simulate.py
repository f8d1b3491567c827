"""One allreduce simulation from a configuration: build, run, verify, measure.

This is the layer the CLI, sweeps and notebooks call. :func:`run_allreduce` takes a
:class:`RunConfig` and returns a :class:`Report` whose :meth:`Report.to_json` has stable,
documented keys:

``algorithm, topology, nodes, ranks, elements, dtype, bytes, time_s, algbw, busbw,
verified, verification, phases, messages, wall_s`` and further ``profile, placement,
message_bytes, bytes_by_link_type, top_links, events, flows, kind, density, k,
result_density, dense_parts, options, seed, routing, timing, study, mode``.

``bytes`` = elements x itemsize (the dense size of the vector, as nccl-tests counts it,
also for sparse algorithms); ``algbw = bytes / time_s``; ``busbw = algbw * 2 (P-1) / P``
(the nccl-tests allreduce bus-bandwidth factor). ``phases`` maps phase name to seconds on
the last rank to finish, so the values add up to ``time_s``.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from . import data
from .algorithms import get_algorithm, load_all
from .algorithms.registry import CONTEXT, OPTION_FLAGS
from .errors import UserInputError, VerificationError
from .placement import resolve_placement
from .profile import load_profile
from .runtime import run_ranks

__all__ = ["RunConfig", "Report", "run_allreduce", "build_graph", "JSON_KEYS", "resolve_study"]

JSON_KEYS = (
    "algorithm", "topology", "nodes", "ranks", "elements", "dtype", "bytes", "time_s", "algbw", "busbw",
    "verified", "verification", "phases", "messages", "wall_s",
)

DEFAULT_MEMORY_BUDGET = 2**30


@dataclass
class RunConfig:
    """Everything that defines one simulated allreduce (sizes in elements/bytes)."""

    topology: str = "abci"
    nodes: int = 1
    topology_opts: dict = field(default_factory=dict)
    topology_file: str | None = None
    algorithm: str = "ring"
    elements: int = 2**20
    gpus: int | None = None
    dtype: str = "float32"
    profile: str = "ideal"
    placement: str | list = "linear"
    routing: str = "first"
    seed: int = 1
    options: dict = field(default_factory=dict)     # user-set algorithm options
    density: float | None = None
    k: int | None = None
    workload: str = "uniform"
    overlap: float = 0.0
    inputs: str | None = None
    verify: str = "auto"                            # auto | full | symbolic
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    trace: bool = False
    timing: str = "simultaneous"                    # simultaneous | study (barrier-exit offsets)
    study: bool = False                             # every behaviour of the study's simulator


def resolve_study(config: RunConfig, algo) -> tuple:
    """``(routing, timing, options)`` of a configuration once ``study`` is applied.

    ``study=True`` (``--study``) is ``--routing study --timing study`` plus
    ``--densify study`` for the algorithms that have a study sizing rule (the others
    already size messages as the study did, or were not in the study); a part set
    explicitly to something else is an error, never silently overridden.
    """
    from .algorithms._sparse_common import STUDY_SIZING
    from .runtime import TIMINGS

    routing, timing = config.routing, config.timing
    options = dict(config.options or {})
    if timing not in TIMINGS:
        raise UserInputError(f"--timing {timing!r} must be one of: {', '.join(TIMINGS)}")
    if not isinstance(config.study, bool):
        raise UserInputError(f"study {config.study!r} must be true or false")
    if not config.study:
        return routing, timing, options
    if routing not in ("first", "study"):
        raise UserInputError(f"--study sets --routing study; --routing {routing} contradicts it")
    if timing != "study" and timing != "simultaneous":
        raise UserInputError(f"--study sets --timing study; --timing {timing} contradicts it")
    densify = options.get("densify")
    if algo.name in STUDY_SIZING:
        if densify not in (None, "study"):
            raise UserInputError(f"--study sets --densify study; --densify {densify} contradicts it")
        options["densify"] = "study"
    return "study", "study", options


@dataclass
class Report:
    """The measurements of one run (``result`` holds the raw :class:`RunResult`)."""

    fields: dict
    result: object = None

    def to_json(self) -> dict:
        return dict(self.fields)

    def __getitem__(self, key):
        return self.fields[key]


def build_graph(config: RunConfig):
    """The hardware graph of a configuration (validated)."""
    import topologies

    if config.topology_file:
        return topologies.load(config.topology_file)
    return topologies.build(config.topology, config.nodes, dict(config.topology_opts or {}))


def _check_options(algo, options: dict) -> dict:
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        if key not in OPTION_FLAGS:
            raise UserInputError(f"unknown algorithm option {key!r}; known: {', '.join(OPTION_FLAGS)}")
        if key not in algo.options:
            allowed = ", ".join(OPTION_FLAGS[o] for o in algo.options) or "none"
            raise UserInputError(
                f"{OPTION_FLAGS[key]} is not used by algorithm '{algo.name}' (its options: {allowed})")
        out[key] = value
    return out


def run_allreduce(config: RunConfig, graph=None, progress=None) -> Report:
    """Simulate one allreduce, verify its result against NumPy, and measure it."""
    t_start = time.perf_counter()
    load_all()
    algo = get_algorithm(config.algorithm)
    if config.elements < 1:
        raise UserInputError(f"--elements {config.elements} must be >= 1")
    dtype = data.check_dtype(config.dtype)
    profile = load_profile(config.profile)
    if graph is None:
        graph = build_graph(config)
    placement = resolve_placement(graph, config.placement, config.gpus)
    P = len(placement)
    n = config.elements
    routing, timing, study_options = resolve_study(config, algo)
    if config.study:  # the computation inside the study's SMPI-model figures, if the profile has it
        profile = profile.with_study_compute()
    options = _check_options(algo, study_options)
    if "group_size" in algo.options and "group_size" not in options:
        L = int(graph.graph.get("default_group_size", graph.graph.get("gpus_per_node", 1)) or 1)
        options["group_size"] = L if P % L == 0 else 1 if P < L else L
    if "group_size" in options:
        L = options["group_size"]
        if not isinstance(L, int) or L < 1:
            raise UserInputError(f"--group-size {L!r} must be a positive integer")
        if P % L:
            raise UserInputError(f"--group-size {L} does not divide the {P} ranks")
    if algo.check is not None:
        algo.check(P, **options)
    if config.verify not in ("auto", "full", "symbolic"):
        raise UserInputError(f"--verify {config.verify!r} must be auto, full or symbolic")

    ctx = {"n": n, "dtype": dtype}
    workload = None
    if algo.kind == "sparse":
        if config.verify == "symbolic":
            raise UserInputError("--verify symbolic applies to dense algorithms; sparse runs always carry real data")
        k = data.sparse_k(n, config.density, config.k)
        ctx["k"] = k
        workload = data.make_workload(config.workload, n, k, P, config.dtype, config.seed,
                                      overlap=config.overlap, inputs_dir=config.inputs)
        mode = "full"
        inputs = workload.input
    else:
        if config.density is not None or config.k is not None:
            raise UserInputError(f"--density/--k apply to sparse algorithms, not to '{algo.name}'")
        k = None
        full_bytes = P * n * dtype.itemsize
        if config.verify == "symbolic" or (config.verify == "auto" and full_bytes > config.memory_budget):
            mode = "symbolic"
            inputs = lambda r: data.symbolic_input(r, n, dtype)  # noqa: E731
        else:
            mode = "full"
            inputs = lambda r: data.dense_input(r, n, dtype, config.seed)  # noqa: E731

    kwargs = {key: ctx[key] for key in CONTEXT if key in algo.params and key in ctx}
    kwargs.update(options)

    # the algorithm itself is each rank's generator (no wrapper frame on every resume)
    main = functools.partial(algo.func, **kwargs)

    result = run_ranks(graph, placement, main, lambda r: (inputs(r),), profile, routing,
                       trace=config.trace, progress=progress, timing=timing)

    # -- verification: every rank, every element ------------------------------------------
    if algo.kind == "sparse":
        ref = algo.reference(workload, P, **{**kwargs, "k": k}) if algo.reference is not None else None
        exact_sum = ref is None
        # a Reference carries the float tolerance; a plain array would mean exact comparison
        ref = workload.exact_reference() if exact_sum else data.as_reference(ref)
        how = None
        seen: set = set()  # parts shared between ranks are verified once
        for r, out in enumerate(result.outputs):
            try:
                how = data.verify_sparse_result(out, ref, seen)
            except VerificationError as exc:
                raise VerificationError(f"rank {r}: {exc}") from None
        verification = how if exact_sum else f"against the NumPy definition of {algo.name} (approximate by design): {how}"
    elif mode == "symbolic":
        seen = set()
        for r, out in enumerate(result.outputs):
            try:
                verification = data.verify_symbolic(out, n, P, seen)
            except VerificationError as exc:
                raise VerificationError(f"rank {r}: {exc}") from None
    else:
        ref = data.DenseReference(n, config.dtype, config.seed, P)
        seen = set()
        for r, out in enumerate(result.outputs):
            try:
                verification = data.verify_dense(out, ref, seen)
            except VerificationError as exc:
                raise VerificationError(f"rank {r}: {exc}") from None

    t = result.makespan
    nbytes = n * dtype.itemsize
    algbw = nbytes / t if t > 0 else float("inf")
    busbw = algbw * 2 * (P - 1) / P if P > 1 else 0.0
    top = sorted(result.links, key=lambda ls: (-ls.bytes / ls.capacity, ls.name))[:5]
    fields_ = {
        "algorithm": algo.name,
        "kind": algo.kind,
        "topology": config.topology_file or config.topology,
        "nodes": None if config.topology_file else config.nodes,
        "ranks": P,
        "elements": n,
        "dtype": str(dtype),
        "bytes": nbytes,
        "time_s": t,
        "algbw": algbw,
        "busbw": busbw,
        "verified": True,
        "verification": verification,
        "mode": mode,
        "phases": dict(sorted(result.phases.items(), key=lambda kv: -kv[1])),
        "messages": result.messages,
        "message_bytes": result.message_bytes,
        "bytes_by_link_type": dict(sorted(result.bytes_by_link_type.items())),
        "top_links": [
            {"link": ls.name, "link_type": ls.link_type, "bytes": ls.bytes, "busy_s": ls.busy_time,
             "utilization": (ls.bytes / ls.capacity) / t if t > 0 else 0.0}
            for ls in top
        ],
        "links": [
            {"link": ls.name, "link_type": ls.link_type, "bytes": ls.bytes, "busy_s": ls.busy_time,
             "utilization": (ls.bytes / ls.capacity) / t if t > 0 else 0.0}
            for ls in sorted(result.links, key=lambda ls: ls.name)
        ],
        "profile": profile.name,
        "placement": config.placement if isinstance(config.placement, str) else "list",
        "options": options,
        "seed": config.seed,
        "routing": routing,
        "timing": timing,
        "study": bool(config.study),
        "events": result.events,
        "flows": result.flows,
        "wall_s": time.perf_counter() - t_start,  # build, inputs, simulation, verification
        "sim_wall_s": result.wall_s,             # the simulation alone
    }
    if algo.kind == "sparse":
        fields_["density"] = k / n
        fields_["k"] = k
        fields_["workload"] = config.workload
        fields_.update(_result_density(result.outputs[0], n))
    return Report(fields_, result)


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
