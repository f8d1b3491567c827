"""One simulated collective from a configuration: resolve, build, inputs, simulate, verify,
measure.

This is the layer the CLI, sweeps and notebooks call. :func:`run` takes a
:class:`RunConfig` and returns a :class:`Report` whose :meth:`Report.to_json` has stable,
documented keys:

``algorithm, topology, nodes, ranks, elements, dtype, bytes, time_s, algbw, busbw,
verified, verification, phases, messages, wall_s`` and further ``collective, root, count,
profile, placement, message_bytes, bytes_by_link_type, top_links, events, flows, kind,
density, k, result_density, dense_parts, options, seed, routing, timing, study, mode``.

``collective`` is one of allreduce (the default), allgather, reduce-scatter, broadcast,
reduce, alltoall (:mod:`simcollective.data.collectives` defines each). ``elements`` =
``count`` = the count passed to the collective as NCCL takes it (per-rank for allgather,
reduce-scatter, alltoall: each rank's send, receive, per-peer count); ``bytes`` = the size
nccl-tests prints (count x itemsize, times P for allgather, reduce-scatter and alltoall;
for sparse algorithms the dense size); ``algbw = bytes / time_s``; ``busbw = algbw x``
nccl-tests' factor (allreduce 2(P-1)/P; allgather, reduce-scatter, alltoall (P-1)/P;
broadcast, reduce 1). ``root`` is -1 for collectives without one (as nccl-tests prints).
``phases`` maps phase name to seconds on the last rank to finish, so the values add up to
``time_s``. :func:`run_allreduce` is :func:`run` (kept for existing callers).
"""

from __future__ import annotations

import functools
import math
from operator import is_
import time
from dataclasses import dataclass, field

import numpy as np

from . import data
from .algorithms import get_algorithm, load_all
from .algorithms.registry import CONTEXT, check_options
from .data.collectives import EMPTY_RESULT, Sources, get_collective, verify_pieces
from .errors import UserInputError, VerificationError
from .placement import describe_placement, resolve_placement
from .profiles import load_profile
from .memory import check_run_memory
from .runtime import run_ranks

__all__ = ["RunConfig", "Report", "run", "run_collective", "run_allreduce", "build_graph", "run_defaults",
           "JSON_KEYS", "count_for_bytes", "resolve_study"]

JSON_KEYS = (
    "algorithm", "topology", "nodes", "ranks", "elements", "dtype", "bytes", "time_s", "algbw", "busbw",
    "verified", "verification", "phases", "messages", "wall_s",
)

DEFAULT_MEMORY_BUDGET = 2**30
#: values of ``verify`` (``--verify``)
VERIFY_MODES = ("auto", "full", "symbolic")


@dataclass
class RunConfig:
    """Everything that defines one simulated collective (sizes in elements/bytes).

    ``elements`` is the count given to the collective (see the module docstring);
    ``bytes``, when set, replaces it: the count is derived from a size in bytes as
    nccl-tests does (:meth:`~simcollective.data.collectives.Collective.count_from_bytes`).
    ``root`` applies to broadcast and reduce only (default 0 there).
    """

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
    collective: str = "allreduce"
    root: int | None = None
    bytes: int | None = None
    timing: str = "simultaneous"                    # simultaneous | study (barrier-exit offsets)
    study: bool = False                             # every behaviour of the study's simulator


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


def resolve_study(config: RunConfig, algo) -> tuple:
    """``(routing, timing, options)`` of a configuration once ``study`` is applied.

    ``study=True`` (``--study``) is ``--routing study --timing study`` plus
    ``--densify study`` for the algorithms that have a study sizing rule (the others
    already size messages as the study did, or were not in the study); a part set
    explicitly to something else is an error, never silently overridden.
    """
    from .algorithms import STUDY_SIZING
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
    densify = options.get("densify")
    if algo.name in STUDY_SIZING and algo.collective == "allreduce":
        if densify not in (None, "study"):
            raise UserInputError(f"--study sets --densify study; --densify {densify} contradicts it")
        options["densify"] = "study"
    return "study", "study", options

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
    from .memory import check_machine_size

    if isinstance(config.nodes, int) and config.topology in topologies.PRESETS:
        check_machine_size(config.topology, config.nodes, dict(config.topology_opts or {}))
    return topologies.build(config.topology, config.nodes, dict(config.topology_opts or {}))


