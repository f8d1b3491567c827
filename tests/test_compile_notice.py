"""A command during which numba compiles kernels (a cold cache) says so, once, on stderr before
the wait; its summary and JSON separate the compile from the run; with every kernel loaded
from the cache (or none needed) nothing is printed and ``compile_s`` is 0."""

import json
from pathlib import Path

import numba
import pytest

import simcollective as sc
from simcollective import simulate
from simcollective.summary import compile_notice, format_report
from tests.conftest import run_cli

RUN = ("run", "--topology", "abci", "--algorithm", "ring", "--elements", "64K")
NOTICE = "simcollective: numba is compiling the simulator's kernels, once after installing or upgrading"


@pytest.fixture
def compiling(monkeypatch):
    """Every run compiles a fresh kernel (a real ``numba:compile`` event) before verifying."""
    verify = simulate.verify

    def compile_then_verify(*args, **kwargs):
        assert numba.njit(lambda x: x + 1)(1) == 2      # a new dispatcher: numba compiles it
        return verify(*args, **kwargs)

    monkeypatch.setattr(simulate, "verify", compile_then_verify)


def test_a_run_that_compiles_says_so_once_and_its_summary_parts_the_compile(capsys, compiling, tmp_path):
    code, out, err = run_cli(capsys, *RUN, "--json", tmp_path / "run.json", "--quiet")
    assert code == 0 and err.splitlines() == [compile_notice(None)] and err.startswith(NOTICE)
    res = json.loads((tmp_path / "run.json").read_text())
    assert 0 < res["compile_s"] < res["wall_s"]
    text = format_report(simulate.Report(res))
    assert f"  engine       simpy (compiled path not taken: {res['engine_note']}; numba compiled its kernels for " \
           f"{res['compile_s']:.1f} s of this run: cached for the next runs)" in text.splitlines()


def test_bench_says_so_once_for_all_its_sizes(capsys, compiling):
    code, out, err = run_cli(capsys, "bench", "--topology", "abci", "-b", "8", "-e", "32", "-f", "4", "--json", "-")
    assert code == 0 and len(json.loads(out)) == 2          # two runs, two compiles
    assert err.splitlines() == [compile_notice(None)]


def test_a_run_that_compiles_nothing_prints_nothing_more_and_compile_s_is_0(capsys):
    code, out, err = run_cli(capsys, *RUN, "--json", "-")
    assert code == 0 and err == "" and json.loads(out)["compile_s"] == 0.0
    code, out, err = run_cli(capsys, *RUN)
    assert code == 0 and err == "" and "numba" not in out
    r = sc.run(topology="abci", algorithm="ring", elements="64K")      # the API: the field, nothing printed
    assert r["compile_s"] == 0.0 and capsys.readouterr() == ("", "")


def test_the_notice_says_where_numba_caches(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    package = Path(simulate.__file__).parent
    here = compile_notice(str(package / "runtime" / "__pycache__"))
    assert here.endswith(f"then cached for the next runs in the __pycache__ folders under {package} (numba's cache "
                         "beside the sources; NUMBA_CACHE_DIR moves it)")
    assert "up to about a minute of CPU" in here and "\n" not in here
    assert compile_notice("/home/u/.cache/numba/x").endswith("in /home/u/.cache/numba/x (NUMBA_CACHE_DIR moves it)")
    assert compile_notice(None).endswith("numba's cache (__pycache__ beside the sources, or NUMBA_CACHE_DIR)")
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/tmp/nc")
    assert compile_notice("/tmp/nc/network_0123").endswith("in NUMBA_CACHE_DIR (/tmp/nc)")
