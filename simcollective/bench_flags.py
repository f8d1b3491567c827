"""nccl-tests' command-line flags, as ``simcollective bench`` takes them.

Every flag of nccl-tests' ``*_perf`` binaries is accepted with its meaning there, or
refused in one line that names it and says why (:data:`REFUSED`). What each accepted flag
does in a simulation:

* ``-t`` threads per process and ``-g`` GPUs per thread, as nccl-tests; ``--procs N`` is
  the launcher's ``mpirun -np N``. Ranks = procs x threads x GPUs, the first ones of the
  placement order; ``--procs`` defaults to filling the machine (its GPUs / (t x g)), so
  with no flag every GPU is a rank of its own process (``mpirun -np <GPUs> ... -g 1``).
* ``-n`` iterations, ``-w`` warm-up iterations, ``-m 1`` aggregation, ``-c`` checks and
  ``-G 0`` (no CUDA graph) are echoed in the header as nccl-tests prints them. The simulation is deterministic and each
  operation starts on an idle network, so the average over ``-n`` identical iterations is
  the one operation simulated and warm-up changes no time. ``-c 0`` turns verification off:
  size-only runs and ``#wrong`` printed ``N/A``, as nccl-tests prints it without a check.
* ``-a`` combines the processes' times as nccl-tests' MPI allreduce does: a process's time
  is its last rank's finish, then 0 = rank 0's process, 1 = the mean (default), 2 = the
  minimum, 3 = the maximum over processes.
* ``-d``: every nccl-tests type but the 1-byte ones. ``float``, ``half``, ``double`` and
  ``int32`` are the simulator's own data; ``bfloat16``, ``uint32``, ``int64`` and
  ``uint64`` run with data of a type of the same width (:data:`STAND_INS`: a time depends
  only on bytes moved), the verified values being that type's, as the header says.
"""

from __future__ import annotations

from .errors import UserInputError
from .validation.nccltests import STAND_INS   # nccl-tests types run with data of another type of the same width
from .parsing import parse_int

__all__ = ["add_nccl_flags", "nccl_settings", "dtype_of", "combine_times", "checks_off", "NCCL_TYPES", "STAND_INS", "REFUSED", "AVERAGES"]

#: nccl-tests' type names for the simulator's own dtypes (``-d`` takes either)
NCCL_TYPES = {"float32": "float", "float16": "half", "float64": "double", "int32": "int32"}
#: nccl-tests types not simulated, and why
_NOT_SIMULATED = {t: "a 1-byte type: the simulator has no 1-byte data" for t in ("int8", "uint8", "f8e4m3", "f8e5m2")}
#: ``-a`` values: how the processes' times combine (nccl-tests' names)
AVERAGES = {0: "rank 0", 1: "mean", 2: "min", 3: "max"}

#: nccl-tests flags that have no meaning in a simulation: (flags, dest, what, why refused)
REFUSED = (
    (("-z", "--blocking"), "blocking", "nccl-tests: blocking mode",
     "each simulated operation runs alone on an idle network: there is no overlap of operations to block"),
    (("-y", "--stream_null"), "stream_null", "nccl-tests: default stream", "there are no CUDA streams in the simulation"),
    (("-T", "--timeout"), "timeout", "nccl-tests: timeout in seconds", "a simulated run cannot hang on a GPU"),
    (("-G", "--cudagraph"), "cudagraph", "nccl-tests: CUDA graph replays (0 only: no graph, echoed)",
     "there are no kernel launches to capture (-G 0, no graph, is taken)"),
    (("-C", "--report_cputime"), "report_cputime", "nccl-tests: report CPU time",
     "there is no CPU time in the simulation; the time column is the simulated time"),
    (("-R", "--local_register"), "local_register", "nccl-tests: buffer registration",
     "buffer registration is not modelled"),
    (("-N", "--run_cycles"), "run_cycles", "nccl-tests: repeat the sweep",
     "the simulation is deterministic: every cycle would print the same rows"),
    (("-I",), "iteration_timing", "nccl-tests: per-iteration timing columns",
     "every iteration of a simulation takes the same time"),
    (("-K",), "skip_iterations", "nccl-tests: skip the first iterations of -I",
     "every iteration of a simulation takes the same time"),
    (("-u",), "unalign", "nccl-tests: misalign buffers", "memory alignment is not modelled"),
    (("-p", "--parallel_init"), "parallel_init", "nccl-tests: parallel communicator init",
     "communicator initialisation is not simulated"),
)


