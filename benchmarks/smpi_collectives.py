"""``python -m benchmarks.smpi_collectives [--ranks 16,32,64] [--sizes 64K,128M] [--only NAMES] [--out CSV]``

SMPI's own collectives side by side: every ``smpi-*`` algorithm of simcollective run by
SimGrid's SMPI itself (``--cfg=smpi/<collective>:<SMPI's name>``) and by simcollective
(``--profile cm02 --study``), on the study's ABCI platform.

The SimGrid platform is written from simcollective's own model of ``abci`` under the
study's routing (:class:`simcollective.network.routing.Router` with ``"study"``, which
replays SimGrid's Floyd routes over the study's declared routes): one SimGrid link per
resource with its capacity and no latency, one latency-only link per host pair carrying
that route's latency, and every host-to-host route listed (``Full`` routing) with its
resources as often as it crosses them. SimGrid runs CM02 with weight-S 0 and the default
TCP gamma (the ``cm02`` profile), no computation timed. The MPI program times the
collective as the study did: each rank from its exit of ``MPI_Barrier`` (SMPI's linear
barrier) to its return, the largest over the ranks (``--timing study``). Sizes are
nccl-tests' (``--bytes``: allgather's output buffer, alltoall's whole send buffer); both
simulators run the same count of float32 elements.

Printed and written (``--out``, CSV): per algorithm, rank count and size both simulated
times and the relative difference (ours / SMPI - 1). Without ``smpicc``/``smpirun`` on the
PATH the script says so and exits with status 0 (SimGrid is not a dependency).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import tempfile

from benchmarks.smpi import MPI_HEAD, NOT_INSTALLED, UNBOUNDED, compile_program, smpi_tools, smpirun, write_platform

__all__ = ["COLL_C", "CASES", "platform_xml", "main", "FIELDS"]

#: the MPI program: argv = collective, count (simcollective's --elements); prints the
#: largest (return - barrier exit) over the ranks
COLL_C = MPI_HEAD + r"""
    const char *coll = argv[1];
    long n = atol(argv[2]);
    long total = (strcmp(coll, "allreduce") && strcmp(coll, "reduce") && strcmp(coll, "bcast")) ? n * size : n;
    float *in = (float *)SMPI_SHARED_MALLOC(total * sizeof(float));
    float *out = (float *)SMPI_SHARED_MALLOC(total * sizeof(float));
    int *counts = (int *)malloc(size * sizeof(int));
    for (int i = 0; i < size; i++) counts[i] = (int)n;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (!strcmp(coll, "allgather")) MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allreduce")) MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall")) MPI_Alltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce")) MPI_Reduce(in, out, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "bcast")) MPI_Bcast(in, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce_scatter")) MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else { fprintf(stderr, "unknown collective %s\n", coll); MPI_Abort(MPI_COMM_WORLD, 2); }
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("simulated %.12g\n", tmax);
    free(counts);
    SMPI_SHARED_FREE(out);
    SMPI_SHARED_FREE(in);
    MPI_Finalize();
    return 0;
}
"""

#: (simcollective collective, SMPI collective, SMPI algorithm name): ours is named
#: "smpi-" + SMPI's name in lower case with "_" as "-"
CASES = (
    ("allgather", "allgather", "ring"),
    ("allgather", "allgather", "pair"),
    ("allgather", "allgather", "rdb"),
    ("alltoall", "alltoall", "pair"),
    ("alltoall", "alltoall", "ring"),
    ("alltoall", "alltoall", "basic_linear"),
    ("alltoall", "alltoall", "bruck"),
    ("allreduce", "allreduce", "lr"),
    ("allreduce", "allreduce", "rdb"),
    ("allreduce", "allreduce", "rab_rdb"),
    ("reduce", "reduce", "binomial"),
    ("broadcast", "bcast", "binomial_tree"),
    ("broadcast", "bcast", "flattree"),
    ("broadcast", "bcast", "scatter_LR_allgather"),
    ("broadcast", "bcast", "scatter_rdb_allgather"),
    ("reduce", "reduce", "flat_tree"),
    ("allgather", "allgather", "bruck"),
    ("reduce-scatter", "reduce_scatter", "mpich_pair"),
    ("reduce-scatter", "reduce_scatter", "mpich_rdb"),
    ("reduce-scatter", "reduce_scatter", "ompi_basic_recursivehalving"),
)

#: (SMPI collective, algorithm) -> the largest rank count it is run on at sizes over 1 MiB: SMPI keeps
#: real (not shared) temporary buffers of the whole vector per rank, which these touch, so
#: 128 MiB on P ranks holds about 2 P x 128 MiB (4 GiB at 16 ranks) or more (rab_rdb and
#: alltoall bruck: over 6 GiB at 24 ranks)
LARGE_RANKS = {("reduce_scatter", "mpich_rdb"): 8, ("reduce_scatter", "ompi_basic_recursivehalving"): 8,
               ("allreduce", "rab_rdb"): 16, ("alltoall", "bruck"): 16}

#: the columns of the results table
FIELDS = ("collective", "algorithm", "smpi_name", "ranks", "bytes", "elements", "smpi_s", "ours_s", "rel_diff")


def ours_name(smpi_name: str) -> str:
    """simcollective's name of SMPI's algorithm ``smpi_name``."""
    return "smpi-" + smpi_name.lower().replace("_", "-")


def _nodes(ranks: int) -> int:
    if ranks % 4:
        raise ValueError(f"ABCI has 4 GPUs per node: {ranks} ranks is not a multiple of 4")
    return ranks // 4


def platform_xml(ranks: int) -> tuple:
    """(platform XML, host names in rank order) for ``abci`` with ``ranks`` GPUs under
    the study's routing (module docstring)."""
    from simcollective.network.routing import Router
    from simcollective.resolve import resolve
    from simcollective.run_config import RunConfig

    plan = resolve(RunConfig(topology="abci", nodes=_nodes(ranks), collective="allgather",
                             algorithm="ring", elements=1, profile="cm02", study=True, verify="symbolic"))
    router = Router(plan.profile.network.effective_graph(plan.graph), "study")
    hosts = list(plan.placement)
    name = {h: f"h{i}" for i, h in enumerate(hosts)}
    lines = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="abci" routing="Full">']
    lines += [f'<host id="{name[h]}" speed="1Gf"/>' for h in hosts]
    lines += [f'<link id="r{rid}" bandwidth="{cap!r}Bps" latency="0s"/>' for rid, cap in enumerate(router.capacity)]
    routes = []
    for s in hosts:
        for d in hosts:
            if s == d:
                continue
            route = router.route(s, d)
            lat = f"l{name[s]}_{name[d]}"
            lines.append(f'<link id="{lat}" bandwidth="{UNBOUNDED!r}Bps" latency="{route.latency!r}s"/>')
            links = "".join(f'<link_ctn id="r{x}"/>' for x in route.resources) + f'<link_ctn id="{lat}"/>'
            routes.append(f'<route src="{name[s]}" dst="{name[d]}" symmetrical="NO">{links}</route>')
    lines += routes + ["</zone>", "</platform>"]
    return "\n".join(lines) + "\n", [name[h] for h in hosts]


