"""One allreduce simulation from a configuration: build, run, verify, measure.

This is the layer the CLI, sweeps and notebooks call. :func:`run_allreduce` takes a
:class:`RunConfig` and returns a :class:`Report` whose :meth:`Report.to_json` has stable,
documented keys:

``algorithm, topology, nodes, ranks, elements, dtype, bytes, time_s, algbw, busbw,
verified, verification, phases, messages, wall_s`` and further ``profile, placement,
message_bytes, bytes_by_link_type, top_links, events, flows, kind, density, k,
result_density, dense_parts, options, seed, mode``.

``bytes`` = elements x itemsize (the dense size of the vector, as nccl-tests counts it,
also for sparse algorithms); ``algbw = bytes / time_s``; ``busbw = algbw * 2 (P-1) / P``
(the nccl-tests allreduce bus-bandwidth factor). ``phases`` maps phase name to seconds on
the last rank to finish, so the values add up to ``time_s``.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import data
from .algorithms import get_algorithm, load_all
from .algorithms.registry import CONTEXT, OPTION_FLAGS
from .errors import UserInputError, VerificationError
from .placement import describe_placement, resolve_placement
from .profile import load_profile
from .resources import check_run_memory
from .runtime import run_ranks

__all__ = ["RunConfig", "Report", "run_allreduce", "build_graph", "run_defaults", "JSON_KEYS"]

JSON_KEYS = (
    "algorithm", "topology", "nodes", "ranks", "elements", "dtype", "bytes", "time_s", "algbw", "busbw",
    "verified", "verification", "phases", "messages", "wall_s",
)

DEFAULT_MEMORY_BUDGET = 2**30
#: values of ``verify`` (``--verify``)
VERIFY_MODES = ("auto", "full", "symbolic")


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
    placement: str | list = "auto"                 # the graph's rank_order if any, else linear
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

    def __post_init__(self):
        # text as the CLI takes it: RunConfig(elements="32M", density="1/128", nodes="2")
        from .parsing import coerce_run_fields

        for key, value in coerce_run_fields(vars(self)).items():
            if value is not getattr(self, key):
                setattr(self, key, value)


def run_defaults() -> dict:
    """``{field: default}`` of :class:`RunConfig`: the one source of the defaults of ``run``'s
    options, of sweep inputs (``sweep.DEFAULTS``) and of the Python API."""
    import dataclasses

    return {f.name: getattr(RunConfig(), f.name) for f in dataclasses.fields(RunConfig)}


@dataclass(repr=False)
class Report:
    """The measurements of one run (``result`` holds the raw :class:`RunResult`)."""

    fields: dict
    result: object = None

    def __repr__(self) -> str:     # compact: the fields of a 64-rank run are half a megabyte
        f = self.fields
        return (f"<Report {f.get('algorithm')} on {f.get('topology')}: {f.get('ranks')} ranks, "
                f"{f.get('elements')} x {f.get('dtype')}, time_s={f.get('time_s')!r}>")

    def to_json(self) -> dict:
        """The fields as strict JSON data: a non-finite number (``algbw`` of a run that takes no
        time, e.g. one rank) becomes ``null`` and ``null_reasons`` says why."""
        out = dict(self.fields)
        reasons = {}
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None
                reasons[key] = (f"{value} is not a number in JSON: time_s is {self.fields.get('time_s')} "
                                f"(a run of {self.fields.get('ranks')} rank(s) moves no data)"
                                if key in ("algbw", "busbw") else f"{value} is not a number in JSON")
        if reasons:
            out["null_reasons"] = reasons
        return out

    def __getitem__(self, key):
        return self.fields[key]


def build_graph(config: RunConfig):
    """The hardware graph of a configuration (validated)."""
    import topologies

    if config.topology_file:
        return topologies.load(config.topology_file)
    from .resources import check_machine_size

    if isinstance(config.nodes, int) and config.topology in topologies.PRESETS:
        check_machine_size(config.topology, config.nodes, dict(config.topology_opts or {}))
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


def _check_inputs(config: RunConfig, algo, dtype, options: dict) -> None:
    """Options that would be silently ignored, and values the algorithm cannot use, are errors."""
    chunk = options.get("chunk_size")
    if chunk is not None and not isinstance(chunk, bool) and isinstance(chunk, int) and chunk < dtype.itemsize:
        raise UserInputError(f"--chunk-size {chunk} is smaller than one {dtype} element ({dtype.itemsize} bytes); "
                             f"give at least {dtype.itemsize}")
    if algo.kind == "dense":
        if config.inputs is not None:
            raise UserInputError(f"--inputs applies to sparse algorithms (with --workload npy), not to '{algo.name}'")
        if config.overlap not in (0, 0.0, None):
            raise UserInputError(f"--overlap applies to sparse algorithms (with --workload topk), not to '{algo.name}'")
    else:
        if config.overlap not in (0, 0.0, None) and config.workload != "topk":
            raise UserInputError(f"--overlap {config.overlap} applies to --workload topk, not to --workload "
                                 f"{config.workload}")
        if config.inputs is not None and config.workload != "npy":
            raise UserInputError(f"--inputs applies to --workload npy, not to --workload {config.workload}")


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
    options = _check_options(algo, config.options)
    group_given = "group_size" in options
    if "group_size" in algo.options and "group_size" not in options:
        L = int(graph.graph.get("default_group_size", graph.graph.get("gpus_per_node", 1)) or 1)
        options["group_size"] = L if P % L == 0 else 1 if P < L else L
    if "group_size" in options:
        L = options["group_size"]
        if not isinstance(L, int) or isinstance(L, bool) or L < 1:
            raise UserInputError(f"--group-size {L!r} must be a positive integer")
        if P % L:
            if not group_given:
                raise UserInputError(
                    f"{P} ranks do not split into groups of {L} (the topology's GPUs per server, the default "
                    f"--group-size of '{algo.name}'); give --group-size dividing {P} or a multiple of {L} GPUs")
            raise UserInputError(f"--group-size {L} does not divide the {P} ranks")
    if algo.check is not None:
        algo.check(P, **options)
    if config.verify not in VERIFY_MODES:
        raise UserInputError(f"--verify {config.verify!r} must be one of {', '.join(VERIFY_MODES)}")
    _check_inputs(config, algo, dtype, options)

    ctx = {"n": n, "dtype": dtype}
    workload = None
    if algo.kind == "sparse":
        if config.verify == "symbolic":
            raise UserInputError("--verify symbolic applies to dense algorithms; sparse runs always carry real data")
        k = data.sparse_k(n, config.density, config.k)
        ctx["k"] = k
        check_run_memory(P, n, dtype, "sparse", k, graph.number_of_nodes())
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
            check_run_memory(P, n, dtype, "symbolic", None, graph.number_of_nodes())
            inputs = lambda r: data.symbolic_input(r, n, dtype)  # noqa: E731
        else:
            mode = "full"
            check_run_memory(P, n, dtype, "full", None, graph.number_of_nodes())
            inputs = lambda r: data.dense_input(r, n, dtype, config.seed)  # noqa: E731

    kwargs = {key: ctx[key] for key in CONTEXT if key in algo.params and key in ctx}
    kwargs.update(options)

    # the algorithm itself is each rank's generator (no wrapper frame on every resume)
    main = functools.partial(algo.func, **kwargs)

    result = run_ranks(graph, placement, main, lambda r: (inputs(r),), profile, config.routing,
                       trace=config.trace, progress=progress)

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
        # False: approximate by design (gtopk, --resparsify): verified against its own definition
        "exact": bool(algo.exact and not options.get("resparsify")),
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
        "placement_order": describe_placement(graph, config.placement),
        "options": options,
        "seed": config.seed,
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
