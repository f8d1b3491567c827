"""The start-up scenario (benchmarks/startup.py, scenario ST) and the SMPI side by side
(benchmarks/smpi.py): behaviour only, nothing timed."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from benchmarks.targets import Context, README_WALL, STARTUP_CPU, evaluate


def _startup(cpu, wall=1.0):
    point = dict(first_event_cpu_s=cpu, cli_import_cpu_s=cpu / 2, interpreter_cpu_s=0.01, total_cpu_s=cpu + 1,
                 process_wall_s=wall, wall_s=wall, time_s=1e-3, ranks=16, repeats=5, command="run", startup=True)
    return point


def test_the_startup_scenario_runs_the_two_16_rank_commands_and_the_readme_command():
    from benchmarks.allreduce import scenarios
    from benchmarks.startup import README_COMMAND, STARTUP_COMMANDS

    pts = dict(scenarios({"ST"})["ST"])
    assert [kw["command"] for kw in pts.values()] == [*STARTUP_COMMANDS.values(), README_COMMAND]
    assert "--nodes 2 --algorithm nccl" in STARTUP_COMMANDS["dgx-h100 2 nodes nccl 1M nccl profile"]


def test_a_startup_point_reports_the_cpu_to_the_first_event_and_the_simulated_time():
    from benchmarks.startup import cli_point
    from simcollective.simulate import RunConfig, run_allreduce

    r = cli_point("run --topology abci --nodes 1 --algorithm ring --elements 4096", repeats=2)
    assert 0 < r["interpreter_cpu_s"] <= r["cli_import_cpu_s"] <= r["first_event_cpu_s"] <= r["total_cpu_s"]
    assert r["ranks"] == 4 and r["repeats"] == 2
    assert r["uncached_modules"] == 0     # bytecode written first, as an installation does
    ref = run_allreduce(RunConfig(topology="abci", nodes=1, algorithm="ring", elements=4096))
    assert r["time_s"] == ref.fields["time_s"]


def test_startup_targets_judge_the_slowest_command_and_the_readme_wall():
    ctx = Context({"ST/a": _startup(0.2), "ST/b": _startup(STARTUP_CPU + 0.01),
                   "ST/README first command": _startup(5.0, wall=README_WALL - 0.5)})
    rows = {t.name: met for t, _, met in evaluate(ctx)}
    assert rows["ST"] is False and rows["README"] is True
    ctx.results["ST/b"] = _startup(0.25)
    ctx.results["ST/README first command"] = _startup(5.0, wall=README_WALL + 0.5)
    rows = {t.name: met for t, _, met in evaluate(ctx)}
    assert rows["ST"] is True and rows["README"] is False


def test_the_smpi_script_says_when_simgrid_is_absent():
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}
    assert shutil.which("smpirun", path=env["PATH"]) is None
    proc = subprocess.run([sys.executable, "-m", "benchmarks.smpi"], env=env, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert proc.returncode == 0
    assert "SimGrid's SMPI is not installed" in proc.stdout and "apt-get install simgrid" in proc.stdout


@pytest.mark.parametrize("argv", [["--ranks", "16,x"], ["--ranks", "3"], ["--repeats", "0"]])
def test_the_smpi_script_rejects_bad_options(argv, capsys):
    from benchmarks.smpi import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "--ranks" in capsys.readouterr().err


def test_the_smpi_platform_is_simcollectives_fat_tree_route_for_route():
    from benchmarks.smpi import platform_xml
    from simcollective.network.routing import Router
    from simcollective.placement import resolve_placement
    from simcollective.simulate import RunConfig, build_graph

    xml, hosts = platform_xml(16)
    assert hosts == [f"h{i}" for i in range(16)]
    links = {k: (float(b), float(lat)) for k, b, lat in
             re.findall(r'<link id="([^"]+)" bandwidth="([^"]+)Bps" latency="([^"]+)s"/>', xml)}
    routes = re.findall(r'<route src="h(\d+)" dst="h(\d+)" symmetrical="NO">(.*?)</route>', xml)
    assert len(routes) == 16 * 15
    graph = build_graph(RunConfig(topology="fat-tree", nodes=16, algorithm="ring", elements=16))
    router, gpus = Router(graph), resolve_placement(graph, "linear")
    assert len([k for k in links if k.startswith("r")]) == len(router.capacity)
    for src, dst, body in routes:
        used = [links[u] for u in re.findall(r'<link_ctn id="([^"]+)"/>', body)]
        ours = router.route(gpus[int(src)], gpus[int(dst)])
        # the same binding capacity and the same total latency as simcollective's route
        assert min(b for b, _ in used) == ours.capacity
        assert sum(lat for _, lat in used) == pytest.approx(ours.latency, rel=1e-12)


def test_the_startup_script_judges_each_figure_against_its_target():
    from benchmarks.startup import _verdict

    assert _verdict(STARTUP_CPU - 0.01, STARTUP_CPU) == f"target < {STARTUP_CPU:g} s: met"
    assert _verdict(STARTUP_CPU, STARTUP_CPU).endswith("NOT MET")       # the target is strict, as in targets.py
    assert _verdict(README_WALL + 1, README_WALL).endswith("NOT MET")