def add_nccl_flags(p) -> None:
    """nccl-tests' flags on ``bench``'s parser (sizes, types and roots are ``bench``'s own)."""
    g = p.add_argument_group("nccl-tests flags (each with nccl-tests' meaning; those without one in a simulation "
                             "are refused, saying why)")
    g.add_argument("-t", "--nthreads", metavar="T", help="threads per process (default: 1)")
    g.add_argument("-g", "--ngpus", metavar="G", help="GPUs per thread (default: 1)")
    g.add_argument("--procs", metavar="N",
                   help="processes, as the launcher's mpirun -np N; ranks = procs x threads x GPUs, the first "
                        "of the placement order (default: fill the machine, GPUs / (t x g))")
    g.add_argument("-n", "--iters", metavar="N", help="timed iterations, echoed (deterministic: each one the same "
                                                      "time) (default: 20)")
    g.add_argument("-w", "--warmup_iters", metavar="N", help="warm-up iterations, echoed (default: 1)")
    g.add_argument("-m", "--agg_iters", metavar="1", help="operations per group: 1 only (default: 1)")
    g.add_argument("-c", "--check", metavar="N",
                   help="correctness checks: 0 = off (size-only runs, #wrong N/A), N >= 1 = verified, echoed "
                        "(default: 1)")
    g.add_argument("-a", "--average", metavar="0|1|2|3",
                   help="combine the processes' times: 0 rank 0, 1 mean, 2 min, 3 max (default: 1)")
    for flags, dest, what, _why in REFUSED:
        g.add_argument(*flags, dest=dest, metavar="V", help=f"{what}: refused (no meaning in a simulation)")


def _int_flag(args, dest: str, flag: str, default: int, lo: int, hi: int | None = None) -> int:
    value = getattr(args, dest)
    if value is None:
        return default
    v = parse_int(value, flag, lo)
    if hi is not None and v > hi:
        raise UserInputError(f"{flag} {v} is out of range: give {lo}..{hi}")
    return v


def dtype_of(name: str) -> tuple:
    """``(nccl-tests type name, the simulator's dtype it runs with)`` of a ``-d`` value."""
    from_nccl = {v: k for k, v in NCCL_TYPES.items()}
    if name in NCCL_TYPES:
        return NCCL_TYPES[name], name
    if name in from_nccl:
        return name, from_nccl[name]
    if name in STAND_INS:
        return name, STAND_INS[name]
    allowed = ", ".join(dict.fromkeys([*from_nccl, *STAND_INS, *NCCL_TYPES]))   # (int32 is both)
    if name in _NOT_SIMULATED:
        raise UserInputError(f"-d {name}: not simulated ({_NOT_SIMULATED[name]}); choose from: {allowed}")
    if name == "all":
        raise UserInputError(f"-d all: run one type per command (1-byte types are not simulated); "
                             f"choose from: {allowed}")
    raise UserInputError(f"-d {name!r} is not supported; choose from: {allowed}")


def nccl_settings(args, machine_gpus: int) -> dict:
    """The nccl-tests flags of ``args`` checked: ``procs, threads, gpus, ranks, iters,
    warmup, agg, check, average``, every refused flag that was given an error."""
    for flags, dest, _what, why in REFUSED:
        value = getattr(args, dest)
        if dest == "cudagraph" and value is not None and value.strip() == "0":
            continue            # no graph: what the header's "graph: 0" says
        if value is not None:
            raise UserInputError(f"{'/'.join(flags)} {value}: not simulated: {why}; drop it")
    threads = _int_flag(args, "nthreads", "-t", 1, 1)
    gpus = _int_flag(args, "ngpus", "-g", 1, 1)
    per_proc = threads * gpus
    if args.procs is not None:
        procs = _int_flag(args, "procs", "--procs", 1, 1)
    elif machine_gpus % per_proc:
        raise UserInputError(f"-t {threads} x -g {gpus} = {per_proc} GPUs per process does not divide the "
                             f"machine's {machine_gpus} GPUs; give --procs N for N x {per_proc} ranks")
    else:
        procs = machine_gpus // per_proc
    if procs * per_proc > machine_gpus:
        raise UserInputError(f"--procs {procs} x -t {threads} x -g {gpus} = {procs * per_proc} ranks: the machine "
                             f"has {machine_gpus} GPUs")
    agg = _int_flag(args, "agg_iters", "-m", 1, 1)
    if agg != 1:
        raise UserInputError(f"-m {agg}: aggregating operations in one NCCL group is not simulated "
                             "(each operation is simulated alone); give -m 1")
    return {
        "procs": procs, "threads": threads, "gpus": gpus, "ranks": procs * per_proc,
        "iters": _int_flag(args, "iters", "-n", 20, 1), "warmup": _int_flag(args, "warmup_iters", "-w", 1, 0),
        "agg": agg, "check": _int_flag(args, "check", "-c", 1, 0),
        "average": _int_flag(args, "average", "-a", 1, 0, 3),
    }


def combine_times(finish: list, per_proc: int, average: int) -> float:
    """nccl-tests' time of one operation from the ranks' finish times (rank order): each
    process's time is the finish of its last rank; ``average`` (``-a``) combines them."""
    procs = [max(finish[i:i + per_proc]) for i in range(0, len(finish), per_proc)]
    if average == 0:
        return procs[0]
    if average == 2:
        return min(procs)
    if average == 3:
        return max(procs)
    return sum(procs) / len(procs)


def checks_off(args) -> bool:
    """``-c 0``: no correctness check (size-only runs)."""
    return args.check is not None and parse_int(args.check, "-c", 0) == 0
