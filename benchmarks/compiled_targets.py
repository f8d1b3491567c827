"""The targets of the compiled execution path (scenarios C, X and XE of
:func:`benchmarks.allreduce.compiled_scenarios`), judged on CPU time: a point's
``sim_cpu_s`` is the simulation's CPU time, recording and compiled loop included.

XE estimates the large points of X (hours on this machine; the all-to-all, under a minute, and
NVLSTree on 16,384 GPUs, about 5 minutes, are run whole) from a measured smaller run of
the same algorithm, machine and size (:func:`benchmarks.engine.estimate_point`): the smaller
run's CPU per message, times the large run's exact message count (the algorithm's
``messages`` hook), times the run guard's growth of the cost per message with the ranks,
``(P / P_small) ** 0.2`` (:data:`simcollective.guard.SCALE_EXPONENT`); memory as the smaller
run's own peak RSS per message times the large run's messages (an upper bound: the fixed memory
scales too; the ``why`` of a target says how its memory grows where it was measured). The targets print these as estimates."""

from __future__ import annotations

from .targets import Target, itself_or

__all__ = ["COMPILED_TARGETS"]


def cost_per_message(key: str, limit_us: float, versus: str | None = None):
    """CPU microseconds per message of point ``key`` at most ``limit_us`` (beside it, the
    point ``versus`` on the SimPy path)."""
    def check(ctx):
        r = ctx.results.get(key)
        if r is None or "error" in r:
            return f"needs {key}" + (f" ({r['error']})" if r else ""), False
        us = r["sim_cpu_s"] / r["flows"] * 1e6
        text = f"{us:.2f} us/msg cpu on the {r.get('engine')} path"
        v = ctx.results.get(versus) if versus else None
        if v is not None and "error" not in v:
            text += f" (SimPy path {v['sim_cpu_s'] / v['flows'] * 1e6:.2f} us/msg)"
        return text, us <= limit_us
    return check


def one_point(key: str, limit_s: float, rss_limit: float | None = None):
    """Wall time of point ``key`` under ``limit_s`` (CPU beside it), peak RSS under ``rss_limit``."""
    def check(ctx):
        r = ctx.results.get(key)
        if r is None or "error" in r:
            return f"needs {key}" + (f" ({r['error']})" if r else ""), False
        text = f"wall {r['wall_s']:.1f} s, cpu {r['cpu_s']:.1f} s on the {r.get('engine')} path"
        met = r["wall_s"] < limit_s
        if rss_limit is not None:
            text += f", peak RSS {r['peak_rss'] / 1e9:.2f} GB"
            met = met and r["peak_rss"] < rss_limit
        return text, met
    return check


def estimated(key: str, limit_s: float, rss_limit: float | None = None):
    """The estimate of point ``key`` (see the module doc) under ``limit_s`` CPU seconds
    and ``rss_limit`` bytes."""
    def check(ctx):
        from simcollective.guard import SCALE_EXPONENT

        r = ctx.results.get(key)
        if r is None or "error" in r:
            return f"needs {key}" + (f" ({r['error']})" if r else ""), False
        grow = (r["large_ranks"] / r["ranks"]) ** SCALE_EXPONENT
        cpu = r["sim_cpu_s"] / r["flows"] * r["large_messages"] * grow
        text = (f"ESTIMATE {cpu:,.1f} s cpu ({r['large_messages']:,} messages at "
                f"{r['sim_cpu_s'] / r['flows'] * 1e6 * grow:.2f} us, from {r['flows']:,} measured at "
                f"P={r['ranks']} on the {r.get('engine')} path)")
        met = cpu < limit_s
        if rss_limit is not None:
            rss = r.get("small_peak_rss", r["peak_rss"]) / r["flows"] * r["large_messages"]
            text += f", peak RSS at most about {rss / 1e9:.1f} GB (linear in the messages)"
            met = met and rss < rss_limit
        return text, met
    return check


