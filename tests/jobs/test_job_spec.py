"""Job descriptions: the schema, and bad input as one line naming the value and what is
allowed, exit 2, before any simulation."""

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.jobs import job_from_dict, prepare
from simcollective.jobs.spec import find_cycle

MACHINE = {"topology": "fat-tree", "nodes": 4}
COMMS = {"pair": {"rule": "tp", "size": 2}}


def _step(name, **kw):
    return {"name": name, "communicator": "pair", "algorithm": "ring", "elements": 64, **kw}


def test_steps_come_in_dependency_order_with_their_defaults():
    spec = job_from_dict({**MACHINE, "communicators": COMMS,
                          "steps": [_step("b", after=["a"], compute=0.5, repeat=2), _step("a")]})
    assert [s.name for s in spec.steps] == ["a", "b"]
    b = spec.step("b")
    assert (b.collective, b.dtype, b.after, b.compute, b.repeat) == ("allreduce", "float32", ("a",), 0.5, 2)


def test_find_cycle_names_the_cycle():
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": [], "b": ["a"]}) is None


@pytest.mark.parametrize("steps, comms, needle", [
    ([_step("a", communicator="tq")], COMMS, "step 'a': unknown communicator 'tq'; communicators: pair"),
    ([_step("a", after=["z"])], COMMS, "step 'a': after names unknown step 'z'; steps: a"),
    ([_step("a", after=["b"]), _step("b", after=["a"])], COMMS, "dependency cycle: a -> b -> a"),
    ([_step("a", repeat=0)], COMMS, "step 'a': repeat 0 must be an integer >= 1"),
    ([_step("a", compute=-1.0)], COMMS, "step 'a': compute -1.0 must be a finite number >= 0"),
    ([_step("a", bytes=64)], COMMS, "step 'a': give the size as bytes = B or elements = N (one of them)"),
    ([_step("a", size=3)], COMMS, "step 'a': unknown key 'size'"),
    ([_step("a"), _step("a")], COMMS, "step name 'a' appears twice"),
    ([_step("a")], {"pair": {"rule": "tp"}}, "communicator 'pair': give size"),
])
def test_bad_job_tables_are_one_line_errors(steps, comms, needle):
    with pytest.raises(UserInputError) as exc:
        job_from_dict({**MACHINE, "communicators": comms, "steps": steps})
    assert needle in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("comms, steps, needle", [
    ({"pair": {"rule": "tp", "size": 3}}, [_step("a")],
     "communicator 'pair': size 3 does not divide the 4 ranks; allowed: 1, 2, 4"),
    ({"pair": {"rule": "split", "colour": [0, 0, 1]}}, [_step("a")],
     "communicator 'pair': 3 colours for 4 ranks; give one per rank"),
    (COMMS, [_step("a", algorithm="nope")], "step 'a' on pair group 0: unknown algorithm 'nope' for allreduce"),
    ({"pair": {"rule": "tp", "size": 4}}, [_step("a", algorithm="recursive-doubling", collective="allgather",
                                                 options={"chunk_size": 64})],
     "step 'a' on pair group 0: --chunk-size is not used by algorithm 'recursive-doubling' of allgather"),
])
def test_bad_values_against_the_machine_fail_in_prepare(comms, steps, needle):
    with pytest.raises(UserInputError) as exc:
        prepare(job_from_dict({**MACHINE, "communicators": comms, "steps": steps}))
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def _toml(tmp_path, text):
    path = tmp_path / "job.toml"
    path.write_text('topology = "fat-tree"\nnodes = 4\n' + text)
    return str(path)


@pytest.mark.parametrize("text, needle", [
    ('[communicators.tp]\nrule = "tp"\nsize = 3\n[[steps]]\nname = "a"\ncommunicator = "tp"\n'
     'algorithm = "ring"\nelements = 64\n', "size 3 does not divide the 4 ranks; allowed: 1, 2, 4"),
    ('[communicators.tp]\nrule = "tp"\nsize = 2\n[[steps]]\nname = "a"\ncommunicator = "dp"\n'
     'algorithm = "ring"\nelements = 64\n', "unknown communicator 'dp'; communicators: tp"),
    ('[communicators.tp]\nrule = "tp"\nsize = 2\n[[steps]]\nname = "a"\ncommunicator = "tp"\n'
     'algorithm = "ring"\nelements = 64\nafter = ["a"]\n', "dependency cycle: a -> a"),
    ('[communicators.tp]\nrule = "tp"\nsize = 2\n[[steps]]\nname = "a"\ncommunicator = "tp"\n'
     'algorithm = "ring"\nelements = 64\nafter = ["x"]\n', "after names unknown step 'x'"),
    ('[communicators.tp\n', "is not valid TOML"),
])
def test_cli_bad_input_exits_2_with_one_line_before_simulating(tmp_path, capsys, monkeypatch, text, needle):
    import simcollective.jobs.runner as runner

    def never(*a, **k):
        raise AssertionError("simulated despite bad input")

    monkeypatch.setattr(runner, "run_tasks", never)
    assert main(["job", _toml(tmp_path, text)]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err and err.startswith("simcollective: error: ")


def test_cli_missing_job_file(tmp_path, capsys):
    assert main(["job", str(tmp_path / "none.toml")]) == 2
    assert "job file" in capsys.readouterr().err
