"""A configuration resolved and validated (:func:`resolve`): the collective, algorithm,
machine, placement, counts and options a run will simulate. Every bad input fails here,
before any long work."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import data
from .algorithms import get_algorithm
from .algorithms.registry import CONTEXT, check_options
from .data.collectives import get_collective
from .errors import UserInputError
from .memory import check_run_memory
from .network.study_routing import STUDY_TOPOLOGIES
from .placement import resolve_placement
from .profiles import load_profile
from .run_config import VERIFY_MODES, RunConfig, build_graph, routing_of

__all__ = ["Plan", "resolve", "resolve_study", "default_group_size", "count_for_bytes", "spends_nccl_latency"]


def resolve_study(config: RunConfig, algo) -> tuple:
    """``(routing, timing, options)`` of a configuration once ``study`` is applied.

    ``study=True`` (``--study``) is ``--routing study --timing study`` plus
    ``--densify study`` for the algorithms that have a study sizing rule (the others
    already size messages as the study did, or were not in the study); a part set
    explicitly to something else is an error, never silently overridden.
    """
    from .runtime import TIMINGS

    routing, timing = config.routing, config.timing
    options = dict(config.options or {})
    if timing not in TIMINGS:
        raise UserInputError(f"--timing {timing!r} must be one of: {', '.join(TIMINGS)}")
    if not isinstance(config.study, bool):
        raise UserInputError(f"study {config.study!r} must be true or false")
    if not config.study:
        return routing, timing, options
    from .algorithms import STUDY_SIZING

    if routing not in ("auto", "first", "study"):
        raise UserInputError(f"--study sets --routing study; --routing {routing} contradicts it")
    densify = options.get("densify")
    if algo.name in STUDY_SIZING and algo.collective == "allreduce":
        if densify not in (None, "study"):
            raise UserInputError(f"--study sets --densify study; --densify {densify} contradicts it")
        options["densify"] = "study"
    return "study", "study", options



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
    routing: str = "first"  # the policy itself (``auto`` resolved: run_config.routing_of)
    timing: str = "simultaneous"
    sizes_info: dict | None = None   # alltoallv: totals of its sizes matrix (and its MoE gate)


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


def nccl_version_profile(profile, version, algo):
    """``profile`` with NCCL release ``version``'s tuner (:func:`simcollective.nccl.versions.with_version`);
    a one-line error for a version outside the modelled ones, or one given to an algorithm
    that is not NCCL's."""
    if version is None:
        return profile
    from .nccl.versions import version_of, with_version

    version_of(version)
    if not spends_nccl_latency(algo):
        raise UserInputError(f"--nccl-version is not used by the algorithm '{algo.name}': it applies to nccl and "
                             "the nccl-* algorithms; drop it")
    return with_version(profile, version)