@dataclass
class Plan:
    """A configuration resolved and validated: what will be simulated."""

    config: RunConfig
    coll: object            # data.collectives.Collective
    algo: object            # algorithms.registry.Algorithm
    dtype: np.dtype
    profile: object
    graph: object
    placement: list
    P: int
    count: int
    n: int                  # input elements per rank
    root: int | None
    options: dict
    mode: str               # full | symbolic
    k: int | None = None
    workload: object = None
    kwargs: dict = field(default_factory=dict)
    routing: str = "first"
    timing: str = "simultaneous"


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


def default_group_size(graph, nranks: int) -> int:
    """The topology's group size (GPUs per node) if it divides the ranks; 1 when the ranks
    fit in one group. Otherwise an error that says the default does not fit (and how to
    choose one): the user did not give it."""
    L = int(graph.graph.get("default_group_size", graph.graph.get("gpus_per_node", 1)) or 1)
    if nranks % L == 0:
        return L
    if nranks < L:
        return 1
    raise UserInputError(
        f"the topology's group size {L} (GPUs per node) does not divide the {nranks} ranks; "
        f"give --group-size with a divisor of {nranks}")


def count_for_bytes(collective: str, nbytes: int, nranks: int, dtype) -> int:
    """The count nccl-tests runs for a size ``nbytes`` (see ``Collective.count_from_bytes``)."""
    return get_collective(collective).count_from_bytes(int(nbytes), nranks, data.check_dtype(dtype).itemsize)


# -- the steps --------------------------------------------------------------------------------
def resolve(config: RunConfig, graph=None) -> Plan:
    """Check the configuration and build the machine: every bad input fails here, before
    any long work."""
    load_all()
    coll = get_collective(config.collective)
    algo = get_algorithm(config.algorithm, coll.name)
    dtype = data.check_dtype(config.dtype)
    if config.verify not in VERIFY_MODES:
        raise UserInputError(f"--verify {config.verify!r} must be one of {', '.join(VERIFY_MODES)}")
    profile = load_profile(config.profile)
    if graph is None:
        graph = build_graph(config)
    placement = resolve_placement(graph, config.placement, config.gpus)
    P = len(placement)
    if config.root is not None and not coll.rooted:
        raise UserInputError(f"--root applies to broadcast and reduce, not to {coll.name}")
    root = (0 if config.root is None else config.root) if coll.rooted else None
    if root is not None and (isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < P):
        raise UserInputError(f"--root {root!r} is out of range: the run has ranks 0..{P - 1}")
    if config.bytes is not None:
        if config.bytes < 1:
            raise UserInputError(f"--bytes {config.bytes} must be >= 1")
        count = coll.count_from_bytes(config.bytes, P, dtype.itemsize)
        if count < 1:
            share = " per rank (rounded down to a multiple of 16 bytes, as nccl-tests does)" if coll.per_rank else ""
            need = (P if coll.per_rank else 1) * max(16, dtype.itemsize) if coll.per_rank else dtype.itemsize
            raise UserInputError(
                f"--bytes {config.bytes} gives 0 {dtype.name} elements{share} for {coll.name} over {P} ranks; "
                f"give at least {need} bytes")
    else:
        count = config.elements
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise UserInputError(f"--elements {count} must be >= 1")
        count = int(count)
    n = coll.input_elements(count, P)
    routing, timing, study_options = resolve_study(config, algo)
    if config.study:  # the study's profile settings (compute table, bandwidth factor mode)
        profile = profile.with_study_compute()
    options = check_options(algo, study_options, P)
    if "group_size" in algo.options and "group_size" not in options:
        options["group_size"] = default_group_size(graph, P)
    _check_inputs(config, algo, dtype, options)
    plan = Plan(config, coll, algo, dtype, profile, graph, placement, P, count, n, root, options, "full",
                routing=routing, timing=timing)
    if algo.kind == "sparse":
        if config.verify == "symbolic":
            raise UserInputError("--verify symbolic applies to dense algorithms; sparse runs always carry real data")
        plan.k = data.sparse_k(n, config.density, config.k)
        check_run_memory(P, n, dtype, "sparse", plan.k, graph.number_of_nodes())
    else:
        if config.density is not None or config.k is not None:
            raise UserInputError(f"--density/--k apply to sparse algorithms, not to '{algo.name}'")
        full_bytes = P * n * dtype.itemsize
        if config.verify == "symbolic" or (config.verify == "auto" and full_bytes > config.memory_budget):
            plan.mode = "symbolic"
            check_run_memory(P, n, dtype, "symbolic", None, graph.number_of_nodes())
        else:
            check_run_memory(P, n, dtype, "full", None, graph.number_of_nodes())
    ctx = {"n": n, "dtype": dtype, "k": plan.k, "root": root}
    plan.kwargs = {key: ctx[key] for key in CONTEXT if key in algo.params and ctx.get(key) is not None}
    plan.kwargs.update(options)
    return plan


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
    """Run every rank's generator on the machine; the :class:`RunResult`."""
    # the algorithm itself is each rank's generator (no wrapper frame on every resume)
    main = functools.partial(plan.algo.func, **plan.kwargs)
    return run_ranks(plan.graph, plan.placement, main, lambda r: (inputs(r),), plan.profile,
                     plan.routing, trace=plan.config.trace, progress=progress, timing=plan.timing)


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


