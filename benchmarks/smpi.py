"""``python -m benchmarks.smpi [--ranks 16,64,256] [--elements N] [--repeats R] [--verify MODE] [--best-case] [--keep DIR]``

The SMPI side by side: the same ring allreduce on the same machine, simulated by SimGrid's
SMPI (an MPI program compiled with ``smpicc``, run with ``smpirun``) and by simcollective
(``simcollective run --topology fat-tree --algorithm ring --profile cm02``).

The SimGrid platform is written from simcollective's own resource table for the
``fat-tree`` preset (:class:`simcollective.network.routing.Router`): one SimGrid link per
resource (a cable direction, a shared cable, a switch crossing that can bind) with its
capacity, the latencies on the links, a latency-only link of unbounded capacity for a
switch crossing that cannot bind, and every host-to-host route listed explicitly (``Full``
routing) as simcollective's router finds it. SimGrid runs its CM02 model with weight-S 0
and the default TCP gamma (4 MiB), which is what the ``cm02`` profile describes; SMPI's
sends under 64 KiB are detached, as the profile says.

The two are run alternately, ``--repeats`` times each (simcollective with ``--verify``: real data verified
against NumPy, or size-only); printed per rank count: both
simulated times and their relative difference, the CPU time of each (the smallest over
the repeats; SMPI's ``smpirun`` process and its children, simcollective's command in a
fresh interpreter, imports included) and the ratio SMPI / simcollective. The MPI program
is compiled once (not counted). Without ``smpicc``/``smpirun`` on the PATH the script
says so and exits with status 0 (nothing to compare; SimGrid is not a dependency):
on Debian, ``apt-get install simgrid libsimgrid-dev``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

__all__ = ["MPI_HEAD", "RING_C", "NOT_INSTALLED", "platform_xml", "smpi_tools", "smpirun", "write_platform",
           "compile_program", "main"]

#: the start of the MPI programs: headers, MPI_Init, rank and size
MPI_HEAD = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
"""

#: what the scripts print (and exit 0) without SimGrid
NOT_INSTALLED = ("SimGrid's SMPI is not installed (smpicc and smpirun are not on the PATH): nothing to compare. "
                 "On Debian: apt-get install simgrid libsimgrid-dev")

#: the MPI program: a ring allreduce (reduce-scatter then allgather, P-1 steps each, block
#: r of n/P elements), as simcollective's ``ring``; prints the largest finish time. Built
#: with ``-DNO_REDUCTION`` (``--best-case``) it skips the additions: SMPI's best case, with
#: its buffers in shared memory (``SMPI_SHARED_MALLOC``) and no reduction computed
RING_C = MPI_HEAD + r"""    long n = atol(argv[1]);
    long block = n / size;
    float *data = (float *)SMPI_SHARED_MALLOC(n * sizeof(float));
    float *tmp = (float *)SMPI_SHARED_MALLOC(block * sizeof(float));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double t0 = MPI_Wtime();
    for (int s = 0; s < size - 1; s++) {          /* reduce-scatter */
        int send = (rank - s + size) % size, recv = (rank - s - 1 + size) % size;
        MPI_Sendrecv(data + send * block, block, MPI_FLOAT, right, 0, tmp, block, MPI_FLOAT, left, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#ifndef NO_REDUCTION
        for (long i = 0; i < block; i++) data[recv * block + i] += tmp[i];
#endif
    }
    for (int s = 0; s < size - 1; s++) {          /* allgather */
        int send = (rank + 1 - s + size) % size, recv = (rank - s + size) % size;
        MPI_Sendrecv(data + send * block, block, MPI_FLOAT, right, 1, data + recv * block, block, MPI_FLOAT,
                     left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("simulated %.12g\n", tmax);
    SMPI_SHARED_FREE(tmp);
    SMPI_SHARED_FREE(data);
    MPI_Finalize();
    return 0;
}
"""

#: SimGrid's configuration: CM02 as the cm02 profile describes it, no computation timed
SMPI_CFG = ("network/model:CM02", "network/weight-S:0", "network/TCP-gamma:4194304", "network/crosstraffic:0",
            "smpi/simulate-computation:no", "smpi/send-is-detached-thresh:65536", "smpi/host-speed:1Gf")

#: capacity of a latency-only link (a switch crossing that cannot bind): never binding
UNBOUNDED = 1e18


