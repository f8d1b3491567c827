"""The memory guard: refuse, before any work, a run that cannot fit in this machine's memory.

A typo (``--nodes 100000``, ``--elements 1G --verify full`` on 64 ranks) must not take the
machine down or end in a NumPy memory-error traceback after minutes: the estimate comes from
the configuration alone and the refusal is one line with the estimate, the memory available
and the option that would fit.

Per algorithm, the estimate is a fit through peaks measured by
``python -m benchmarks.guard_costs`` (:mod:`simcollective.guard_table`): ``fixed + P x
per_rank + data_factor x P x N x itemsize`` with full data (none size-only), and ``fixed +
P x per_rank + data_factor x P x k x (itemsize + 8) + element_factor x N x itemsize`` for
sparse data (each rank's values and int64 indices; the exact reference and the reduced
results, which grow towards dense but are shared between ranks). Checked against runs the
fit did not see (``tests/test_memory.py``), float32: ring, 64 ranks, 4M elements, full data,
1.16 GB measured, estimate 1.05x; sparse-ring-ring, 256 ranks, 32M elements, d = 1/1024,
1.00 GB measured, estimate 0.98x. int32 sparse data takes less (0.59 GB for that run): the
estimate is then 1.6x over.

Without a measured row, generic upper bounds: :data:`BYTES_PER_RANK` per rank plus
:data:`BYTES_PER_GRAPH_NODE` per node of the hardware graph; ``3 x P x N x itemsize`` with
full data; :func:`sparse_data_bytes` for sparse data.
"""

from __future__ import annotations

import os

from .errors import UserInputError

__all__ = ["available_memory", "estimate_run_bytes", "sparse_data_bytes", "check_run_memory", "check_machine_size",
           "compiled_bytes", "BYTES_PER_RANK", "BYTES_PER_GRAPH_NODE", "COMPILED_BYTES_PER_MESSAGE",
           "COMPILED_BYTES_PER_MESSAGE_OTHER"]

BYTES_PER_RANK = 512 * 1024
BYTES_PER_GRAPH_NODE = 4 * 1024
_BASE = 64 * 2**20           # the interpreter, NumPy, SimPy, NetworkX
#: peak bytes a message the compiled path holds (the recording, its arrays and the loop's) on top
#: of the SimPy path's estimate, NCCL's algorithms across servers: 64 DGX H100, nccl-ring 256M
#: float32, 8,372,224 messages, 1.85 GB peak RSS for the whole command, 127 bytes a message over
#: the estimate (the SimPy path: 1.0 GB; 16 DGX H100: 65; 128 DGX H100, 33,521,664 messages:
#: 6.3 GB, 142): rounded up for the size-only slices live while recording, which grow with the ranks
COMPILED_BYTES_PER_MESSAGE = 150
#: the same for the other algorithms: the ring on a 1024-host fat-tree, 256M float32 size-only,
#: 2,095,104 messages, 0.44 GB peak for the whole command, 166 bytes a message over the estimate
#: (4096 hosts, 33,546,240 messages: 4.6 GB, 133); the SimPy path 0.08 GiB
COMPILED_BYTES_PER_MESSAGE_OTHER = 170


def compiled_bytes(messages: int, nccl_across_servers: bool) -> int:
    """Bytes the compiled path holds on top of a run's SimPy estimate for ``messages``
    messages (:data:`COMPILED_BYTES_PER_MESSAGE` for NCCL's algorithms across servers, which
    enter the array store, :data:`COMPILED_BYTES_PER_MESSAGE_OTHER` else).

    >>> compiled_bytes(1_000_000, True), compiled_bytes(1_000_000, False)
    (150000000, 170000000)
    """
    return messages * (COMPILED_BYTES_PER_MESSAGE if nccl_across_servers else COMPILED_BYTES_PER_MESSAGE_OTHER)


