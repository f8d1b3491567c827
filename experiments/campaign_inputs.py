"""The inputs of the attack campaign (:mod:`experiments.campaign`), generated: each a
:class:`Case` with the command line, the files it needs (written into the campaign's
directory) and what must happen: ``error`` (a one-line refusal, exit 2) or ``ok`` (exit 0).

Categories: repeated options (every single-valued option of every command, from the parser
itself), option-use rule cases, bad values of every numeric option, hostile files (integers
of 400 digits, nesting 100000 deep, binary, empty, huge, symlinks dangling or looping,
directories), outputs (same path twice, dangling symlinks, /dev/full for ENOSPC, missing
directories), sweep grids (unknown names, missing files, huge grids), nccl-tests logs (nan,
inf, negative sizes, ``max``, huge; large ones streamed: a 100 MiB ``NCCL_DEBUG=INFO`` log,
a sparse one, 1001 tables), and the guards (machines too large to simulate).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Case", "all_cases", "fast_cases"]

RUN = ["run", "--topology", "abci", "--nodes", "1", "--algorithm", "ring", "--bytes", "1K"]

LOG_HEAD = "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"


@dataclass
class Case:
    """One input: ``argv`` of ``simcollective``, ``files`` {name: bytes | ("symlink", target)
    | ("size", n) | ("dir",)}, ``expect`` ``error`` or ``ok``, its ``category``."""

    name: str
    category: str
    argv: list
    expect: str = "error"
    files: dict = field(default_factory=dict)


def _log_row(size, value="100.0", op="sum") -> str:
    return f"  {size}  {size if isinstance(size, str) else max(1, size // 4)}  float  {op}  -1  {value}  1.0  1.0  0  " \
           f"{value}  1.0  1.0  0\n"


def _repeated_options() -> list:
    """Every single-valued option of every command, given twice (from the parser's actions)."""
    from simcollective.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    cases = []
    for cmd, p in sub.choices.items():
        for action in p._actions:
            repeatable = isinstance(action.default, list)      # KEY=VALUE and other append options
            if not action.option_strings or repeatable or action.dest in ("help", "version"):
                continue
            flag = action.option_strings[-1]
            twice = [flag, flag] if action.nargs == 0 else [flag, "1", flag, "2"]
            cases.append(Case(f"{cmd} {flag} twice", "repeated option", [cmd, *twice]))
    return cases


def _option_use() -> list:
    topo = {"t.json": _graph_json(1e11)}
    rows = [
        ("topology-file with --nodes 1", ["run", "--topology-file", "t.json", "--nodes", "1", "--algorithm", "ring",
                                          "--bytes", "1K"], topo),
        ("topology-file with --topology abci", ["run", "--topology-file", "t.json", "--topology", "abci",
                                                "--algorithm", "ring", "--bytes", "1K"], topo),
        ("topologies --nodes without --show", ["topologies", "--nodes", "3"], {}),
        ("algorithms --collective empty", ["algorithms", "--collective", ""], {}),
        ("dense --workload", RUN + ["--workload", "topk"], {}),
        ("dense --overlap", RUN + ["--overlap", "0.5"], {}),
        ("symbolic --seed", RUN + ["--verify", "symbolic", "--seed", "3"], {}),
        ("full --memory-budget", RUN + ["--verify", "full", "--memory-budget", "1G"], {}),
        ("ring --group-size", RUN + ["--group-size", "2"], {}),
        ("ring --protocol", RUN + ["--protocol", "ll"], {}),
        ("--trace-ranks without --trace", RUN + ["--trace-ranks", "2"], {}),
        ("--trace-window without --trace", RUN + ["--trace-window", "0:1"], {}),
        ("--json and --trace one path", RUN + ["--json", "same.json", "--trace", "same.json"], {}),
        ("--root on allreduce", RUN + ["--root", "0"], {}),
        ("--density on dense", RUN + ["--density", "1/8"], {}),
        ("sweep --workers with --scheduler", ["sweep", "tiny.toml", "--workers", "7", "--scheduler",
                                              "tcp://127.0.0.1:1"], {"tiny.toml": _sweep_toml()}),
        ("sweep --dry-run --workers", ["sweep", "tiny.toml", "--dry-run", "--workers", "2"],
         {"tiny.toml": _sweep_toml()}),
        ("bench -o max", ["bench", "--topology", "abci", "-o", "max"], {}),
        ("run without size", ["run", "--topology", "abci", "--algorithm", "ring"], {}),
    ]
    return [Case(n, "option-use rule", a, files=f) for n, a, f in rows]


def _run(**over) -> list:
    """``run`` on one ABCI node, ring, 1 KiB, with ``flag=value`` overrides (``None`` drops one)."""
    opts = {"--topology": "abci", "--nodes": "1", "--algorithm": "ring", "--bytes": "1K", **over}
    return ["run"] + [x for k, v in opts.items() if v is not None for x in (k, v)]


def _bad_values() -> list:
    bad = ["", "-1", "0x", "1e400", "nan", "inf", "-inf", "abc", "1Q", "9" * 30, "1/0", " "]
    cases = []
    for flag in ("--elements", "--bytes", "--chunk-size", "--gpus", "--nodes", "--group-size", "--seed",
                 "--channels", "--root", "--density", "--k", "--overlap", "--memory-budget"):
        for v in bad:
            over = {flag: v, "--bytes": None} if flag == "--elements" else {flag: v}
            cases.append(Case(f"{flag} {v!r}", "bad value", _run(**over)))
    for flag, v in (("--dtype", "complex64"), ("--profile", "nosuch"), ("--placement", "nosuch.txt"),
                    ("--topology", "nosuch"), ("--algorithm", "nosuch"), ("--collective", "nosuch"),
                    ("--topology-opt", "nosuch=1"), ("--topology-opt", "=1"), ("--topology-opt", "x"),
                    ("--verify", "half"), ("--routing", "random"), ("--timing", "late")):
        cases.append(Case(f"{flag} {v!r}", "bad value", _run(**{flag: v})))
    return cases


def _graph_json(bandwidth, depth: int = 0) -> bytes:
    g = {"directed": False, "multigraph": False, "graph": {},
         "nodes": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"}],
         "links": [{"source": "g0", "target": "g1", "bandwidth": "BW", "latency": 1e-6}]}
    text = json.dumps(g).replace('"BW"', str(bandwidth) if not isinstance(bandwidth, str) else bandwidth)
    if depth:
        text = text.replace('"graph": {}', '"graph": {"x": ' + "[" * depth + "]" * depth + "}")
    return text.encode()


def _hostile_files() -> list:
    """Every file-reading option against hostile files."""
    kinds = {
        "int400.json": _graph_json("1" + "0" * 400),
        "int5000.json": _graph_json("1" + "0" * 5000),
        "nested.json": _graph_json(1e11, depth=100000),
        "nested.graphml": b"<graphml>" + b"<a>" * 100000 + b"</a>" * 100000 + b"</graphml>",
        "binary.json": bytes(range(256)) * 64,
        "empty.json": b"",
        "notutf8.json": b'{"a": "\xff\xfe"}',
        "huge.json": ("size", 327 * 2**20),
        "dangling.json": ("symlink", "missing/none.json"),
        "loop.json": ("symlink", "loop.json"),
        "dir.json": ("dir",),
    }
    nested_toml = b"a = " + b"[" * 100000 + b"]" * 100000 + b"\n"
    dotted_toml = b"[fixed]\n" + b".".join([b"k"] * 5000) + b" = 1\n"
    cases = []
    for name, content in kinds.items():
        f = {name: content}
        cases.append(Case(f"--topology-file {name}", "hostile file", ["run", "--topology-file", name,
                                                                     "--algorithm", "ring", "--bytes", "1K"], files=f))
        cases.append(Case(f"--utilization-from {name}", "hostile file",
                          ["draw-topology", "--topology", "abci", "-o", "d.png", "--utilization-from", name],
                          files=f))
        cases.append(Case(f"--placement {name}", "hostile file", RUN + ["--placement", name], files=f))
        cases.append(Case(f"compare {name}", "hostile file", ["compare", name], files=f))
        # an empty profile is a valid one: every key has its default (the ideal network)
        cases.append(Case(f"--profile {name}.toml", "hostile file", RUN + ["--profile", name + ".toml"],
                          expect="ok" if name == "empty.json" else "error", files={name + ".toml": content}))
        cases.append(Case(f"sweep {name}.toml", "hostile file", ["sweep", name + ".toml", "--out", "s.csv"],
                          files={name + ".toml": content}))
        cases.append(Case(f"job {name}.toml", "hostile file", ["job", name + ".toml"], files={name + ".toml": content}))
    for name, content in (("nested.toml", nested_toml), ("dotted.toml", dotted_toml)):
        for cmd in (["sweep", name, "--out", "s.csv"], ["job", name], RUN + ["--profile", name]):
            cases.append(Case(f"{cmd[0]} {name}", "hostile file", cmd, files={name: content}))
    return cases


def _outputs() -> list:
    rows = []
    for flag in ("--json", "--trace"):
        rows += [(f"{flag} dangling symlink into a missing dir", RUN + [flag, "dl.json"],
                  {"dl.json": ("symlink", "missing/out.json")}),
                 (f"{flag} a directory", RUN + [flag, "outdir"], {"outdir": ("dir",)}),
                 (f"{flag} missing directory", RUN + [flag, "missing/x.json"], {}),
                 (f"{flag} symlink loop", RUN + [flag, "lp.json"], {"lp.json": ("symlink", "lp.json")}),
                 (f"{flag} /dev/full (ENOSPC)", RUN + [flag, "/dev/full"], {}),
                 (f"{flag} /proc (read-only)", RUN + [flag, "/proc/version"], {})]
    rows += [("draw-topology -o dangling", ["draw-topology", "--topology", "abci", "-o", "dd.png"],
              {"dd.png": ("symlink", "missing/d.png")}),
             ("draw-topology -o bad suffix", ["draw-topology", "--topology", "abci", "-o", "d.txt"], {}),
             ("sweep --out /dev/full", ["sweep", "tiny.toml", "--out", "full.csv", "--workers", "1"],
              {"tiny.toml": _sweep_toml(), "full.csv": ("symlink", "/dev/full")}),
             ("bench --json /dev/full", ["bench", "--topology", "abci", "-b", "1K", "-e", "1K", "--json", "/dev/full"],
              {}),
             ("bench --csv and --json one path", ["bench", "--topology", "abci", "-b", "1K", "-e", "1K", "--json",
                                                  "b.out", "--csv", "b.out"], {})]
    return [Case(n, "output path", a, files=f) for n, a, f in rows]


def _sweep_toml(**grid) -> bytes:
    g = {"algorithm": ["ring"], "elements": ["1K"], **grid}
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in g.items())
    return f'[fixed]\ntopology = "abci"\nverify = "symbolic"\n[grid]\n{body}\n'.encode()