def smpi_tools() -> tuple | None:
    """(smpicc, smpirun) paths, or None when SimGrid's SMPI is not installed."""
    cc, run = shutil.which("smpicc"), shutil.which("smpirun")
    return (cc, run) if cc and run else None


def _hosts(graph) -> list:
    from simcollective.placement import resolve_placement

    return resolve_placement(graph, "linear")


def platform_xml(ranks: int) -> tuple:
    """(platform XML, host names in rank order) for ``fat-tree --nodes ranks``, from
    simcollective's router (module docstring)."""
    from simcollective.network.routing import Router
    from simcollective.simulate import RunConfig, build_graph

    graph = build_graph(RunConfig(topology="fat-tree", nodes=ranks, algorithm="ring", elements=ranks))
    router = Router(graph)
    hosts = _hosts(graph)
    name = {h: f"h{i}" for i, h in enumerate(hosts)}
    lat = {}   # resource -> latency carried by its link
    for (u, v), rid in router.edge_resource.items():
        if lat.setdefault(rid, router.edge_latency[(u, v)]) != router.edge_latency[(u, v)]:
            raise ValueError(f"shared cable {router.resource_name[rid]} has two latencies")
    for n, rid in router.crossing_resource.items():
        lat[rid] = router.crossing_latency.get(n, 0.0)
    latency_only = {n: f"x{i}" for i, n in enumerate(router.unbinding_crossings) if router.crossing_latency.get(n)}
    lines = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="fat-tree" routing="Full">']
    lines += [f'<host id="{name[h]}" speed="1Gf"/>' for h in hosts]
    lines += [f'<link id="r{rid}" bandwidth="{cap!r}Bps" latency="{lat.get(rid, 0.0)!r}s"/>'
              for rid, cap in enumerate(router.capacity)]
    lines += [f'<link id="{x}" bandwidth="{UNBOUNDED!r}Bps" latency="{router.crossing_latency[n]!r}s"/>'
              for n, x in latency_only.items()]
    for s in hosts:
        for d in hosts:
            if s == d:
                continue
            route = router.route(s, d)
            ids = [f"r{x}" for x in route.resources]
            # latency-only links of the crossings on the way (order does not matter to CM02)
            ids += [latency_only[n] for n in route.nodes[1:-1] if n in latency_only]
            links = "".join(f'<link_ctn id="{i}"/>' for i in ids)
            lines.append(f'<route src="{name[s]}" dst="{name[d]}" symmetrical="NO">{links}</route>')
    lines += ["</zone>", "</platform>"]
    return "\n".join(lines) + "\n", [name[h] for h in hosts]


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(cmd: list, **kw) -> tuple:
    """(completed process, CPU seconds of it and its children)."""
    c0 = _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return proc, _children_cpu() - c0


def write_platform(workdir: str, ranks: int, xml: str, hosts: list) -> None:
    """``p{ranks}.xml`` and the host file ``h{ranks}.txt`` (rank order) in ``workdir``."""
    with open(os.path.join(workdir, f"p{ranks}.xml"), "w") as f:
        f.write(xml)
    with open(os.path.join(workdir, f"h{ranks}.txt"), "w") as f:
        f.write("\n".join(hosts) + "\n")


def compile_program(cc: str, workdir: str, name: str, source: str, defines=()) -> str | None:
    """The executable of ``source`` built with ``smpicc`` and ``-D`` each of ``defines``
    (None, said, if it fails)."""
    src, exe = os.path.join(workdir, f"{name}.c"), os.path.join(workdir, name)
    with open(src, "w") as f:
        f.write(source)
    proc = subprocess.run([cc, "-O2", *(f"-D{d}" for d in defines), "-o", exe, src], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"smpicc failed (status {proc.returncode}): {proc.stderr.strip()[-500:]}")
        return None
    return exe


def smpirun(run: str, exe: str, workdir: str, ranks: int, args: list, cfg=()) -> tuple:
    """(SMPI's printed simulated time, CPU seconds) of ``exe args`` on the platform
    :func:`write_platform` wrote for ``ranks``, with :data:`SMPI_CFG` and ``cfg``."""
    cmd = [run, "-np", str(ranks), "-platform", os.path.join(workdir, f"p{ranks}.xml"),
           "-hostfile", os.path.join(workdir, f"h{ranks}.txt"), *(f"--cfg={c}" for c in (*SMPI_CFG, *cfg)),
           "--log=root.thres:critical", exe, *map(str, args)]
    proc, cpu = _timed(cmd)
    out = [line for line in proc.stdout.splitlines() if line.startswith("simulated ")]
    if proc.returncode != 0 or not out:
        raise RuntimeError(f"smpirun {' '.join(cfg)} on {ranks} ranks failed (status {proc.returncode}): "
                           f"{proc.stderr.strip()[-500:]}")
    return float(out[-1].split()[1]), cpu


