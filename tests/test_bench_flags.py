"""nccl-tests' flags on ``simcollective bench``: each with nccl-tests' meaning in a
simulation (ranks from -t/-g/--procs, -a over processes, -c 0, -n/-w/-m echoed, every dtype
but the 1-byte ones) or refused in one line naming it."""

import json

import pytest

from simcollective.bench_flags import REFUSED, combine_times
from simcollective.simulate import RunConfig, run
from tests.conftest import run_cli

BC = ["bench", "--collective", "broadcast", "--topology", "dgx-h100", "--nodes", "2", "-b", "1M", "-e", "4M", "-f", "4"]


def _rows(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json", "-")
    assert code == 0, err
    return json.loads(out)


def _table(capsys, *argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    return out


def test_combine_times_by_hand():
    finish = [1.0, 2.0, 3.0, 5.0]          # two processes of two ranks: times 2 and 5
    assert [combine_times(finish, 2, a) for a in (0, 1, 2, 3)] == [2.0, 3.5, 2.0, 5.0]
    assert combine_times(finish, 1, 1) == 11.0 / 4 and combine_times(finish, 4, 0) == 5.0


@pytest.mark.parametrize("flags,ranks,threads,gpus,pids", [
    ([], 16, 1, 1, list(range(16))),                               # mpirun -np 16 ... -g 1
    (["-g", "8"], 16, 1, 8, [0] * 8 + [1] * 8),                     # mpirun -np 2 ... -g 8
    (["-t", "2", "-g", "2"], 16, 2, 2, [r // 4 for r in range(16)]),
    (["--procs", "1", "-g", "4"], 4, 1, 4, [0] * 4),                  # one process, 4 GPUs
    (["--procs", "3", "-t", "1", "-g", "2"], 6, 1, 2, [0, 0, 1, 1, 2, 2]),
])
def test_ranks_are_procs_x_threads_x_gpus(capsys, flags, ranks, threads, gpus, pids):
    out = _table(capsys, *BC, *flags)
    assert f"broadcast, algorithm ring, {ranks} ranks on dgx-h100 (2 nodes)" in out
    assert f"# nThread {threads} nGpus {gpus} minBytes 1048576 maxBytes 4194304 step: 4(factor)" in out
    devices = [ln.split() for ln in out.splitlines() if ln.startswith("#  Rank")]
    assert [int(d[6]) for d in devices] == pids
    # the device index is the GPU's place in its server: 0..7 on node0, then again on node1
    assert [int(d[10]) for d in devices] == [r % 8 for r in range(ranks)]


def test_average_combines_the_processes_times_as_nccl_tests(capsys):
    report = run(RunConfig(topology="dgx-h100", nodes=2, collective="broadcast", algorithm="ring", bytes=4 << 20))
    finish = report.result.finish
    per_proc = [max(finish[i:i + 8]) for i in (0, 8)]               # -g 8: two processes of 8 GPUs
    want = {"0": per_proc[0], "1": sum(per_proc) / 2, "2": min(per_proc), "3": max(per_proc)}
    for a, t in want.items():
        row = _rows(capsys, *BC, "-g", "8", "-a", a)[-1]
        assert row["time_us"] == t * 1e6
        assert row["algbw"] == row["size"] / t / 1e9 == row["busbw"]      # broadcast: busbw = algbw
    assert want["3"] == report["time_s"] and want["2"] < want["3"]       # the ranks do finish apart
    one_per_rank = _rows(capsys, *BC)[-1]                               # default -a 1 over 16 processes
    assert one_per_rank["time_us"] == sum(finish) / 16 * 1e6


def test_iters_warmup_agg_and_check_are_echoed_and_change_no_time(capsys):
    plain = _rows(capsys, *BC)
    assert _rows(capsys, *BC, "-n", "7", "-w", "3", "-m", "1", "-c", "2", "-G", "0") == plain
    out = _table(capsys, *BC, "-n", "7", "-w", "3", "-c", "2", "-G", "0")
    assert "warmup iters: 3 iters: 7 agg iters: 1 validation: 2 graph: 0" in out
    assert "warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0" in _table(capsys, *BC)


def test_check_0_runs_size_only_and_prints_wrong_na(capsys):
    checked, unchecked = _rows(capsys, *BC), _rows(capsys, *BC, "-c", "0")
    assert [r["time_us"] for r in unchecked] == [r["time_us"] for r in checked]
    assert all(r["wrong"] == "N/A" and r["verification"].startswith("symbolic") for r in unchecked)
    table = _table(capsys, *BC, "-c", "0")
    rows = [ln.split() for ln in table.splitlines() if not ln.startswith("#")]
    assert all(r[8] == "N/A" and r[12] == "N/A" for r in rows)
    assert "validation: 0 graph: 0" in table


@pytest.mark.parametrize("nccl,same", [("bfloat16", "half"), ("uint32", "int32"), ("int64", "double"),
                                       ("uint64", "double")])
def test_stand_in_types_time_as_their_width(capsys, tmp_path, nccl, same):
    # one run of the stand-in type gives its table (stdout) and its rows (--json to a file)
    table = _table(capsys, *BC, "-d", nccl, "--json", tmp_path / "mine.json")
    mine, theirs = json.loads((tmp_path / "mine.json").read_text()), _rows(capsys, *BC, "-d", same)
    assert [r["type"] for r in mine] == [nccl] * 2
    assert [(r["size"], r["count"], r["time_us"]) for r in mine] == [(r["size"], r["count"], r["time_us"])
                                                                       for r in theirs]
    assert f"# {nccl} runs with" in table


@pytest.mark.parametrize("flags", [f for f, _d, _w, _y in REFUSED])
def test_flags_without_meaning_in_a_simulation_are_refused(capsys, flags):
    for flag in flags:
        code, out, err = run_cli(capsys, *BC, flag, "1")
        assert code == 2 and out == ""
        assert err.startswith(f"simcollective: error: {'/'.join(flags)} 1: not simulated: ")
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv,message", [
    (["-m", "4"], "-m 4: aggregating operations in one NCCL group is not simulated"),
    (["-a", "4"], "-a 4 is out of range: give 0..3"),
    (["-t", "3"], "-t 3 x -g 1 = 3 GPUs per process does not divide the machine's 16 GPUs"),
    (["--procs", "3", "-g", "8"], "--procs 3 x -t 1 x -g 8 = 24 ranks: the machine has 16 GPUs"),
    (["-o", "max"], "-o 'max': only sum is simulated"),
    (["-r", "all"], "-r all: give one root per command"),
    (["-c", "0", "--verify", "full"], "--verify is not used with -c 0"),
    (["-c", "0", "--seed", "3"], "--seed is not used with -c 0"),
    (["-n", "0"], "-n"),
])
def test_bad_nccl_flags_are_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, *BC, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