def spends_nccl_latency(algo) -> bool:
    """Whether ``algo`` is one of NCCL's algorithms (``nccl``, ``nccl-*``), which spend NCCL's
    latency of the call (the profile's ``[nccl]`` figures) in place of the graph's link
    latencies; every other algorithm pays the route latencies of the graph, whatever the
    profile's ``link_latency_scale`` (see :meth:`~simcollective.profiles.Profile.with_graph_latencies`)."""
    if algo.collective == "alltoallv":   # NCCL's tuning model has no p2p latency: the graph's
        return False
    return algo.name == "nccl" or algo.name.startswith("nccl-")


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
def resolve(config: RunConfig, graph=None, *, check_memory: bool = True) -> Plan:
    """Check the configuration and build the machine: every bad input fails here, before
    any long work. ``check_memory=False`` skips the check that the run's data fits in the
    memory available (a plan resolved to count its messages, not to run it)."""
    coll = get_collective(config.collective)
    algo = get_algorithm(config.algorithm, coll.name)
    dtype = data.check_dtype(config.dtype)
    if config.verify not in VERIFY_MODES:
        raise UserInputError(f"--verify {config.verify!r} must be one of {', '.join(VERIFY_MODES)}")
    profile = nccl_version_profile(load_profile(config.profile), config.nccl_version, algo)
    if graph is None:
        graph = build_graph(config)
    placement = resolve_placement(graph, config.placement, config.gpus)
    P = len(placement)
    if config.root is not None and not coll.rooted:
        raise UserInputError(f"--root applies to broadcast and reduce, not to {coll.name}")
    root = (0 if config.root is None else config.root) if coll.rooted else None
    if root is not None and (isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < P):
        raise UserInputError(f"--root {root!r} is out of range: the run has ranks 0..{P - 1}")
    late = next((r for r in sorted(config.stragglers) if not 0 <= r < P), None)
    if late is not None:
        raise UserInputError(f"--straggler rank {late} is out of range: the run has ranks 0..{P - 1}")
    coll, count, sizes_info = _alltoallv(config, coll, P, dtype)
    n = coll.input_elements(count, P)
    routing, timing, study_options = resolve_study(config, algo)
    if config.study and graph.graph.get("name") not in STUDY_TOPOLOGIES:
        raise UserInputError(f"--study reproduces the study's runs, on {', '.join(STUDY_TOPOLOGIES)} only; topology "
                             f"{graph.graph.get('name')!r} is not one of them")
    routing = routing_of(routing, graph)
    if not spends_nccl_latency(algo):   # the nccl profile's zero link latency is NCCL's own
        profile = profile.with_graph_latencies()
    if config.study:  # the study's profile settings (compute table, bandwidth factor mode)
        profile = profile.with_study_compute()
    options = check_options(algo, study_options, P)
    if "group_size" in algo.options and "group_size" not in options:
        options["group_size"] = default_group_size(graph, P)
    _check_inputs(config, algo, dtype, options)
    plan = Plan(config, coll, algo, dtype, profile, graph, placement, P, count, n, root, options, "full",
                routing=routing, timing=timing, sizes_info=sizes_info)
    key = (algo.collective, algo.name)     # the measured memory costs of this algorithm
    if algo.kind == "sparse":
        if config.verify == "symbolic":
            raise UserInputError("--verify symbolic applies to dense algorithms; sparse runs always carry real data")
        plan.k = data.sparse_k(n, config.density, config.k)
    else:
        if config.density is not None or config.k is not None:
            raise UserInputError(f"--density/--k apply to sparse algorithms, not to '{algo.name}'")
        full_bytes = P * n * dtype.itemsize
        if config.verify == "symbolic" or (config.verify == "auto" and full_bytes > config.memory_budget):
            plan.mode = "symbolic"
    if check_memory:
        check_run_memory(P, n, dtype, "sparse" if algo.kind == "sparse" else plan.mode, plan.k,
                         graph.number_of_nodes(), key)
    ctx = {"n": n, "dtype": dtype, "k": plan.k, "root": root, "sizes": getattr(coll, "counts", None),
           "combine": getattr(coll, "combine", None)}
    plan.kwargs = {key: ctx[key] for key in CONTEXT if key in algo.params and ctx.get(key) is not None}
    plan.kwargs.update(options)
    return plan


def _alltoallv(config: RunConfig, coll, P: int, dtype) -> tuple:
    """``(collective, count, sizes_info)``: alltoallv's collective of its sizes matrix
    (``sizes``, ``moe``, or uniform from the count); other collectives as they are."""
    given = [(flag, v) for flag, v in (("--sizes", config.sizes), ("--moe", config.moe)) if v is not None]
    if coll.name != "alltoallv":
        if given:
            raise UserInputError(f"{given[0][0]} applies to --collective alltoallv, not to {coll.name}")
        return coll, _count(config, coll, P, dtype), None
    if len(given) > 1:
        raise UserInputError("--sizes and --moe both give alltoallv's sizes; give one of them")
    if given and config.bytes is not None:
        raise UserInputError(f"--bytes and {given[0][0]} both give alltoallv's sizes; give one of them")
    from .data.alltoallv import alltoallv_collective, check_sizes, load_sizes, sizes_stats
    from .data.moe import moe_sizes, parse_moe

    info = {}
    if config.moe is not None:
        spec = parse_moe(config.moe)
        matrix = check_sizes(moe_sizes(spec, P, config.seed), P, dtype.itemsize, "--moe")
        info["moe"] = spec.to_dict()
    elif config.sizes is not None:
        path = isinstance(config.sizes, (str, bytes)) or hasattr(config.sizes, "__fspath__")
        matrix = check_sizes(load_sizes(config.sizes) if path else config.sizes, P, dtype.itemsize,
                             f"--sizes {config.sizes}" if path else "--sizes")
    else:
        matrix = np.full((P, P), _count(config, coll, P, dtype) * dtype.itemsize, dtype=np.int64)
    vcoll = alltoallv_collective(matrix, dtype.itemsize, combine=config.moe is not None)
    count = int(matrix[0, 0]) // dtype.itemsize if not given else vcoll.input_elements(0, P)
    return vcoll, count, {**sizes_stats(matrix), **info, "combine": vcoll.combine}


def _count(config: RunConfig, coll, P: int, dtype) -> int:
    """The count given to the collective: ``elements``, or derived from ``bytes`` as nccl-tests does."""
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
        return count
    count = config.elements
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise UserInputError(f"--elements {count} must be >= 1")
    return int(count)
