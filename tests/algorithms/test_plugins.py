"""``--plugin MODULE_OR_FILE`` and the ``simcollective.algorithms`` entry-point group: a
plugin's algorithms run through every command that takes one, a sweep's workers included;
a plugin that fails is one line naming it."""

import csv
import json
import multiprocessing
import sys
from pathlib import Path

import pytest

from simcollective.algorithms import load_all, plugins, registry
from simcollective.errors import UserInputError
from tests.conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLUGIN = FIXTURES / "plugin_allgather.py"
NAME = "plugin-neighbour-ring"
RUN = ["run", "--collective", "allgather", "--topology", "abci", "--bytes", "1M", "--json", "-"]


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test starts without the plugin and leaves the registry as it found it."""
    load_all()
    saved = (dict(registry.REGISTRY), dict(registry.ALGORITHMS), dict(plugins._LOADED))
    yield
    for table, old in zip((registry.REGISTRY, registry.ALGORITHMS, plugins._LOADED), saved):
        table.clear()
        table.update(old)


def test_run_with_a_plugin_file_equals_the_builtin_ring(capsys):
    code, out, err = run_cli(capsys, *RUN, "--algorithm", NAME, "--plugin", PLUGIN)
    assert code == 0, err
    mine = json.loads(out)
    code, out, err = run_cli(capsys, *RUN, "--algorithm", "ring")
    ring = json.loads(out)
    # the same messages in the same order as the package's ring: the same time to the bit
    assert mine["algorithm"] == NAME and mine["verification"] == ring["verification"]
    assert mine["time_s"] == ring["time_s"] and mine["messages"] == ring["messages"] == 4 * 3


def test_without_the_plugin_the_name_is_unknown(capsys):
    code, _, err = run_cli(capsys, "run", "--collective", "allgather", "--topology", "abci", "--bytes", "1M",
                           "--algorithm", NAME)
    assert code == 2 and NAME in err and len(err.strip().splitlines()) == 1


def test_bench_and_sweep_workers_see_the_plugin(capsys, tmp_path):
    code, out, err = run_cli(capsys, "bench", "--collective", "allgather", "--topology", "abci", "-b", "64K",
                             "-e", "256K", "-f", "4", "--algorithm", NAME, "--plugin", PLUGIN, "--json", "-")
    assert code == 0, err
    bench = json.loads(out)
    assert [r["algorithm"] for r in bench] == [NAME, NAME] and all(r["wrong"] == 0 for r in bench)
    cfg = tmp_path / "plug.toml"
    cfg.write_text('name = "plug"\n[fixed]\ntopology = "abci"\nnodes = 1\ncollective = "allgather"\n'
                   f'[grid]\nalgorithm = ["{NAME}", "ring"]\nbytes = ["64K", "256K"]\n')
    table = tmp_path / "plug.csv"
    code, out, err = run_cli(capsys, "sweep", cfg, "--out", table, "--workers", "2", "--quiet", "--plugin", PLUGIN)
    assert code == 0, err
    with open(table, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4 and all(r["ok"] == "True" for r in rows), [r["error"] for r in rows]
    t = {(r["algorithm"], int(r["bytes"])): float(r["time_s"]) for r in rows}
    assert t[(NAME, 65536)] == t[("ring", 65536)] and t[(NAME, 262144)] == t[("ring", 262144)]
    assert [r["time_us"] * 1e-6 for r in bench] == pytest.approx([t[(NAME, 65536)], t[(NAME, 262144)]], rel=1e-12)


def _registered_in_a_fresh_process(path, queue):
    from simcollective.sweeps import execution

    execution._worker_init(multiprocessing.parent_process().pid, (str(path),))
    queue.put((registry.get_algorithm(NAME, "allgather").name, registry.get_algorithm("ring", "allgather").name))


def test_a_spawned_worker_loads_the_plugin_it_is_given():
    ctx = multiprocessing.get_context("spawn")      # nothing inherited from this process
    queue = ctx.Queue()
    proc = ctx.Process(target=_registered_in_a_fresh_process, args=(PLUGIN, queue))
    proc.start()
    got = queue.get(timeout=120)
    proc.join(timeout=60)
    assert got == (NAME, "ring")


@pytest.mark.parametrize("spec,message", [
    (FIXTURES / "plugin_broken.py", "cannot be loaded: RuntimeError: this plugin is broken on purpose"),
    (FIXTURES / "plugin_empty.py", "registers no algorithm"),
    (FIXTURES / "no_such_plugin.py", "cannot be loaded: FileNotFoundError: no such file"),
    ("no_such_plugin_module", "cannot be loaded: ModuleNotFoundError: No module named 'no_such_plugin_module'"),
])
@pytest.mark.parametrize("command", [RUN + ["--algorithm", "ring"],
                                     ["bench", "--topology", "abci"],
                                     ["job", "no-such-job.toml"]])
def test_a_plugin_that_fails_is_one_line_before_any_work(capsys, spec, message, command):
    code, out, err = run_cli(capsys, *command, "--plugin", spec)
    assert code == 2 and out == ""
    assert err.startswith(f"simcollective: error: --plugin {str(spec)!r} ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_a_plugin_name_that_clashes_with_the_package_is_refused(tmp_path):
    clash = tmp_path / "clash.py"
    clash.write_text("from simcollective.algorithms import register\n\n"
                     "@register('ring', kind='dense', collective='allgather')\n"
                     "def ring(comm, x):\n    'A second ring.'\n    return x\n    yield\n")
    with pytest.raises(UserInputError, match="registered twice"):
        plugins.load_plugins([str(clash)])


class _EntryPoint:
    def __init__(self, name, value, load):
        self.name, self.value, self.load = name, value, load


def test_entry_points_register_and_a_broken_one_is_named(monkeypatch):
    import importlib.metadata

    def good():
        return plugins.load_plugin(str(PLUGIN))

    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group: [_EntryPoint("mine", "my_pkg.algos", good)] if group == plugins.ENTRY_POINT_GROUP
                        else [])
    assert plugins.load_entry_points() == [("allgather", NAME)]
    assert registry.get_algorithm(NAME, "allgather").name == NAME

    def bad():
        raise ImportError("cannot import name 'x'")

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [_EntryPoint("broken", "bad.mod", bad)])
    with pytest.raises(UserInputError, match=r"entry point 'broken' \(bad.mod\) of group "
                                             r"'simcollective.algorithms' cannot be loaded: ImportError"):
        plugins.load_entry_points()


def test_compare_simulates_a_plugin_algorithm(capsys):
    log = Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests" / "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt"
    argv = ["compare", log, "--topology", "dgx-b200", "--nodes", "2", "--profile", "ideal",
            "--min-size", "1M", "--max-size", "4M", "--json", "-"]
    code, out, err = run_cli(capsys, *argv, "--algorithm", NAME, "--plugin", PLUGIN)
    assert code == 0, err
    mine = json.loads(out)
    code, out, err = run_cli(capsys, *argv, "--algorithm", "ring")
    assert code == 0, err
    ring = json.loads(out)
    assert mine["algorithm"] == NAME and len(mine["rows"]) == len(ring["rows"]) == 3
    assert [r["simulated_time_us"] for r in mine["rows"]] == [r["simulated_time_us"] for r in ring["rows"]]


def test_an_installed_distribution_s_entry_point_is_loaded_by_every_command(capsys, tmp_path, monkeypatch):
    """A package installed with the entry point (its dist-info on the path, as pip leaves it)
    registers its algorithm when the package's own load: ``run`` names it without --plugin."""
    (tmp_path / "ep_algos.py").write_text(PLUGIN.read_text())
    info = tmp_path / "ep_algos-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-algos\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\nmine = ep_algos\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugins.load_entry_points() == [("allgather", NAME)]
    code, out, err = run_cli(capsys, *RUN, "--algorithm", NAME)
    assert code == 0, err
    assert json.loads(out)["algorithm"] == NAME
    monkeypatch.delitem(sys.modules, "ep_algos")
    (info / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\nbroken = ep_missing_module\n")
    with pytest.raises(UserInputError, match="entry point 'broken' .ep_missing_module. of group "
                                             "'simcollective.algorithms' cannot be loaded: ModuleNotFoundError"):
        plugins.load_entry_points()


def test_job_runs_a_plugin_algorithm(capsys, tmp_path):
    job = tmp_path / "job.toml"
    body = ('topology = "abci"\nnodes = 2\n[communicators.tp]\nrule = "tp"\nsize = 4\n'
            '[[steps]]\nname = "ag"\ncollective = "allgather"\ncommunicator = "tp"\nbytes = 262144\n'
            'algorithm = "{}"\n')
    job.write_text(body.format(NAME))
    code, out, err = run_cli(capsys, "job", job, "--plugin", PLUGIN, "--json", "-")
    assert code == 0, err
    mine = json.loads(out)
    job.write_text(body.format("ring"))
    code, out, err = run_cli(capsys, "job", job, "--json", "-")
    ring = json.loads(out)
    assert [s["algorithm"] for s in mine["steps"]] == [NAME]
    assert mine["makespan_s"] == ring["makespan_s"] and mine["verified"] is True


def test_algorithms_lists_a_plugin_s_algorithms(capsys):
    code, out, err = run_cli(capsys, "algorithms", "--collective", "allgather", "--plugin", PLUGIN)
    assert code == 0, err
    assert f"  {NAME:<24} Ring allgather written as a user would: P - 1 steps, step s passes block r - s to r + 1." \
        in out.splitlines()


def test_dask_workers_load_the_plugin(tmp_path):
    """Dask's worker processes are spawned: nothing of this process's registry reaches them,
    the sweep's plugin is loaded there from its absolute path."""
    distributed = pytest.importorskip("distributed")
    from simcollective.sweeps import run_sweep

    config = {"name": "dplug", "fixed": {"topology": "abci", "nodes": 1, "collective": "allgather", "bytes": "64K"},
              "grid": {"algorithm": [NAME, "ring"]}}
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster:
        df = run_sweep(config, tmp_path / "d.csv", scheduler=cluster.scheduler_address, progress=False,
                       plugins=[str(PLUGIN)])
    assert df["ok"].all(), df["error"].tolist()
    t = df.set_index("algorithm")["time_s"]
    assert t[NAME] == t["ring"]