def run_smpi(run: str, exe: str, workdir: str, ranks: int, elements: int) -> tuple:
    return smpirun(run, exe, workdir, ranks, [elements])


def run_ours(ranks: int, elements: int, verify: str = "auto") -> tuple:
    cmd = [sys.executable, "-m", "simcollective.cli", "run", "--topology", "fat-tree", "--nodes", str(ranks),
           "--algorithm", "ring", "--elements", str(elements), "--profile", "cm02", "--verify", verify,
           "--quiet", "--json", "-"]
    proc, cpu = _timed(cmd)
    if proc.returncode != 0:
        raise RuntimeError(f"simcollective failed (status {proc.returncode}): {proc.stderr.strip()[-500:]}")
    rep = json.loads(proc.stdout)
    return rep["time_s"], cpu, rep["mode"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.smpi", description=__doc__.split("\n\n")[1])
    ap.add_argument("--ranks", default="16,64,256", help="comma-separated rank counts (default: 16,64,256)")
    ap.add_argument("--elements", type=int, default=2**20, help="float32 elements, a multiple of every rank count "
                                                                   "(default: 1048576)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each simulator per rank count (default: 3)")
    ap.add_argument("--verify", choices=("auto", "full", "symbolic"), default="auto",
                    help="simcollective's data: full (real data, verified), symbolic (size-only) or auto (default)")
    ap.add_argument("--best-case", action="store_true",
                    help="SMPI's best case: the MPI program computes no reduction (buffers in shared memory either way)")
    ap.add_argument("--keep", metavar="DIR", help="write the platforms, host files and program here and keep them")
    args = ap.parse_args(argv)
    try:
        ranks = [int(x) for x in args.ranks.split(",")]
    except ValueError:
        ap.error(f"--ranks {args.ranks!r}: expected comma-separated integers, e.g. 16,64,256")
    if any(p < 2 for p in ranks) or any(args.elements % p for p in ranks) or args.repeats < 1:
        ap.error(f"--ranks {args.ranks!r}, --elements {args.elements}, --repeats {args.repeats}: every rank count "
                 "must be at least 2 and divide --elements, and --repeats at least 1")
    tools = smpi_tools()
    if tools is None:
        print(NOT_INSTALLED)
        return 0
    cc, run = tools
    workdir = args.keep or tempfile.mkdtemp(prefix="simcollective-smpi-")
    os.makedirs(workdir, exist_ok=True)
    try:
        return _compare(cc, run, workdir, ranks, args.elements, args.repeats, args.verify, args.best_case)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _compare(cc, run, workdir, ranks, elements, repeats, verify, best_case=False) -> int:
    exe = compile_program(cc, workdir, "ring", RING_C, ("NO_REDUCTION",) if best_case else ())
    if exe is None:
        return 1
    print(f"ring allreduce of {elements} float32 on fat-tree (cm02 / SimGrid CM02), {repeats} runs each, alternated"
          + (" (SMPI's best case: no reduction computed)" if best_case else ""))
    print(f"{'ranks':>5}  {'SMPI sim [s]':>14}  {'ours sim [s]':>14}  {'rel diff':>9}  "
          f"{'SMPI cpu':>9}  {'ours cpu':>9}  {'SMPI/ours':>9}  ours' mode")
    for p in ranks:
        write_platform(workdir, p, *platform_xml(p))
        smpi_cpu, ours_cpu = [], []
        for _ in range(repeats):
            t_smpi, c = run_smpi(run, exe, workdir, p, elements)
            smpi_cpu.append(c)
            t_ours, c, mode = run_ours(p, elements, verify)
            ours_cpu.append(c)
        a, b = min(smpi_cpu), min(ours_cpu)
        print(f"{p:>5}  {t_smpi:>14.9g}  {t_ours:>14.9g}  {t_ours / t_smpi - 1:>+9.2%}  "
              f"{a:>8.2f}s  {b:>8.2f}s  {a / b:>9.2f}  {mode}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