def measured(key: str, limit_s: float, rss_limit: float | None = None):
    """The CPU time of point ``key``, run whole (not estimated), under ``limit_s`` (and its
    peak RSS under ``rss_limit`` bytes)."""
    def check(ctx):
        r = ctx.results.get(key)
        if r is None or "error" in r:
            return f"needs {key}" + (f" ({r['error']})" if r else ""), False
        met = r["cpu_s"] < limit_s and (rss_limit is None or r["peak_rss"] < rss_limit)
        return (f"MEASURED {r['cpu_s']:,.1f} s cpu (wall {r['wall_s']:,.1f} s, {r['flows']:,} messages on the "
                f"{r.get('engine')} path, peak RSS {r['peak_rss'] / 1e9:.1f} GB)"), met
    return check


_NCCL_RING = ("33.5 M messages: the recording's Python per message dominates the compiled path (3.5-4.2 us a "
              "message of NCCL's channels, slices and protocol steps, against 0.3 us in the loop); run whole "
              "(`simcollective run --topology dgx-h100 --nodes 128 --algorithm nccl-ring --elements 256M --profile "
              "nccl --yes`): 190 s of CPU and 6.1 GB")
_ALLTOALL = ("the 1024-GPU run itself, under the default routing (dest, four scalable units; about half under "
             "first): 14.4 s of CPU and 2.7 GB whole, most of it the loop's 321 max-min solves of up to a million "
             "concurrent flows; the route parameters of its 1 M distinct pairs (in bulk) 3-5 s")
_NVLS = ("NVLSTree reacts to the first message to arrive (waitany): the SimPy path runs it. Measured, the whole "
         "run at 2048 nodes (`simcollective run --topology dgx-h100 --nodes 2048 --algorithm nccl --elements 256M "
         "--dtype float32 --profile nccl --yes`, a quiet machine): 273-298 s of CPU and 3.3 GB peak, 17-19 us a message, "
         "1.14 SimPy events a message (with every event on SimPy's heap, the events due now not in a queue of their "
         "own: 314 s). Of a message's cost about a tenth is the array store's compiled max-min solves (each over "
         "every live flow: 280,000 at 2048 nodes), a fifth the runtime's posting, matching and completion, the "
         "network's Python per message about 15 %, the rest SimPy's scheduling and the algorithm's reactor: Python "
         "per message or event, kept because the order of the messages depends on time")
_WAITANY = ("the SimPy path runs it: its ranks react to whichever message arrives first (waitany: NCCL's trees forward "
            "a chunk as it comes, NVLSTree's reactor), so a rank's operations cannot be recorded before the run, and "
            "no compiled form exists. Measured on 16 DGX H100 (cProfile, the simulation alone): NVLSTree 14.5 us a "
            "message, 43 calls a message: the runtime's posting, matching and completion 25 %, the network's Python "
            "per message (transfer, activation, completion) 22 %, the array store's compiled solves 14 %, the reactor "
            "11 %, SimPy's scheduling 10 %; nccl-tree 25 us a message over only 32,512 messages, 86 calls a message, "
            "numba's and the routes' loading 29 %, the network 19 %, the runtime 18 %, the compiled solves 17 %, "
            "SimPy 12 %. A compiled form needs the loop to hand every completion back to the rank's Python "
            "generator (a call a message again, saving the runtime's and SimPy's part, about half) or the trees "
            "written as dataflow with join counters, whose same-instant events come in another order than the "
            "SimPy path's, so their times would no longer be bit-identical to it")


def itself(key: str):
    """Profile the point ``key`` itself (when it ran in under ``PROFILE_MAX_WALL``)."""
    return itself_or(lambda: None, lambda ctx: key)