def elements_for(collective: str, nbytes: int, ranks: int) -> int:
    """The float32 count both simulators run for nccl-tests' size ``nbytes``."""
    from simcollective.resolve import count_for_bytes

    return count_for_bytes(collective, nbytes, ranks, "float32")


def run_ours(collective: str, algorithm: str, ranks: int, elements: int) -> float:
    """simcollective's simulated time (``--profile cm02 --study``, size-only data)."""
    from simcollective.run_config import RunConfig
    from simcollective.simulate import run

    rep = run(RunConfig(topology="abci", nodes=_nodes(ranks), collective=collective, algorithm=algorithm,
                        elements=elements, profile="cm02", study=True, verify="symbolic"))
    return rep.fields["time_s"]


def _sizes(text: str) -> list:
    from simcollective.units import parse_size

    return [int(parse_size(s)) for s in text.split(",")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.smpi_collectives", description=__doc__.split("\n\n")[1])
    ap.add_argument("--ranks", default="16,32,64", help="comma-separated rank counts, multiples of 4 (default: 16,32,64)")
    ap.add_argument("--sizes", default="64K,128M", help="comma-separated nccl-tests sizes (default: 64K,128M)")
    ap.add_argument("--only", help="comma-separated smpi-* names, or COLLECTIVE/NAME (default: all)")
    ap.add_argument("--out", help="write the table as CSV here")
    ap.add_argument("--append", action="store_true", help="add the rows to the --out table instead of replacing it")
    args = ap.parse_args(argv)
    if args.append and not args.out:
        ap.error("--append adds to the --out table: give --out CSV")
    try:
        ranks = [int(x) for x in args.ranks.split(",")]
        sizes = _sizes(args.sizes)
    except Exception:
        ap.error(f"--ranks {args.ranks!r} / --sizes {args.sizes!r}: expected comma-separated integers and sizes")
    if any(p < 4 or p % 4 for p in ranks):
        ap.error(f"--ranks {args.ranks!r}: every rank count must be a positive multiple of 4 (ABCI's GPUs per node)")
    only = None if args.only is None else set(args.only.split(","))
    cases = [c for c in CASES if only is None or {ours_name(c[2]), f"{c[0]}/{ours_name(c[2])}"} & only]
    if not cases:
        ap.error(f"--only {args.only!r} names none of: {', '.join(sorted({ours_name(c[2]) for c in CASES}))}")
    tools = smpi_tools()
    if tools is None:
        print(NOT_INSTALLED)
        return 0
    workdir = tempfile.mkdtemp(prefix="simcollective-smpi-colls-")
    try:
        rows = _compare(*tools, workdir, ranks, sizes, cases)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if rows is None:
        return 1
    if args.out:
        new = not (args.append and os.path.exists(args.out))
        with open(args.out, "w" if new else "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
            if new:
                w.writeheader()
            w.writerows(rows)
    return 0


def _compare(cc, run, workdir, ranks, sizes, cases):
    exe = compile_program(cc, workdir, "coll", COLL_C)
    if exe is None:
        return None
    for p in ranks:
        write_platform(workdir, p, *platform_xml(p))
    print(f"{'collective':<10} {'algorithm':<18} {'ranks':>5} {'bytes':>10} {'SMPI [s]':>13} {'ours [s]':>13} "
          f"{'diff':>8}")
    rows = []
    for collective, smpi_coll, name in cases:
        for p in ranks:
            for nbytes in sizes:
                row = _one(run, exe, workdir, collective, smpi_coll, name, p, nbytes)
                if row is None:
                    continue
                rows.append(row)
                print(f"{collective:<10} {row['algorithm']:<18} {p:>5} {nbytes:>10} {row['smpi_s']:>13.7g} "
                      f"{row['ours_s']:>13.7g} {row['rel_diff']:>+8.2%}", flush=True)
    return rows


def _one(run, exe, workdir, collective, smpi_coll, name, p, nbytes) -> dict | None:
    from simcollective.algorithms import get_algorithm
    from simcollective.errors import UserInputError

    algo = get_algorithm(ours_name(name), collective)
    n = elements_for(collective, nbytes, p)
    cap = LARGE_RANKS.get((smpi_coll, name), p)
    if nbytes > 2**20 and p > cap:
        print(f"{collective:<10} {algo.name:<18} {p:>5} {nbytes:>10} skipped: SMPI's temporary buffers would hold "
              f"about {2 * p * nbytes / 2**30:.0f} GiB (run on at most {cap} ranks at this size)")
        return None
    try:
        algo.check(p)
        t_ours = run_ours(collective, algo.name, p, n)
    except UserInputError as e:       # what SMPI runs through another algorithm or refuses
        print(f"{collective:<10} {algo.name:<18} {p:>5} {nbytes:>10} skipped: {e}")
        return None
    t_smpi, _ = smpirun(run, exe, workdir, p, [smpi_coll, n], [f"smpi/{smpi_coll}:{name}"])
    return {"collective": collective, "algorithm": algo.name, "smpi_name": name, "ranks": p, "bytes": nbytes,
            "elements": n, "smpi_s": t_smpi, "ours_s": t_ours, "rel_diff": t_ours / t_smpi - 1}


if __name__ == "__main__":
    sys.exit(main())
