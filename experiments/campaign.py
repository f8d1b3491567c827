"""The attack campaign: every input of :mod:`experiments.campaign_inputs` run as a
``simcollective`` subprocess in a directory of its own, its wall time and peak memory
measured (``wait4``), and classified:

* ``traceback``: a Python traceback on stderr, or an exit status other than 0, 2, 3, 4, 5;
* ``silent``: an input that must be refused ran with exit 0 (or one that must run was refused);
* ``late``: an error after more than 5 s of CPU time (the process and its workers, from
  ``getrusage`` in the child) or 5 s of wall time, or above 1 GiB of memory, or no answer in
  60 s. Wall time on a shared machine counts the other users' load too, so the wall time
  judged (``wall_s``) is the elapsed time less the time the process waited for a CPU (the
  kernel's ``run_delay``, /proc/self/schedstat; ``raw_wall_s`` and ``cpu_wait_s`` are kept):
  what it would take on an idle machine. An error still over 5 s (and under 5 s of CPU) is
  run again alone, up to twice, and its fastest try is the one judged (every try is recorded,
  with the load average);
* ``multiline``: an error of more than one line;
* ``lock bypass``: a second sweep wrote a table a running sweep holds (through a symlink,
  a ``..`` path, a symlinked directory or a hard link in another directory);
* the ``fault`` scenario (:func:`erofs_scenario`, as root): a sweep whose directory turns
  read-only mid-run must stop with one line and resume to the rows of an undisturbed sweep;
* ``clean``: what was expected, within the limits.

Run: ``python experiments/campaign.py [--fast] [--jobs N] [--json results.json]`` (the full campaign
takes a few minutes; ``--fast``, the subset the test suite runs, judges CPU time and memory but not
wall time, which the suite's machine does not control); it prints the counts per class and per category and exits 1 on any
traceback, silent ignore, late error, multi-line error or lock bypass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from experiments.campaign_inputs import all_cases, fast_cases  # noqa: E402

__all__ = ["run_case", "classify", "lock_scenarios", "main", "BAD"]

LATE_S, LATE_BYTES, TIMEOUT_S = 5.0, 2**30, 60.0
#: how many times an error late by wall time alone is run again, alone, before it counts as late
WALL_RETRIES = 2
#: the classes that fail the campaign
BAD = ("traceback", "silent", "late", "multiline", "lock bypass")
#: the child: ``simcollective`` that writes its peak RSS (and its workers'), its CPU time and the
#: time it waited for a CPU (``run_delay`` of /proc/self/schedstat) to $CAMPAIGN_RSS at exit
#: (its own peak from /proc's VmHWM where there is one: ru_maxrss of RUSAGE_SELF keeps the peak
#: of the process it was forked from across exec, a large pytest process's included)
MAIN = ("import atexit, os, resource, sys\n"
        "def _hwm():\n"
        "    try:\n"
        "        line = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "        return int(line.split()[1])\n"
        "    except (OSError, IndexError, ValueError):\n"
        "        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "def _rss():\n"
        "    r = max(_hwm(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "    cpu = sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)\n"
        "              for f in ('ru_utime', 'ru_stime'))\n"
        "    try:\n"
        "        wait = int(open('/proc/self/schedstat').read().split()[1]) / 1e9\n"
        "    except (OSError, IndexError, ValueError):\n"
        "        wait = 0.0\n"
        "    open(os.environ['CAMPAIGN_RSS'], 'w').write(f'{r * 1024} {cpu} {wait}')\n"
        "atexit.register(_rss)\n"
        "from simcollective.cli import main\n"
        "sys.exit(main())\n")


def _write_files(where: Path, files: dict) -> None:
    for name, content in files.items():
        path = where / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif content[0] == "symlink":
            os.symlink(content[1], path)
        elif content[0] == "size":
            with open(path, "wb") as fh:
                fh.truncate(content[1])
        elif content[0] == "dir":
            path.mkdir()
        elif content[0] == "repeat":          # ("repeat", head, line, times, tail): a large text file
            with open(path, "wb") as fh:
                fh.write(content[1])
                for _ in range(content[3] // 1000):
                    fh.write(content[2] * 1000)
                fh.write(content[2] * (content[3] % 1000) + content[4])


def _spawn(argv, cwd):
    # the guard's defaults: a --yes or a wall limit of the calling process must not leak in
    env = {k: v for k, v in os.environ.items() if k not in ("SIMCOLLECTIVE_YES", "SIMCOLLECTIVE_WALL_LIMIT")}
    env["CAMPAIGN_RSS"] = str(Path(cwd) / f".rss.{time.monotonic_ns()}")
    proc = subprocess.Popen([sys.executable, "-c", MAIN, *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    proc.rss_file = env["CAMPAIGN_RSS"]
    return proc


def run_case(case, root: Path) -> dict:
    """Run one case in a fresh directory under ``root``; its exit code, output and resources."""
    where = Path(tempfile.mkdtemp(dir=root))
    _write_files(where, case.files)
    t0 = time.monotonic()
    proc = _spawn(case.argv, where)
    out, err, (rss, cpu, wait), code = _wait(proc)
    wall = time.monotonic() - t0
    return {"name": case.name, "category": case.category, "expect": case.expect, "code": code,
            "wall_s": wall - wait, "raw_wall_s": wall, "cpu_wait_s": wait, "cpu_s": cpu, "rss": rss,
            "stderr": err[-2000:], "stdout_lines": out.count("\n")}


def _wait(proc) -> tuple:
    """``(stdout, stderr, (peak rss in bytes, CPU s, CPU wait s), exit code)`` of a child (killed
    after the timeout)."""
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    try:
        rss, cpu, wait = Path(proc.rss_file).read_text().split()
        rss, cpu, wait = int(rss), float(cpu), float(wait)
    except (OSError, ValueError):      # killed: no figures (the timeout classes it late)
        rss, cpu, wait = 0, TIMEOUT_S, 0.0
    return out.decode(errors="replace"), err.decode(errors="replace"), (rss, cpu, wait), proc.returncode


def classify(r: dict, wall: bool = True) -> str:
    """The class of one result (see the module docstring); ``wall=False``: errors are judged
    late by CPU time and memory only (the fast subset the test suite runs)."""
    err = r["stderr"]
    if "Traceback (most recent call last)" in err or r["code"] not in (0, 2, 3, 4, 5):
        return "traceback"
    if r.get("raw_wall_s", r["wall_s"]) > TIMEOUT_S:
        return "late"
    if (r["expect"] == "error") != (r["code"] != 0):
        return "silent"
    if r["code"] != 0:
        if r["cpu_s"] > LATE_S or (wall and r["wall_s"] > LATE_S) or r["rss"] > LATE_BYTES:
            return "late"
        if len([line for line in err.splitlines() if line.strip()]) != 1:
            return "multiline"
    return "clean"


def _slow_sweep() -> bytes:
    """A sweep of minutes: 120 ring points of 128 ranks (it is killed once the lock is tried)."""
    sizes = ", ".join(f'"{i}M"' for i in range(1, 121))
    return (b'[fixed]\ntopology = "abci"\nnodes = 32\nverify = "symbolic"\nalgorithm = "ring"\n'
            b'[grid]\nelements = [' + sizes.encode() + b']\n')


def lock_scenarios(root: Path) -> list:
    """A sweep holds ``d/real.csv``; a second sweep on the same table by other names must be refused."""
    where = Path(tempfile.mkdtemp(dir=root))
    (where / "d").mkdir()
    (where / "g.toml").write_bytes(_slow_sweep())
    (where / "one.toml").write_bytes(_slow_sweep().replace(b'nodes = 32', b'nodes = 1').split(b"[grid]")[0]
                                     + b'[grid]\nelements = ["1K"]\n')
    # the table exists (a finished one-point sweep) so that another directory can hold a hard link to it
    _out, err, _res, code = _wait(_spawn(["sweep", "one.toml", "--out", "real.csv", "--workers", "1", "--quiet"], where))
    if code != 0:
        raise RuntimeError(f"the sweep that writes the table failed: {err[-300:]!r}")
    os.link(where / "real.csv", where / "d" / "hard.csv")
    os.symlink("real.csv", where / "link.csv")
    os.symlink(".", where / "dirlink")
    first = _spawn(["sweep", "g.toml", "--out", "real.csv", "--workers", "1", "--quiet"], where)
    deadline = time.monotonic() + 30
    while not (where / ".real.csv.lock").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    if first.poll() is not None:
        raise RuntimeError(f"the first sweep ended before the lock was tried: {first.communicate()[1][-300:]!r}")
    results = []
    for name, out in (("symlink", "link.csv"), ("dot-dot path", "d/../real.csv"),
                      ("symlinked dir", "dirlink/real.csv"), ("hard link in another directory", "d/hard.csv")):
        if first.poll() is not None:
            raise RuntimeError("the first sweep ended before every lock was tried; make it longer")
        t0 = time.monotonic()
        proc = _spawn(["sweep", "g.toml", "--out", out, "--workers", "1", "--quiet"], where)
        _out, err, (rss, cpu, _wait_s), code = _wait(proc)
        bypass = code == 0 or "being written by another sweep" not in err
        results.append({"name": f"second sweep through a {name}", "category": "lock", "expect": "error",
                        "code": code, "wall_s": time.monotonic() - t0, "cpu_s": cpu, "rss": rss,
                        "stderr": err[-2000:],
                        "class": "lock bypass" if bypass else "clean"})
    first.kill()
    first.communicate()
    return results


#: a sweep whose directory turns read-only mid-run, for real: in a private mount namespace
#: (``unshare -m``, root), a read-only bind mount is laid over the sweep's directory once three
#: points are in the journal (a remount of a file system with open writers is refused: busy)
EROFS_SCRIPT = """set -u
X="$1/x"; M="$1/mnt"; mkdir -p "$X" "$M"; mount --bind "$X" "$M" || exit 90
cd "$1"
"$2" -c "$3" sweep g.toml --out "$M/r.csv" --workers 1 --quiet >/dev/null 2>err1.txt &
P=$!
for i in $(seq 1 900); do [ "$(cat "$M/.r.csv.journal" 2>/dev/null | wc -l)" -ge 3 ] && break; sleep 0.2; done
mount --bind -o ro "$X" "$M" || exit 91
wait $P; echo $? > code1.txt
umount "$M"
"$2" -c "$3" sweep g.toml --out "$M/r.csv" --workers 1 --quiet >/dev/null 2>err2.txt; echo $? > code2.txt
cp "$M/r.csv" resumed.csv
"$2" -c "$3" sweep g.toml --out direct.csv --workers 1 --quiet >/dev/null 2>&1
"""


def erofs_scenario(root: Path) -> list:
    """The EROFS fault for real (see :data:`EROFS_SCRIPT`): one line and exit 2 when the
    directory turns read-only, then a resume that runs nothing twice and gives the rows of an
    undisturbed sweep; ``[]`` where a private mount namespace cannot be made (not root)."""
    import shutil

    where = Path(tempfile.mkdtemp(dir=root))
    (where / "g.toml").write_bytes(_slow_sweep().replace(b"nodes = 32", b"nodes = 16").split(b"[grid]")[0]
                                   + b'[grid]\nelements = [' + ", ".join(f'"{i}M"' for i in range(1, 21)).encode()
                                   + b"]\n")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return []
    env = {k: v for k, v in os.environ.items() if k not in ("SIMCOLLECTIVE_YES", "SIMCOLLECTIVE_WALL_LIMIT")}
    env["CAMPAIGN_RSS"] = str(where / ".rss")
    t0 = time.monotonic()
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", EROFS_SCRIPT, "sh", str(where),
                           sys.executable, MAIN], env=env, capture_output=True, timeout=600)
    if done.returncode >= 90:
        return []
    import pandas as pd

    err = (where / "err1.txt").read_text()
    codes = [(where / f"code{i}.txt").read_text().strip() for i in (1, 2)]
    resumed, direct = (pd.read_csv(where / n).sort_values("key").reset_index(drop=True)
                       for n in ("resumed.csv", "direct.csv"))
    same = resumed["key"].is_unique and resumed[["key", "time_s"]].equals(direct[["key", "time_s"]])
    good = codes == ["2", "0"] and "(EROFS)" in err and len(err.strip().splitlines()) == 1 and same
    return [{"name": "sweep directory turned read-only mid-run, then resumed", "category": "fault",
             "expect": "error", "code": int(codes[0] or 1), "wall_s": time.monotonic() - t0, "cpu_s": 0.0,
             "rss": 0, "stderr": err[-2000:] + f" (resume exit {codes[1]}, {len(resumed)} rows, identical: {same})",
             "class": "clean" if good else "traceback" if "Traceback" in err else "silent"}]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="rerun the attack inputs and count what goes wrong")
    ap.add_argument("--fast", action="store_true", help="the small subset the test suite runs")
    ap.add_argument("--json", metavar="PATH", help="write every result as JSON")
    ap.add_argument("--jobs", type=int, default=1, help="inputs run at once (an error slow in wall time is run again alone)")
    args = ap.parse_args(argv)
    cases = fast_cases() if args.fast else all_cases()
    wall = not args.fast           # the test suite's subset is not judged on time it cannot control
    with tempfile.TemporaryDirectory(prefix="campaign.") as tmp, ThreadPoolExecutor(max(1, args.jobs)) as pool:
        root = Path(tmp)
        load = os.getloadavg()
        results = list(pool.map(lambda case: run_case(case, root), cases))
        for case, r in zip(cases, results):
            if wall:
                _retry_if_slow(case, r, root)
            r["class"] = classify(r, wall)
            if r["class"] != "clean":
                print(f"  {r['class']:<11} {r['name']}: exit {r['code']}, {r['wall_s']:.1f} s wall, "
                      f"{r['cpu_s']:.1f} s CPU: {r['stderr'].strip().splitlines()[-1:] or ''}", flush=True)
        if not args.fast:
            results += lock_scenarios(root) + erofs_scenario(root)
    _report(results, args.json, load + os.getloadavg())
    return 1 if any(r["class"] in BAD for r in results) else 0


def _retry_if_slow(case, r: dict, root: Path) -> None:
    """An error over 5 s of wall time but not of CPU is run again alone (the pool is done by
    now), up to :data:`WALL_RETRIES` times; the fastest try counts, every try is kept in
    ``wall_tries``."""
    r["wall_tries"] = [r["wall_s"]]
    for _ in range(WALL_RETRIES):
        if r["code"] == 0 or r["wall_s"] <= LATE_S or r["cpu_s"] > LATE_S:
            return
        again = run_case(case, root)
        r["wall_tries"].append(again["wall_s"])
        if again["wall_s"] < r["wall_s"]:
            r.update({k: v for k, v in again.items() if k != "wall_tries"})


def _report(results: list, path, load=()) -> None:
    counts = Counter(r["class"] for r in results)
    print(f"{len(results)} inputs: " + ", ".join(f"{counts.get(c, 0)} {c}" for c in ("clean", *BAD)))
    by_cat = Counter((r["category"], r["class"]) for r in results)
    for cat in sorted({r["category"] for r in results}):
        row = ", ".join(f"{n} {cls}" for (c, cls), n in sorted(by_cat.items()) if c == cat)
        print(f"  {cat:<16} {row}")
    slowest = max((r for r in results if "raw_wall_s" in r), key=lambda r: r["wall_s"])
    errors = [r for r in results if r["code"] != 0 and "raw_wall_s" in r] or results
    cpu = max(errors, key=lambda r: r["cpu_s"])
    wall = max(errors, key=lambda r: r["wall_s"])
    raw = max(errors, key=lambda r: r.get("raw_wall_s", r["wall_s"]))
    retried = sum(len(r.get("wall_tries", ())) > 1 for r in results)
    print(f"  slowest: {slowest['name']} {slowest['wall_s']:.2f} s wall, {slowest['cpu_s']:.2f} s CPU; "
          f"peak memory of any input: {max(r['rss'] for r in results) / 2**20:.0f} MiB")
    print(f"  errors: the most CPU {cpu['cpu_s']:.2f} s ({cpu['name']}); the longest wall less CPU wait "
          f"{wall['wall_s']:.2f} s ({wall['name']}); the longest elapsed {raw.get('raw_wall_s', 0):.2f} s "
          f"({raw['name']}, of which {raw.get('cpu_wait_s', 0):.2f} s waiting for a CPU); {retried} run again alone; "
          "load average " + " ".join(f"{x:.1f}" for x in load) + " (1/5/15 min, at the start then at the end)")
    if path:
        Path(path).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
