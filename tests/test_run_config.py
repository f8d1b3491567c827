"""Defaults have one source; every key of every JSON output and sweep row is documented in
docs/schema.md, and each carries the schema version."""

import csv
import json
import re
from pathlib import Path

import pytest

from simcollective.run_config import SCHEMA_VERSION
from tests.conftest import TINY, run_cli




def test_defaults_have_one_source():
    from simcollective.cli import build_parser, config_from_args
    from simcollective.simulate import RunConfig, run_defaults
    from simcollective.sweeps import DEFAULTS

    d = run_defaults()
    for key, value in DEFAULTS.items():
        if key in d and key not in ("topology_opts", "algorithm", "elements", "collective", "timing", "study",
                                      "engine"):
            assert value == d[key], key
    # a sweep point without a collective is an allreduce, without timing/study the run's defaults
    # (None keeps the keys of points written before these keys existed)
    assert DEFAULTS["collective"] is None and d["collective"] == "allreduce"
    assert DEFAULTS["timing"] is None and d["timing"] == "simultaneous"
    assert DEFAULTS["study"] is None and d["study"] is False
    assert DEFAULTS["engine"] is None and d["engine"] == "auto"
    args = build_parser().parse_args(["run", "--algorithm", "ring", "--elements", "1M"])
    assert config_from_args(args) == RunConfig(algorithm="ring", elements=2**20)


# -- the JSON schema (docs/schema.md) ---------------------------------------------------------


ROOT = Path(__file__).resolve().parents[1]
#: objects whose keys are data (phase names, link types, options), not fixed keys
MAPS = ("phases", "bytes_by_link_type", "options", "null_reasons", "topology_opts", "read", "applied",
        "overridden", "not_modelled", "diagnostic", "moe")
#: objects whose keys are names, each value an object of fixed keys
NAMED = ("communicators",)


def documented(section: str) -> set:
    """The keys of one section of docs/schema.md (the first cell of its tables)."""
    text = (ROOT / "docs" / "schema.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", body, flags=re.M))


def written(obj, prefix="") -> set:
    """Every key of a JSON value, nested ones as ``a.b``, ``a[].b`` and (objects by name)
    ``a.NAME.b``, maps not entered."""
    keys = set()
    items = obj if isinstance(obj, list) else [obj]
    for o in items:
        if not isinstance(o, dict):
            continue
        for k, v in o.items():
            keys.add(prefix + k)
            if k in MAPS:
                continue
            if k in NAMED:
                keys |= written(list(v.values()), f"{prefix}{k}.NAME.")
            elif isinstance(v, dict):
                keys |= written(v, f"{prefix}{k}.")
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                keys |= written(v, f"{prefix}{k}[].")
    return keys


def _json(capsys, *argv):
    code, out, err = run_cli(capsys, *argv, "--json", "-")
    assert code == 0, err
    return json.loads(out)


RUNS = [
    ["--topology", "abci", "--algorithm", "ring", "--bytes", "1M"],
    ["--topology", "dgx-h100", "--algorithm", "nccl", "--bytes", "1M", "--profile", "nccl"],
    ["--topology", "abci", "--algorithm", "ssar-recursive-doubling", "--elements", "64K", "--density", "1/128"],
    ["--topology", "abci", "--algorithm", "ring", "--bytes", "1M", "--gpus", "1"],       # null algbw
    ["--topology", "dgx-h100", "--nodes", "2", "--algorithm", "nccl", "--bytes", "1M", "--profile", "nccl"],
    ["--collective", "alltoallv", "--algorithm", "hierarchical", "--topology", "dgx-h100", "--nodes", "2",
     "--moe", "tokens=16,hidden=64,topk=2,experts_per_rank=2"],
]


@pytest.mark.parametrize("argv", RUNS)
def test_every_run_key_is_documented(capsys, argv):
    out = _json(capsys, "run", *argv)
    assert out["schema_version"] == SCHEMA_VERSION
    assert written(out) - documented("run") == set()


def test_every_bench_compare_and_p2p_key_is_documented(capsys):
    rows = _json(capsys, "bench", "--topology", "abci", "-b", "8", "-e", "1K", "-f", "4")
    assert {r["schema_version"] for r in rows} == {SCHEMA_VERSION}
    assert written(rows) - documented("bench") == set()
    log = ROOT / "experiments" / "nccl-tests" / "gcp-a4-b200x8-2node-roce_allgather_gcpdocs.txt"
    res = _json(capsys, "compare", log, "--topology", "dgx-b200", "--nodes", "2", "--max-size", "64K")
    assert res["schema_version"] == SCHEMA_VERSION and written(res) - documented("compare") == set()
    for argv in ([], ["-b", "1", "-e", "64"], ["--topology-opt", "net_conn_bandwidth=20e9", "--nodes", "2",
                                                "--dst", "8", "--topology", "dgx-h100"]):
        res = _json(capsys, "p2p", *argv)
        assert res["schema_version"] == SCHEMA_VERSION and written(res) - documented("p2p") == set()


def test_every_sweep_column_is_documented(capsys, tmp_path):
    from simcollective.sweeps.config import INPUT_KEYS

    cfg = tmp_path / "tiny.toml"
    from simcollective.sweeps.config import load_config
    from simcollective.sweeps.grid import expand_grid
    from simcollective.sweeps.points import run_group

    cfg = tmp_path / "tiny.toml"
    cfg.write_text(TINY + 'collective = ["allreduce"]\n')
    table = tmp_path / "tiny.csv"
    code, _, err = run_cli(capsys, "sweep", cfg, "--out", table, "--workers", "1", "--quiet")
    assert code == 0, err
    with open(table, newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = set(rows[0])
    assert {r["schema_version"] for r in rows} == {str(SCHEMA_VERSION)}
    point = dict(expand_grid(load_config(str(cfg)))[0], algorithm="no-such-algorithm")
    (failed,) = run_group([point], str(tmp_path))        # a point that fails has the version too
    assert failed["ok"] is False and failed["schema_version"] == SCHEMA_VERSION
    columns |= set(failed)
    doc = documented("sweep rows") | documented("run")
    patterns = ("out_", "phase_", "bytes_")
    left = {c for c in columns - doc - set(INPUT_KEYS) if not c.startswith(patterns)}
    assert left == set()
    assert {c[4:] for c in columns if c.startswith("out_")} <= documented("run")


def test_every_job_key_is_documented(job_example):
    out, _ = job_example          # the example job's --json document
    assert out["schema_version"] == SCHEMA_VERSION
    assert written(out) - documented("job") == set()