def _huge_grid() -> bytes:
    grid = {"algorithm": ["ring", "ring-ring", "recursive-doubling", "rabenseifner"],
            "elements": [str(i) for i in range(1, 1025)], "seed": list(range(1, 101)), "gpus": [1, 2, 3, 4],
            "nodes": [1, 2, 3, 4, 5], "dtype": ["float32", "float16", "float64", "int32"],
            "chunk_size": [str(i) for i in range(16, 136)]}
    return _sweep_toml(**grid)


def _sweeps() -> list:
    rows = [("unknown algorithm", {"algorithm": ["ring", "nosuch"]}),
            ("unknown collective", {"collective": ["allreduce", "nosuch"]}),
            ("unknown topology", {"topology_file": [], "algorithm": ["ring"]}),
            ("missing topology file", {"topology_file": ["missing.json"]}),
            ("bad size", {"elements": ["1K", "12Q"]}),
            ("zero size", {"elements": ["0"]}),
            ("bad dtype", {"dtype": ["float32", "complex"]}),
            ("bad profile", {"profile": ["ideal", "nosuch"]}),
            ("missing placement file", {"placement": ["nosuch.txt"]}),
            ("unknown key", {"nosuch": [1]}),
            ("empty list", {"nodes": []})]
    cases = []
    for name, grid in rows:
        if name == "unknown topology":
            content = _sweep_toml().replace(b'topology = "abci"', b'topology = "nosuch"')
        else:
            content = _sweep_toml(**grid)
        cases.append(Case(f"sweep {name}", "sweep grid", ["sweep", "g.toml", "--out", "g.csv", "--workers", "1"],
                          files={"g.toml": content}))
    cases.append(Case("sweep huge grid without --max-points", "sweep grid", ["sweep", "h.toml", "--out", "h.csv"],
                      files={"h.toml": _huge_grid()}))
    cases.append(Case("sweep huge grid --max-points 1", "sweep grid",
                      ["sweep", "h.toml", "--out", "h.csv", "--max-points", "1", "--workers", "1", "--quiet"],
                      expect="ok", files={"h.toml": _huge_grid()}))
    cases.append(Case("sweep huge grid --dry-run", "sweep grid", ["sweep", "h.toml", "--dry-run"], expect="ok",
                      files={"h.toml": _huge_grid()}))
    return cases