def verify(plan: Plan, result) -> str:
    """Check every rank's result against its expected pieces (one walk for dense, size-only
    and sparse results). Returns how results were held; raises VerificationError."""
    mode = "sparse" if plan.algo.kind == "sparse" else "symbolic" if plan.mode == "symbolic" else "dense"
    refs = None if mode == "symbolic" else sources(plan)
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
    if mode == "symbolic" and plan.coll.name == "allreduce":
        how = "symbolic: every element holds each of the P contributions exactly once"
    if plan.coll.name == "reduce":
        how = f"{how} (the root's result; the other ranks have none)"
    if plan.algo.kind == "sparse" and (not plan.algo.exact or getattr(refs, "approximate", False)):
        how = f"against the NumPy definition of {plan.algo.name} (approximate by design): {how}"
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
        "wall_s": time.perf_counter() - t_start,  # build, inputs, simulation, verification
        "sim_wall_s": result.wall_s,             # the simulation alone
        "collective": plan.coll.name,
        "root": -1 if plan.root is None else plan.root,
        "count": plan.count,
    }
    report_fields = getattr(algo.func, "report_fields", None)  # e.g. NCCL's choice (nccl-*)
    if report_fields is not None:
        fields_.update(report_fields(plan.graph, plan.placement, nbytes, plan.options, plan.profile))
    if algo.kind == "sparse":
        fields_["density"] = plan.k / plan.n
        fields_["k"] = plan.k
        fields_["workload"] = config.workload
        # over rank 0's whole result (allgather: the P gathered streams, P x n elements)
        pieces = plan.coll.pieces(0, P, plan.count, plan.root) or []
        fields_.update(_result_density(result.outputs[0], sum(pc.hi - pc.lo for pc in pieces)))
    return Report(fields_, result)


def expected_messages(plan: Plan) -> int | None:
    """The exact number of messages the run will send, from the algorithm's ``messages``
    hook (see :mod:`simcollective.algorithms.registry`); ``None`` without a hook."""
    hook = plan.algo.messages
    if hook is None:
        return None
    nodes = plan.graph.nodes
    ctx = {"n": plan.n, "dtype": plan.dtype, "k": plan.k, "root": plan.root,
           "servers": [nodes[g].get("server") for g in plan.placement],
           "graph": plan.graph, "placement": plan.placement, "profile": plan.profile}
    return int(hook(plan.P, **ctx, **plan.options))


def run(config: RunConfig, graph=None, progress=None) -> Report:
    """Simulate one collective, verify every rank's result against NumPy, and measure it.

    ``progress(now, messages_done, messages_posted)`` is called now and then during the
    simulation (and once at its end); if it has a ``set_total`` method, that is called
    first with :func:`expected_messages` (``None`` when the algorithm declares no count)."""
    t_start = time.perf_counter()
    plan = resolve(config, graph)
    inputs = make_inputs(plan)
    if progress is not None and hasattr(progress, "set_total"):
        progress.set_total(expected_messages(plan))
    result = simulate(plan, inputs, progress)
    verification = verify(plan, result)
    return measure(plan, result, verification, t_start)


run_collective = run
#: the name from before collectives (same function: ``RunConfig.collective`` defaults to allreduce)
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
