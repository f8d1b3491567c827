"""A plain 16-rank ``simcollective run`` imports what it runs and nothing else: the other
subcommands, the other algorithms, the compiled path, numba and the data-frame and plotting
libraries stay unloaded (each costs start-up time, more so without a bytecode cache)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from simcollective.cli import COMMANDS, build_parser

# run in a fresh interpreter: the command, then the modules it left loaded
CHILD = r"""
import json, sys
from simcollective.cli import main
status = main(sys.argv[1:])
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""

#: modules (and packages, with everything under them) a plain dense SimPy run does not need
NOT_NEEDED = ("numba", "llvmlite", "pandas", "pyarrow", "matplotlib", "tqdm", "dask", "scipy",
              "simcollective.sweeps", "simcollective.figures", "simcollective.drawings", "simcollective.bench",
              "simcollective.compare_command", "simcollective.job_command", "simcollective.p2p",
              "simcollective.validation", "simcollective.jobs", "simcollective.api", "simcollective.trace",
              "simcollective.runtime.compiled", "simcollective.data.moe", "simcollective.data.alltoallv",
              "simcollective.algorithms.plugins")


def _modules(*argv) -> list:
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["status"] == 0
    return out["modules"]


def _loaded(modules, name) -> list:
    return [m for m in modules if m == name or m.startswith(name + ".")]


@pytest.mark.parametrize("argv, algorithm", [
    (("run", "--topology", "abci", "--nodes", "4", "--algorithm", "ring", "--elements", "64K", "--quiet"),
     "simcollective.algorithms.allreduce.ring"),
    (("run", "--topology", "abci", "--nodes", "4", "--collective", "allgather", "--algorithm", "ring-ring",
      "--elements", "4K", "--quiet"), "simcollective.algorithms.allgather.ring_ring"),
])
def test_a_16_rank_run_imports_only_its_own_algorithm_and_no_heavy_module(argv, algorithm):
    modules = _modules(*argv)
    assert algorithm in modules
    assert [m for m in modules if m.startswith("simcollective.algorithms.") and m.count(".") == 3] == [algorithm]
    assert {name: _loaded(modules, name) for name in NOT_NEEDED} == {name: [] for name in NOT_NEEDED}


def test_nccl_run_loads_the_body_it_chose():
    modules = _modules("run", "--topology", "dgx-h100", "--nodes", "2", "--algorithm", "nccl", "--bytes", "1M",
                       "--profile", "nccl", "--quiet")
    bodies = [m for m in modules if m.startswith("simcollective.algorithms.allreduce.")]
    assert "simcollective.algorithms.allreduce.nccl" in bodies and len(bodies) == 2   # nccl and its choice
    assert _loaded(modules, "numba") == []


def test_the_whole_parser_has_every_command_and_one_command_builds_alone():
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert tuple(sub.choices) == COMMANDS
    for name in COMMANDS:
        alone = next(a for a in build_parser(name)._actions if a.dest == "command")
        assert tuple(alone.choices) == (name,)


def test_run_help_lists_every_algorithm_of_every_collective(capsys, monkeypatch):
    from simcollective.algorithms.registry import COLLECTIVES, algorithms_for

    monkeypatch.setenv("COLUMNS", "100000")     # one line per option: no name cut at its hyphens

    with pytest.raises(SystemExit):
        build_parser("run").parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for collective in COLLECTIVES:
        for name in algorithms_for(collective):
            assert name in text
    assert "allreduce sparse: dsar-split-allgather" in text


@pytest.mark.parametrize("given, kept", [(None, "0"), ("1", "1")])
def test_the_command_line_turns_numpy_huge_pages_off_unless_the_user_chose(given, kept):
    import os

    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if given is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = given
    code = "import os, sys, simcollective.cli; print('numpy' in sys.modules, os.environ['NUMPY_MADVISE_HUGEPAGE'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", kept]     # set before NumPy is imported, which reads it then


@pytest.mark.parametrize("given, kept", [(None, "1"), ("2", "2")])
def test_the_command_line_runs_numpy_with_one_blas_thread_unless_the_user_chose(given, kept):
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    # the process's threads once NumPy is loaded (Linux): OpenBLAS starts its pool at import
    code = ("import os, sys, simcollective.cli, numpy; print(os.environ['OPENBLAS_NUM_THREADS'], "
            "len(os.listdir('/proc/self/task')) if os.path.isdir('/proc/self/task') else -1)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    value, threads = out.split()
    assert value == kept
    if given is None and int(threads) >= 0:
        assert int(threads) == 1
