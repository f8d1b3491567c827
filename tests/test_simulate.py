"""``--engine``: the choice of execution path, end to end through the command line."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

RING = ("run", "--topology", "abci", "--nodes", "2", "--algorithm", "ring", "--elements", "64K")


def test_compiled_engine_is_named_and_matches_simpy(capsys):
    code, out, _ = run_cli(capsys, *RING, "--engine", "compiled", "--json", "-")
    assert code == 0
    compiled = json.loads(out)
    code, out, _ = run_cli(capsys, *RING, "--engine", "simpy", "--json", "-")
    simpy = json.loads(out)
    assert (compiled["engine"], simpy["engine"]) == ("compiled", "simpy")
    assert compiled["time_s"] == simpy["time_s"] and compiled["phases"] == simpy["phases"]
    assert compiled["links"] == simpy["links"]


def test_auto_names_the_path_and_why(capsys):
    code, out, _ = run_cli(capsys, *RING)
    assert code == 0
    assert "engine       simpy (compiled path not taken: auto: 112 messages, under 50,000" in out
    code, out, _ = run_cli(capsys, "run", "--topology", "abci", "--nodes", "2", "--algorithm", "nccl-tree",
                           "--elements", "64K", "--profile", "nccl", "--engine", "simpy")
    assert code == 0 and "engine       simpy\n" in out


def test_compiled_where_it_does_not_apply_is_one_line_exit_2(capsys):
    code, out, err = run_cli(capsys, "run", "--topology", "abci", "--nodes", "2", "--algorithm", "nccl-tree",
                             "--elements", "64K", "--profile", "nccl", "--engine", "compiled")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--engine compiled does not apply here: " in err and "waitany" in err
    code, _, err = run_cli(capsys, "run", "--algorithm", "sparse-ring", "--density", "1/64", "--elements", "64K",
                           "--engine", "compiled")
    assert code == 2 and "sparse algorithm" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        run_cli(capsys, *RING, "--engine", "fast")
    assert exc.value.code == 2 and "invalid choice: 'fast'" in capsys.readouterr().err


def test_bench_takes_the_engine(capsys):
    code, out, _ = run_cli(capsys, "bench", "--topology", "abci", "--nodes", "2", "-b", "64K", "-e", "128K", "-f", "2",
                           "--engine", "compiled", "--json", "-")
    assert code == 0
    rows = json.loads(out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert len(rows) == 2


def test_auto_takes_multi_server_nccl_compiled_where_its_memory_fits(monkeypatch):
    """NCCL's channels across servers couple at the NICs, in the array store of the SimPy
    engine and of the compiled loop alike, with the same time. auto takes the compiled path
    (less CPU) unless its arrays, ``COMPILED_BYTES_PER_MESSAGE`` a message, would take more
    than half the memory available; then the SimPy path, without recording first."""
    import simcollective.memory as memory
    import simcollective.runtime.compiled as compiled_path
    import simcollective.simulate as sim
    from simcollective.run_config import RunConfig

    monkeypatch.setattr(sim, "AUTO_MIN_MESSAGES", 0)
    kw = dict(topology="dgx-h100", nodes=2, algorithm="nccl-ring", bytes=2**26, profile="nccl")
    simpy = sim.run(RunConfig(engine="simpy", **kw))
    rep = sim.run(RunConfig(engine="auto", **kw))
    assert rep.fields["engine"] == "compiled" and rep.fields["time_s"] == simpy.fields["time_s"]
    need = rep.fields["messages"] * memory.COMPILED_BYTES_PER_MESSAGE
    monkeypatch.setattr(sim, "available_memory", lambda: 2 * need - 2)
    recorded = []     # the compiled path's entry, which simulate imports when it takes that path
    monkeypatch.setattr(compiled_path, "run_compiled", lambda *a, **k: recorded.append(a) or pytest.fail("recorded"))
    rep = sim.run(RunConfig(engine="auto", **kw))
    assert rep.fields["engine"] == "simpy" and "NCCL's algorithms across servers" in rep.fields["engine_note"]
    assert "more than half the memory available" in rep.fields["engine_note"]
    assert not recorded and rep.fields["time_s"] == simpy.fields["time_s"]


def test_auto_keeps_any_algorithm_on_the_simpy_path_where_the_compiled_arrays_would_not_fit(monkeypatch):
    """The ring (not NCCL) too: ``COMPILED_BYTES_PER_MESSAGE_OTHER`` a message beyond half the
    memory available keeps ``auto`` on the SimPy path, without recording, the time the same;
    where they fit, the compiled path runs."""
    import simcollective.memory as memory
    import simcollective.runtime.compiled as compiled_path
    import simcollective.simulate as sim
    from simcollective.run_config import RunConfig

    monkeypatch.setattr(sim, "AUTO_MIN_MESSAGES", 0)
    kw = dict(topology="fat-tree", nodes=16, algorithm="ring", elements=2**16, verify="symbolic")
    simpy = sim.run(RunConfig(engine="simpy", **kw))
    need = simpy.fields["messages"] * memory.COMPILED_BYTES_PER_MESSAGE_OTHER
    monkeypatch.setattr(sim, "available_memory", lambda: 2 * need)
    assert sim.run(RunConfig(engine="auto", **kw)).fields["engine"] == "compiled"
    monkeypatch.setattr(sim, "available_memory", lambda: 2 * need - 2)
    monkeypatch.setattr(compiled_path, "run_compiled", lambda *a, **k: pytest.fail("recorded"))
    rep = sim.run(RunConfig(engine="auto", **kw))
    assert rep.fields["engine"] == "simpy" and "more than half the memory available" in rep.fields["engine_note"]
    assert "NCCL" not in rep.fields["engine_note"] and rep.fields["time_s"] == simpy.fields["time_s"]


def test_a_program_the_compiled_path_cannot_record_runs_on_the_network_it_built(monkeypatch):
    """``auto`` on a program that reacts to the first message (``nccl-tree``): the compiled
    path builds the network, the recording refuses the program, and the SimPy path runs on
    that same network (one network built, not two), with the time of ``--engine simpy``."""
    import simcollective.network.engine as engine
    import simcollective.memory as memory
    import simcollective.simulate as sim
    from simcollective.run_config import RunConfig

    monkeypatch.setattr(sim, "AUTO_MIN_MESSAGES", 0)
    kw = dict(topology="dgx-h100", nodes=2, algorithm="nccl-tree", bytes=2**20, profile="nccl")
    simpy = sim.run(RunConfig(engine="simpy", **kw))
    built = []
    init = engine.Network.__init__
    monkeypatch.setattr(engine.Network, "__init__", lambda self, *a, **k: built.append(1) or init(self, *a, **k))
    rep = sim.run(RunConfig(engine="auto", **kw))
    assert rep.fields["engine"] == "simpy" and "waitany" in rep.fields["engine_note"]
    assert len(built) == 1 and rep.fields["time_s"] == simpy.fields["time_s"]


def test_engine_compiled_beyond_the_memory_available_is_refused_before_recording(monkeypatch, capsys):
    """``--engine compiled`` where the compiled arrays would not fit at all: one line naming
    the messages, the memory they would hold and what is available, exit 2, before the
    recording starts (not killed mid-way); where they fit, it runs."""
    import simcollective.memory as memory
    import simcollective.runtime.compiled as compiled_path
    import simcollective.simulate as sim
    from simcollective.run_config import RunConfig
    from tests.conftest import one_line_error

    kw = dict(topology="fat-tree", nodes=16, algorithm="ring", elements=2**16, verify="symbolic", engine="compiled")
    messages = 2 * 16 * 15
    monkeypatch.setattr(sim, "available_memory", lambda: messages * memory.COMPILED_BYTES_PER_MESSAGE_OTHER)
    assert sim.run(RunConfig(**kw)).fields["engine"] == "compiled"
    monkeypatch.setattr(sim, "available_memory", lambda: messages * memory.COMPILED_BYTES_PER_MESSAGE_OTHER - 1)
    monkeypatch.setattr(compiled_path, "run_compiled", lambda *a, **k: pytest.fail("recorded"))
    one_line_error(capsys, ["run", "--topology", "fat-tree", "--nodes", "16", "--algorithm", "ring", "--elements",
                            "64K", "--verify", "symbolic", "--engine", "compiled"],
                   "--engine compiled", "480 messages", "GiB on the compiled path", "available")
