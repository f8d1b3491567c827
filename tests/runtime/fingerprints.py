"""Fingerprints of recorded programs: a SHA-256 of every array a recording produces and of
every rank's result, for many configurations (every dense algorithm of every collective
on a few machines, sizes, data modes and options).

The recording's arrays are what the compiled loop reads: a change to the recording must
leave their values identical (integer arrays are hashed as int64s: a column's width is not
part of its fingerprint, its values are). ``test_record_fingerprints.py`` compares today's
recordings against ``record_fingerprints.json``; ``python -m tests.runtime.fingerprints``
rewrites that file (only for a change meant to alter the recorded programs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from simcollective.algorithms import load_all
from simcollective.algorithms.registry import algorithms_for
from simcollective.data import SymbolicArray
from simcollective.data.blocks import iter_parts
from simcollective.runtime.record import NotCompilable, record
from simcollective.simulate import RunConfig, make_inputs, resolve

STORE = Path(__file__).with_name("record_fingerprints.json")
COLLECTIVES = ("allreduce", "allgather", "reduce-scatter", "broadcast", "reduce", "alltoall", "alltoallv")
#: (topology, nodes, profile, the elements of each run): odd counts split unevenly; each
#: with real data and size-only (``verify symbolic``), but the largest (size-only only)
MACHINES = [("fat-tree", 4, "ideal", (1, 1000)), ("fat-tree", 6, "cm02", (4099,)),
            ("fat-tree", 12, "ideal", (40000,)), ("dgx-h100", 1, "nccl", (5, 2**18 + 3)),
            ("dgx-h100", 2, "nccl", (2**16 + 1, 2**22)), ("abci", 2, "ideal", (16385,))]
SIZE_ONLY_FROM = 2**20
#: options some algorithms are also recorded with
EXTRA = {"ring": [{"chunk_size": 4096}], "pipelined-chain": [{"chunk_size": 8192}],
         "nccl-ring": [{"protocol": "ll"}, {"protocol": "ll128", "channels": 3}]}


def configurations():
    """Every (name, RunConfig) fingerprinted."""
    load_all()
    for coll in COLLECTIVES:
        for name, algo in sorted(algorithms_for(coll).items()):
            if algo.kind != "dense":
                continue
            for topo, nodes, profile, sizes in MACHINES:
                for n in sizes:
                    for options in [{}] + EXTRA.get(name, []):
                        for verify in ("full", "symbolic")[n >= SIZE_ONLY_FROM:]:
                            cfg = RunConfig(topology=topo, nodes=nodes, algorithm=name, collective=coll,
                                            elements=n, profile=profile, options=dict(options), verify=verify)
                            yield f"{coll}/{name}/{topo}x{nodes}/{profile}/{n}/{verify}/{options}", cfg


def _outputs_digest(outputs) -> str:
    """The digest of every rank's output, leaf by leaf in order: a NumPy array's dtype, shape
    and bytes, another leaf's repr (a symbolic leaf the ranks share, the same object alive
    while ``outputs`` is, formatted once). Consecutive updates hash their concatenation:
    the small leaves go in as one update, the arrays' buffers as they are (no copy)."""
    h = hashlib.sha256()
    formatted = {}
    pending = []
    for out in outputs:
        for part in iter_parts(out if isinstance(out, (list, tuple)) else [out]):
            if isinstance(part, np.ndarray):
                pending.append(part.dtype.str.encode() + repr(part.shape).encode())
                h.update(b"".join(pending))
                pending.clear()
                h.update(np.ascontiguousarray(part))
                continue
            b = formatted.get(id(part))
            if b is None:
                b = formatted[id(part)] = (
                    repr((part.start, part.stop, part.dtype.str, part.segments, part.error))
                    if isinstance(part, SymbolicArray) else repr(part)).encode()
            pending.append(b)
    h.update(b"".join(pending))
    return h.hexdigest()[:24]


def fingerprint(cfg: RunConfig) -> dict | str:
    """The digests of ``cfg``'s recorded arrays and outputs (or why it is not recordable,
    or why the configuration itself is refused)."""
    try:
        plan = resolve(cfg)
    except Exception as e:  # (a configuration an algorithm refuses: the refusal is fingerprinted)
        return f"refused: {type(e).__name__}"
    inputs = make_inputs(plan)
    main = functools.partial(plan.algo.func, **plan.kwargs)
    graph = plan.profile.network.effective_graph(plan.graph)
    try:
        prog = record(graph, plan.placement, main, lambda r: (inputs(r),), plan.profile)
    except NotCompilable as e:
        return f"not compilable: {e}"
    except Exception as e:  # (e.g. NCCL's model on a machine it does not know: raised while recording)
        return f"error: {type(e).__name__}"
    arrays = prog.arrays()
    out = {}
    for key, value in sorted(arrays.items()):
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "i":   # (the values, whatever the integers' width: as int64s)
                value = value.astype(np.int64)
            h = hashlib.sha256(value.dtype.str.encode() + repr(value.shape).encode())
            h.update(np.ascontiguousarray(value))     # (the buffer itself: no copy of its bytes)
            out[key] = h.hexdigest()[:24]
        else:
            out[key] = hashlib.sha256(repr(value).encode()).hexdigest()[:24]
    out["marks"] = hashlib.sha256(repr(prog.marks).encode()).hexdigest()[:24]
    out["events"] = prog.events
    out["outputs"] = _outputs_digest(prog.outputs)
    return out


def compute() -> dict:
    return {name: fingerprint(cfg) for name, cfg in configurations()}


if __name__ == "__main__":
    data = compute()
    lines = [f"{json.dumps(name)}: {json.dumps(data[name], sort_keys=True)}" for name in sorted(data)]
    STORE.write_text("{\n" + ",\n".join(lines) + "\n}\n")   # (one configuration a line)
    print(f"{len(data)} configurations written to {STORE}", file=sys.stderr)