def available_memory() -> int:
    """Bytes this process can still allocate: ``MemAvailable`` of /proc/meminfo (Linux), else
    physical memory; ``SIMCOLLECTIVE_MEMORY`` (bytes) overrides both."""
    env = os.environ.get("SIMCOLLECTIVE_MEMORY")
    if env:
        try:
            return int(float(env))
        except ValueError:
            raise UserInputError(f"SIMCOLLECTIVE_MEMORY={env!r} is not a number of bytes") from None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):     # pragma: no cover - exotic platforms
        return 2**62


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def sparse_data_bytes(ranks: int, elements: int, itemsize: int, k: int | None) -> int:
    """The data term of a sparse run: inputs ``P x k x (itemsize + 8)``, the exact reference
    ``8 x N`` and the shared reduced results ``4 x min(N x itemsize, P x k x (itemsize + 8))``
    (the unit the measured per-algorithm factor multiplies)."""
    entry = itemsize + 8
    inputs = ranks * (k or 0) * entry
    return int(inputs + 8 * elements + 4 * min(elements * itemsize, inputs))


def _costs(algorithm):
    """The measured row of ``(collective, name)`` (:mod:`simcollective.guard_table`), or ``None``."""
    from .guard_table import COSTS

    return COSTS.get(tuple(algorithm)) if algorithm is not None else None


def estimate_run_bytes(ranks: int, elements: int, itemsize: int, mode: str, k: int | None = None,
                       graph_nodes: int = 0, algorithm=None) -> int:
    """Peak memory (bytes) of one run; ``mode``: ``full``, ``symbolic`` or ``sparse``.

    ``algorithm``: ``(collective, name)``; with it, the fit of that algorithm's measured peaks
    (:mod:`simcollective.guard_table`: ``fixed + P x per_rank + data_factor x P x N x itemsize``
    with full data, ``fixed + P x per_rank + data_factor x P x k x (itemsize + 8) +
    element_factor x N x itemsize`` sparse) replaces the generic upper bounds below."""
    row = _costs(algorithm)
    if row is not None:       # fitted through three measured peaks (benchmarks/guard_costs.py)
        if mode == "sparse":
            data = (row["data_factor"] * ranks * (k or 0) * (itemsize + 8)
                    + row.get("element_factor", 0.0) * elements * itemsize)
        else:
            data = row["data_factor"] * ranks * elements * itemsize if mode == "full" else 0
        return int(max(_BASE, row["fixed_bytes"]) + ranks * row["bytes_per_rank"] + data
                   + graph_nodes * BYTES_PER_GRAPH_NODE)
    total = _BASE + ranks * BYTES_PER_RANK + graph_nodes * BYTES_PER_GRAPH_NODE
    if mode == "full":
        total += 3 * ranks * elements * itemsize + 8 * elements
    elif mode == "sparse":
        total += sparse_data_bytes(ranks, elements, itemsize, k)
    return int(total)


def check_run_memory(ranks: int, elements: int, dtype, mode: str, k: int | None = None, graph_nodes: int = 0,
                     algorithm=None) -> int:
    """Refuse in one line a run whose estimate exceeds the available memory; return the estimate."""
    need = estimate_run_bytes(ranks, elements, dtype.itemsize, mode, k, graph_nodes, algorithm)
    have = available_memory()
    if need <= have:
        return need
    if mode == "full":
        hint = "--verify symbolic (size-only data, same simulated time) fits"
    elif mode == "sparse":
        hint = "a smaller --density/--k or --elements would fit"
    else:
        hint = "fewer ranks (--gpus/--nodes) would fit"
    what = {"full": "full data", "symbolic": "size-only data", "sparse": f"sparse data, k = {k}"}[mode]
    raise UserInputError(f"this run needs about {_gib(need)} of memory ({ranks} ranks x {elements} x {dtype}, {what}); "
                         f"the machine has {_gib(have)} available; {hint}")


def check_machine_size(topology: str, nodes: int, opts: dict) -> None:
    """Refuse up front a preset too large to build and simulate here (``--nodes 100000``)."""
    import topologies

    if nodes <= 64:
        return
    one = topologies.build(topology, 1, dict(opts or {}))
    gpus = int(one.graph.get("gpus_per_node", 1) or 1)
    per_node = one.number_of_nodes() * BYTES_PER_GRAPH_NODE + gpus * BYTES_PER_RANK
    need = _BASE + nodes * per_node
    have = available_memory()
    if need > have:
        fit = max(1, int((have - _BASE) // per_node))
        raise UserInputError(f"--nodes {nodes} of {topology} ({nodes * gpus} GPUs) needs about {_gib(need)} of memory "
                             f"to build and simulate; the machine has {_gib(have)} available; at most about {fit} "
                             f"nodes fit")
