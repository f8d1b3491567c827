"""The run guard: estimates from the resolved plan, refusal beyond the wall limit, --yes."""

import pytest

from simcollective.errors import UserInputError
from tests.conftest import one_line_error, run_cli


def _plan(**kw):
    from simcollective.simulate import RunConfig, resolve

    return resolve(RunConfig(**{"topology": "abci", "nodes": 2, "algorithm": "ring", "elements": 2**16, **kw}))


def test_messages_are_the_algorithms_exact_count():
    from simcollective.guard import estimate_plan
    from simcollective.simulate import RunConfig, run

    plan = _plan()
    est = estimate_plan(plan)
    # ring allreduce: 2 (P - 1) steps of one message per rank
    assert est.messages == 2 * (plan.P - 1) * plan.P
    assert est.messages == run(RunConfig(topology="abci", nodes=2, algorithm="ring", elements=2**16)).fields["messages"]


def test_wall_grows_with_messages_and_data():
    from simcollective.guard import estimate_plan

    small, big = estimate_plan(_plan(nodes=2)), estimate_plan(_plan(nodes=8))
    assert big.messages > small.messages and big.wall_s > small.wall_s
    sym, full = estimate_plan(_plan(verify="symbolic")), estimate_plan(_plan(verify="full"))
    assert full.wall_s > sym.wall_s and full.bytes > sym.bytes


def test_refused_beyond_the_limit_in_one_line(capsys, monkeypatch):
    monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", "1e-9")
    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    line = one_line_error(capsys, ["run", "--nodes", "2", "--algorithm", "ring", "--bytes", "1M"],
                          "8 ranks", "messages", "wall time", "--yes")
    assert "limit" in line


def test_yes_runs_it(capsys, monkeypatch):
    monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", "1e-9")
    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    code, out, err = run_cli(capsys, "run", "--nodes", "2", "--algorithm", "ring", "--bytes", "1M", "--yes", "--quiet")
    assert code == 0, err
    assert "verified" in out


def test_a_huge_preset_is_refused_before_simulating(capsys, monkeypatch):
    """gb200-nvl72 --nodes 4000 (16,000 GPUs): ~5e8 messages, whose compiled arrays would not fit:
    hours on the SimPy path; refused, never simulated."""
    import simcollective.simulate as simulate

    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    monkeypatch.delenv("SIMCOLLECTIVE_WALL_LIMIT", raising=False)
    monkeypatch.setattr(simulate, "make_inputs", lambda plan: pytest.fail("the run was started"))
    one_line_error(capsys, ["run", "--topology", "gb200-nvl72", "--nodes", "4000", "--algorithm", "ring",
                            "--bytes", "1M"], "16000 ranks", "5.12e+08 messages", "h of wall time",
                   "beyond the 10 min limit", "--yes")


def test_a_run_of_a_minute_is_not_refused():
    """sparse-ring-ring on 1024 ranks of abci (the S4 benchmark) runs in about 75 s of CPU: the
    estimate stays under the 10-minute limit and the run is not refused."""
    from simcollective.guard import WALL_LIMIT, estimate_plan
    from simcollective.resolve import resolve
    from simcollective.run_config import RunConfig

    plan = resolve(RunConfig(topology="abci", nodes=256, algorithm="sparse-ring-ring", elements=32 * 2**20,
                             density=1 / 1024))
    assert 75 < estimate_plan(plan).wall_s < WALL_LIMIT


def test_bad_wall_limit(monkeypatch):
    from simcollective.guard import wall_limit

    for bad in ("x", "-1", "0", "nan"):
        monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", bad)
        with pytest.raises(UserInputError, match="SIMCOLLECTIVE_WALL_LIMIT"):
            wall_limit()


@pytest.mark.parametrize("cmd", [["bench", "--topology", "abci"], ["sweep", "x.toml"], ["job", "x.toml"],
                                 ["compare", "x.log"]])
def test_every_long_command_takes_yes(cmd):
    from simcollective.cli import build_parser

    args = build_parser().parse_args(cmd + ["--yes"])
    assert args.yes is True


def test_bench_and_job_are_refused_as_a_whole_before_the_first_run(capsys, monkeypatch):
    from pathlib import Path

    import simcollective.jobs.runner as runner
    import simcollective.simulate as simulate

    monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", "1e-9")
    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    for module in (simulate, runner):    # the job's runner holds its own name for it
        monkeypatch.setattr(module, "make_inputs", lambda plan: pytest.fail("a run was started"))
    one_line_error(capsys, ["bench", "--topology", "abci", "-b", "1K", "-e", "4K", "-f", "2"],
                   "these 3 sizes", "together", "--yes", "a smaller -e")
    job = Path(__file__).resolve().parent.parent / "experiments" / "job_tp_dp.toml"
    one_line_error(capsys, ["job", str(job)], "the job's", "collectives", "--yes", "fewer repeats")