def _logs() -> list:
    rows = {"nan": _log_row(1024, "nan"), "inf": _log_row(1024, "inf"), "negative size": _log_row(-1024),
            "max op": _log_row(1024, op="max"), "text size": _log_row("12x"),
            "no rows": ""}
    cases = [Case(f"compare log with {k}", "nccl-tests log", ["compare", "l.txt", "--topology", "dgx-h100"],
                  files={"l.txt": (LOG_HEAD + _log_row(2048) + v).encode()}) for k, v in rows.items()]
    cases.append(Case("compare 1 GB log", "nccl-tests log", ["compare", "big.txt"], files={"big.txt": ("size", 2**30)}))
    return cases + _large_logs()


#: a published log (2 x p4d.24xlarge, 16 A100, allreduce) that the large logs wrap
P4D = Path(__file__).resolve().parent / "nccl-tests" / "p4d-a100x8-2node-efa_allreduce_awsdlami.txt"
#: an NCCL_DEBUG=INFO line as NCCL prints them by the million on a large job (100 bytes)
INFO = b"ip-172-31-1-2:1234:1250 [3] NCCL INFO Channel 07/32 :    0   1   2   3   4   5   6   7   8   9  10  11\n"


def _large_logs() -> list:
    """Logs that may be large and are streamed: a legitimate 100 MiB NCCL_DEBUG=INFO log (read
    whole within the limits: a missing --section is the error after the last line; with sizes
    up to 64 bytes it runs), one over the limit, a sparse one (no newline), 1001 tables."""
    text = P4D.read_bytes()
    head, _, rows = text.partition(b"# columns:")
    info = ("repeat", head, INFO, 100 * 2**20 // len(INFO), b"# columns:" + rows)
    dgx = ["--topology", "dgx-h100", "--nodes", "2"]
    return [Case("compare 100 MiB INFO log --section 2", "nccl-tests log", ["compare", "info.txt", "--section", "2", *dgx],
                 files={"info.txt": info}),
            Case("compare 100 MiB INFO log --max-size 64", "nccl-tests log",
                 ["compare", "info.txt", "--max-size", "64", *dgx], expect="ok", files={"info.txt": info}),
            Case("compare 200 MiB INFO log", "nccl-tests log", ["compare", "info.txt", *dgx],
                 files={"info.txt": ("repeat", head, INFO, 200 * 2**20 // len(INFO), b"# columns:" + rows)}),
            Case("compare 100 MiB sparse log", "nccl-tests log", ["compare", "big.txt"],
                 files={"big.txt": ("size", 100 * 2**20)}),
            Case("compare log of 1001 tables", "nccl-tests log", ["compare", "many.txt", *dgx],
                 files={"many.txt": b"\n".join([text] * 1001)})]


def _guards() -> list:
    rows = [("gb200-nvl72 --nodes 4000", ["run", "--topology", "gb200-nvl72", "--nodes", "4000", "--algorithm", "ring",
                                          "--bytes", "1M"]),
            ("abci --nodes 100000", ["run", "--topology", "abci", "--nodes", "100000", "--algorithm", "ring",
                                     "--bytes", "1M"]),
            ("dense full 1G on 64 ranks", ["run", "--topology", "abci", "--nodes", "16", "--algorithm", "ring",
                                           "--elements", "1G", "--verify", "full"]),
            ("bench to 16G on 1024 ranks", ["bench", "--topology", "abci", "--nodes", "256", "-b", "1M", "-e", "16G"]),
            ("topologies --show huge", ["topologies", "--show", "abci", "--nodes", "1000000"])]
    return [Case(n, "guard", a) for n, a in rows]


def all_cases() -> list:
    """Every input of the campaign."""
    cases = (_repeated_options() + _option_use() + _bad_values() + _hostile_files() + _outputs() + _sweeps()
             + _logs() + _guards())
    cases.append(Case("a run that fits", "control", RUN + ["--quiet"], expect="ok"))
    return cases


def fast_cases() -> list:
    """A small subset, one or two of each category (the test suite runs these)."""
    wanted = ("run --json twice", "topologies --nodes without --show", "--elements '1e400'",
              "--topology-file int400.json", "--topology-file nested.json", "--utilization-from binary.json",
              "--json dangling symlink into a missing dir", "--json /dev/full (ENOSPC)", "sweep unknown algorithm",
              "sweep missing topology file", "sweep huge grid --max-points 1", "compare 1 GB log",
              "compare 100 MiB sparse log",
              "gb200-nvl72 --nodes 4000", "a run that fits")
    by_name = {c.name: c for c in all_cases()}
    return [by_name[n] for n in wanted]
