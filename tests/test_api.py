"""The Python API (simcollective.run/sweep/plot/draw_topology), same names as the CLI."""

import dataclasses
import doctest
import importlib
import json

import pytest

import simcollective as sc
from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.simulate import run_allreduce, RunConfig


def test_top_level_exports():
    from simcollective import RunConfig as RC, run_allreduce as ra  # noqa: F401

    assert ra is run_allreduce and RC is RunConfig
    for name in sc.__all__:
        assert getattr(sc, name) is not None
    with pytest.raises(AttributeError):
        sc.no_such_thing  # noqa: B018


def test_runconfig_takes_text_like_the_cli():
    c = RunConfig(elements="1M", nodes="2", density="1/128", seed="3", memory_budget="2G",
                  topology_opts="oversubscription=2", options={"chunk_size": "64K", "group_size": "4"})
    assert (c.elements, c.nodes, c.density, c.seed, c.memory_budget) == (2**20, 2, 1 / 128, 3, 2**31)
    assert c.topology_opts == {"oversubscription": "2"}
    assert c.options == {"chunk_size": 65536, "group_size": 4}
    with pytest.raises(UserInputError, match="--elements '1e400' is too large"):
        RunConfig(elements="1e400")


def test_run_same_result_as_cli(capsys):
    r = sc.run(topology="abci", nodes=2, algorithm="ring-ring", elements="64K", profile="cm02", group_size=4)
    assert main(["run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring-ring", "--elements", "64K",
                 "--profile", "cm02", "--group-size", "4", "--json", "-"]) == 0
    cli = json.loads(capsys.readouterr().out)
    d = r.to_dict()
    for key in ("time_s", "algbw", "busbw", "ranks", "messages", "phases", "options", "verification"):
        assert d[key] == cli[key], key
    assert d["options"] == {"group_size": 4}


def test_result_repr_is_compact_and_frames():
    r = sc.run(topology="abci", nodes=16, algorithm="ring", elements="64K")
    assert r["ranks"] == 64
    text = repr(r)
    assert len(text) < 200 and text.startswith("<Result ring allreduce on abci (16 nodes): 64 ranks")
    assert len(repr(run_allreduce(RunConfig(nodes=16, elements=2**16)))) < 200   # a plain Report too
    ph = r.phases
    assert list(ph.columns) == ["phase", "time_s", "share"]
    assert ph["time_s"].sum() == pytest.approx(r["time_s"], rel=1e-12)
    links = r.links
    assert list(links.columns) == ["link", "link_type", "bytes", "busy_s", "utilization"]
    assert len(links) == len(r.to_dict()["links"])
    assert links["utilization"].is_monotonic_decreasing
    assert "effective busbw" not in text
    json.dumps(r.to_dict(), allow_nan=False)


def test_sparse_repr_says_effective_busbw():
    r = sc.run(algorithm="sparse-ring", elements="64K", density="1/64")
    assert "effective busbw" in repr(r)


def test_run_unknown_keyword_lists_allowed():
    with pytest.raises(UserInputError, match="unknown keyword 'element'.*elements"):
        sc.run(algorithm="ring", element="1M")
    with pytest.raises(UserInputError, match="give algorithm="):
        sc.run(elements="1M")


def test_run_passes_every_runconfig_field_through(monkeypatch):
    """Fields others add to RunConfig (collective, root, study, ...) need no change to the API."""
    seen = {}

    def fake_run(config, *a, **k):
        seen["config"] = config
        from simcollective.simulate import Report

        return Report({"algorithm": "x", "topology": "t", "ranks": 1, "elements": 1, "dtype": "f", "time_s": 0.0,
                       "busbw": 0.0, "phases": {}, "links": []})

    import simcollective.api as api

    monkeypatch.setattr(api, "run_allreduce", fake_run)
    kwargs = {f.name: getattr(RunConfig(), f.name) for f in dataclasses.fields(RunConfig)}
    kwargs["algorithm"] = "ring"
    kwargs.pop("options")
    api.run(**kwargs)
    for key, value in kwargs.items():
        assert getattr(seen["config"], key) == value


def test_sweep_keywords_and_plot_into_ax(tmp_path):
    import matplotlib

    matplotlib.use("svg")           # a backend the library must not replace
    import matplotlib.pyplot as plt

    df = sc.sweep(algorithm=["ring", "ring-ring"], elements="64K", nodes=[1, 2])
    assert len(df) == 4 and df["ok"].all()
    assert set(df["algorithm"]) == {"ring", "ring-ring"} and sorted(set(df["nodes"])) == [1, 2]
    fig, ax = plt.subplots()
    got = sc.plot(df, x="nodes", hue="algorithm", ax=ax)
    assert got is fig and len(ax.get_lines()) == 2
    fig2 = sc.plot(df, x="nodes", hue="algorithm", out=tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0 and fig2 is not fig
    fig3 = sc.draw_topology("dgx1", 1, out=tmp_path / "t.png")
    assert fig3 is not None
    assert matplotlib.get_backend() == "svg"
    with pytest.raises(UserInputError, match="ax= draws one panel"):
        sc.plot(df, x="elements", hue="algorithm", facet="nodes", ax=ax)
    plt.close("all")


def test_sweep_needs_config_or_keywords():
    with pytest.raises(UserInputError, match="give a config"):
        sc.sweep()


@pytest.mark.parametrize("module", ["simcollective.api", "simcollective.parsing"])
def test_doctests(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_result_repr_names_the_runs_collective():
    r = sc.run(topology="abci", nodes=1, algorithm="ring", collective="allgather", elements="4K")
    assert repr(r).startswith("<Result ring allgather on abci (1 node): 4 ranks, 4096 x float32")


def test_load_plugins_and_a_sweep_with_them(tmp_path):
    from pathlib import Path

    import simcollective as sc
    from simcollective.algorithms import load_all, plugins, registry

    load_all()
    saved = (dict(registry.REGISTRY), dict(registry.ALGORITHMS), dict(plugins._LOADED))
    path = Path(__file__).resolve().parent / "fixtures" / "plugin_allgather.py"
    try:
        assert sc.load_plugins(str(path)) == [("allgather", "plugin-neighbour-ring")]
        r = sc.run(topology="abci", collective="allgather", algorithm="plugin-neighbour-ring", bytes="1M")
        assert r["time_s"] == sc.run(topology="abci", collective="allgather", algorithm="ring", bytes="1M")["time_s"]
        df = sc.sweep(topology="abci", collective="allgather", algorithm=["plugin-neighbour-ring"], bytes="64K",
                      plugins=[str(path)], out=tmp_path / "t.csv")
        assert df["ok"].all() and list(df["schema_version"]) == [1]
    finally:
        for table, old in zip((registry.REGISTRY, registry.ALGORITHMS, plugins._LOADED), saved):
            table.clear()
            table.update(old)