def test_a_run_on_the_compiled_path_is_estimated_from_its_figure():
    """``direct`` alltoall of 1 GiB on 128 DGX H100 (1024 GPUs, 1,047,552 messages) runs on the
    compiled path in about half a minute of CPU: estimated from the compiled path's cost per
    message it is under the limit; from the SimPy path's (every flow in flight at once) it is
    not. An algorithm that does not record keeps the SimPy figure."""
    from simcollective.guard import COMPILED_LOAD_S, WALL_LIMIT, estimate_plan
    from simcollective.guard_table import COSTS
    from simcollective.resolve import resolve
    from simcollective.run_config import RunConfig

    plan = resolve(RunConfig(topology="dgx-h100", nodes=128, collective="alltoall", algorithm="direct",
                             bytes=2**30, profile="nccl"))
    simpy, compiled = estimate_plan(plan), estimate_plan(plan, compiled=True)
    assert simpy.wall_s > WALL_LIMIT > compiled.wall_s > COMPILED_LOAD_S
    assert compiled.messages == simpy.messages == 1024 * 1023
    tree = resolve(RunConfig(topology="abci", nodes=8, algorithm="nccl-tree", elements=2**20))
    assert COSTS[("allreduce", "nccl-tree")]["compiled_wall_per_message"] is None
    assert estimate_plan(tree, compiled=True) == estimate_plan(tree)


def test_the_command_line_estimates_the_path_the_run_takes(capsys, monkeypatch):
    """The same all-to-all from the command line passes the guard without --yes (the run is
    stopped where it would start); with --engine simpy it is refused."""
    import simcollective.simulate as simulate

    class Started(Exception):
        pass

    def started(plan):
        raise Started

    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    monkeypatch.delenv("SIMCOLLECTIVE_WALL_LIMIT", raising=False)
    monkeypatch.setattr(simulate, "make_inputs", started)
    args = ["run", "--topology", "dgx-h100", "--nodes", "128", "--collective", "alltoall", "--algorithm", "direct",
            "--bytes", "1G", "--profile", "nccl"]
    with pytest.raises(Started):
        run_cli(capsys, *args)
    one_line_error(capsys, args + ["--engine", "simpy"], "1024 ranks", "wall time", "--yes")


def test_a_compiled_run_is_estimated_with_its_arrays():
    """The compiled path holds its recording and arrays on top of the data: the estimate
    of a run that takes it counts them, per message, the NCCL figure for NCCL's algorithms
    across servers."""
    from simcollective.guard import estimate_plan
    from simcollective.memory import COMPILED_BYTES_PER_MESSAGE, COMPILED_BYTES_PER_MESSAGE_OTHER

    plan = _plan()
    simpy, compiled = estimate_plan(plan), estimate_plan(plan, compiled=True)
    assert compiled.bytes - simpy.bytes == simpy.messages * COMPILED_BYTES_PER_MESSAGE_OTHER
    nccl = _plan(topology="dgx-h100", algorithm="nccl-ring", profile="nccl")
    assert (estimate_plan(nccl, compiled=True).bytes - estimate_plan(nccl).bytes
            == estimate_plan(nccl).messages * COMPILED_BYTES_PER_MESSAGE)


def test_a_bench_past_the_limit_is_refused_after_its_largest_sizes_not_all(capsys, monkeypatch):
    """bench resolves its sizes largest first and only until their estimates pass the limit
    (a thousand sizes on a large machine took half a minute to be refused): here the largest
    alone passes it, and one more is read to tell that the total is a floor."""
    import simcollective.simulate as simulate

    monkeypatch.setenv("SIMCOLLECTIVE_WALL_LIMIT", "1e-9")
    monkeypatch.delenv("SIMCOLLECTIVE_YES", raising=False)
    sizes = []
    real = simulate.resolve

    def counting(config, *a, **kw):
        sizes.append(config.elements)
        return real(config, *a, **kw)

    monkeypatch.setattr(simulate, "resolve", counting)
    one_line_error(capsys, ["bench", "--topology", "abci", "-b", "1K", "-e", "1M", "-f", "2"],
                   "these 11 sizes need more than", "so far", "--yes")
    assert sizes[-3:] == [1, 2**18, 2**17], sizes   # (one float32 rank's elements of 1 MiB, then 512 KiB)