COMPILED_TARGETS = (
    Target("C/ring", "cost per message <= 1 us (ring, 1024 ranks)", ("C",),
           cost_per_message("C/ring P=1024 compiled", 1.0, "C/ring P=1024 simpy"),
           profile=itself("C/ring P=1024 compiled"),
           why=("the recording runs the algorithm's own generator once per message (1.16 us of the 1.7 at 1024 "
                "ranks: the generator and its size-only payloads' slices and sums, the recorder's rows and "
                "matching; a bare generator resumed once a message with one call recording a row is 0.28 us); "
                "the arrays 0.15 us, the compiled loop with its set-up 0.35 us. The per-rank generator is the "
                "algorithm's one definition: arrays made without running it would be a second one")),
    Target("C/nccl-ring", "cost per message <= 2 us (nccl-ring)", ("C",),
           cost_per_message("C/nccl-ring dgx-h100 16 nodes compiled", 2.0),
           profile=itself("C/nccl-ring dgx-h100 16 nodes compiled"),
           why=("as C/ring: the recording's Python per message, about 3.5-4.2 us (NCCL's channels, slices and "
                "protocol steps per message, two postings each), against about 0.4 us in the loop (the 8-node abci point beside it is numba's load "
                "above all: the recording and the loop are about 0.1 s of 0.54 s)")),
    Target("C/nccl", "cost per message <= 2 us (nccl: NVLSTree on 16 DGX H100)", ("C",),
           cost_per_message("C/nccl dgx-h100 16 nodes", 2.0), profile=itself("C/nccl dgx-h100 16 nodes"),
           why=_WAITANY),
    Target("C/nccl-tree", "cost per message <= 2 us (nccl-tree)", ("C",),
           cost_per_message("C/nccl-tree dgx-h100 16 nodes", 2.0), profile=itself("C/nccl-tree dgx-h100 16 nodes"),
           why=_WAITANY),
    Target("X/ring", "ring on a 4096-host fat-tree < 60 s", ("X",), one_point("X/ring fat-tree 4096 1G f32", 60.0),
           why=("33.5 M messages, 66-71 s of CPU, 6-11 s of it the system's (2 M page faults, 3-5 us each in this "
                "virtual machine, for 8 GB of fresh pages at 4.3 GB peak): the recording, the algorithm's Python "
                "once per message, 45 s of user time (1.35 us a message, 1.16 at 1,024 ranks: its messages in "
                "flight, about 0.83 P, and P-bit rank sets outgrow a core's cache) and 1.3 s of system; the arrays "
                "5 s (3 of them page faults); the compiled loop 11 s, its rows 3.3 s")),
    Target("X/nccl-ring", "nccl-ring 1 GiB on 128 nodes < 60 s", ("X",),
           one_point("X/nccl-ring dgx-h100 128 nodes 1G", 60.0), why=_NCCL_RING),
    Target("X/alltoall", "alltoall direct on 1024 GPUs < 30 s", ("X",),
           one_point("X/alltoall direct dgx-h100 128 nodes 1G", 30.0), why=_ALLTOALL),
    Target("X/nccl", "nccl 1 GiB on dgx-h100 --nodes 2048 < 5 min and < 8 GB", ("X",),
           one_point("X/nccl dgx-h100 2048 nodes 1G", 300.0, 8e9), why=_NVLS),
    Target("XE/ring", "ring on a 4096-host fat-tree < 60 s (estimate)", ("XE",),
           estimated("XE/ring fat-tree 4096 1G f32", 60.0),
           why=("33.5 M messages at the compiled path's cost per message (recording and loop); run whole, 66-71 s "
                "of CPU and 4.3 GB (X/ring): the recording's cost a message grows faster than the estimate's P^0.2 "
                "(1.16 us of user time at 1024 ranks, 1.35 at 4096: its messages in flight, about 0.83 P, outgrow a "
                "core's cache) and the system's page faults (6-11 s) are not in the smaller run's share")),
    Target("XE/nccl-ring", "nccl-ring 1 GiB on 128 nodes < 60 s (estimate)", ("XE",),
           estimated("XE/nccl-ring dgx-h100 128 nodes 1G", 60.0), why=_NCCL_RING),
    Target("XE/alltoall", "alltoall direct on 1024 GPUs < 30 s (the run itself)", ("XE",),
           measured("XE/alltoall direct dgx-h100 128 nodes 1G", 30.0), why=_ALLTOALL),
    Target("XE/nccl", "nccl 1 GiB on dgx-h100 --nodes 2048 < 5 min and < 8 GB (the run itself)", ("XE",),
           measured("XE/nccl dgx-h100 2048 nodes 1G", 300.0, 8e9), why=_NVLS),
)
