"""``run``'s progress bar: every algorithm's ``messages`` hook (the bar's total) against the
``messages`` real runs send, the progress protocol, and when the CLI shows the bar."""

import io
import json

import pytest

from simcollective import cli
from simcollective.algorithms import load_all
from simcollective.patterns.dense import allgather_messages, recursive_doubling_messages, two_level_messages
from simcollective.algorithms.registry import REGISTRY
from simcollective.errors import UserInputError
from simcollective.simulate import RunConfig, expected_messages, resolve, run

load_all()
HOOKED = sorted(key for key, a in REGISTRY.items() if a.messages is not None)
PS = (2, 3, 4, 5, 6, 8, 12)


def _nccl_configs(algo):
    """nccl-* runs: one and several DGX H100s (NVLS, NVLSTree on two), ABCI and DGX-1V
    (PCIe, cube-mesh), a partial node; small and large sizes, a forced protocol and
    channel count."""
    out = []
    rooted = algo.collective in ("broadcast", "reduce")
    for topo, nodes, gpus in [("dgx-h100", 1, None), ("dgx-h100", 2, None), ("dgx-h100", 1, 5),
                              ("abci", 3, 10), ("dgx1-v100", 2, None)]:
        for elements in (1000, 3 * 2**20, 2**26):
            for opts in ({}, {"protocol": "ll", "channels": 3}):
                cfg = RunConfig(topology=topo, nodes=nodes, gpus=gpus, algorithm=algo.name, elements=elements,
                                collective=algo.collective, options=opts, verify="symbolic",
                                root=3 if rooted else None)
                try:
                    expected_messages(resolve(cfg))
                except UserInputError:
                    continue    # what NCCL cannot run there: NVLS without NVLink SHARP, LL on NVLS
                out.append(cfg)
    return out


def _configs(algo, P):
    """Runs of ``algo`` on P ranks: one GPU per host and four per node (ranks spread over
    servers), fewer elements than ranks, small chunks, big vectors (default and automatic
    chunking), another root, every allgather variant, group sizes."""
    sparse = algo.kind == "sparse"
    base = dict(algorithm=algo.name, collective=algo.collective)
    cases = [
        dict(topology="fat-tree", nodes=P, elements=1000),
        dict(topology="abci", nodes=3, gpus=P, elements=3),
        dict(topology="abci", nodes=3, gpus=P, elements=70000, options={"chunk_size": 20000}),
    ]
    if not sparse:
        cases.append(dict(topology="abci", nodes=3, gpus=P, elements=3 * 2**20, verify="symbolic"))
    if algo.collective in ("broadcast", "reduce"):
        cases.append(dict(topology="abci", nodes=3, gpus=P, elements=300000, root=P - 1))
    if "allgather" in algo.options:
        cases += [dict(topology="fat-tree", nodes=P, elements=1000, options={"allgather": v})
                  for v in ("direct", "ring", "recursive-doubling")]
    out = []
    for case in cases:
        opts = {k: v for k, v in case.pop("options", {}).items() if k in algo.options}
        if sparse:
            case["k"] = max(1, case["elements"] // 4)
        if "group_size" in algo.options:
            for L in (1, 2, P):
                if P % L == 0:
                    out.append(RunConfig(**base, **case, options={**opts, "group_size": L}))
            continue
        out.append(RunConfig(**base, **case, options=opts))
    return out


@pytest.mark.parametrize("key", HOOKED, ids=["/".join(k) for k in HOOKED])
def test_messages_hook_equals_the_runs_messages(key):
    algo = REGISTRY[key]
    checked = 0
    if algo.name.startswith("nccl"):
        for cfg in _nccl_configs(algo):
            assert expected_messages(resolve(cfg)) == run(cfg)["messages"], cfg
            checked += 1
        assert checked >= 6
        return
    for P in PS:
        for cfg in _configs(algo, P):
            if algo.name == "gtopk" and P & (P - 1):
                continue  # powers of two only
            plan = resolve(cfg)
            want = expected_messages(plan)
            assert want == run(cfg)["messages"], (P, cfg)
            checked += 1
    assert checked >= (6 if algo.name == "gtopk" else 12)


def test_every_algorithm_declares_its_messages():
    assert sorted("/".join(k) for k, a in REGISTRY.items() if a.messages is None) == []


def test_closed_forms_by_hand():
    # p' = 8, rem = 4: 8 x 3 exchanges + 4 folds + 4 unfolds
    assert recursive_doubling_messages(12) == 32
    assert recursive_doubling_messages(8) == 24 and recursive_doubling_messages(1) == 0
    assert allgather_messages(5, "ring") == allgather_messages(5, "direct") == 20
    assert allgather_messages(5, "recursive-doubling") == 4 * 2 + 2
    # 12 ranks in groups of 3 (M = 4): every rank 2 intra + 3 inter messages per pass
    assert two_level_messages(12, 3) == 60 and two_level_messages(12, 3, passes=2) == 120


class _Recorder:
    def __init__(self):
        self.total = "unset"
        self.calls = []

    def set_total(self, total):
        assert not self.calls, "the total comes before the first report"
        self.total = total

    def __call__(self, now, done, posted):
        self.calls.append((now, done, posted))


def test_progress_gets_the_total_first_and_reaches_it():
    rec = _Recorder()
    report = run(RunConfig(topology="fat-tree", nodes=6, algorithm="ring", elements=1000), progress=rec)
    assert rec.total == 2 * 6 * 5 == report["messages"]
    assert rec.calls[-1][2] == rec.total and rec.calls[-1][0] == report["time_s"]
    assert [c[2] for c in rec.calls] == sorted(c[2] for c in rec.calls)


def test_progress_total_is_none_without_a_hook(monkeypatch):
    import dataclasses

    algo = REGISTRY[("allreduce", "ring")]
    monkeypatch.setitem(REGISTRY, ("allreduce", "ring"), dataclasses.replace(algo, messages=None))
    rec = _Recorder()
    run(RunConfig(topology="fat-tree", nodes=4, algorithm="ring", elements=4096), progress=rec)
    assert rec.total is None and rec.calls[-1][2] == 24


def test_bar_shows_percentage_of_the_total():
    buf = io.StringIO()
    p = cli._Progress(buf, delay=0)
    p.set_total(200)
    p(1.5e-3, 0, 50)
    p.bar.refresh()
    p.close()
    out = buf.getvalue()
    assert "25%" in out and "50.0/200" in out and "simulated 1.500 ms" in out


def test_bar_without_total_shows_the_count_only():
    buf = io.StringIO()
    p = cli._Progress(buf, delay=0)
    p.set_total(None)
    p(0.0, 0, 50)
    p.bar.refresh()
    p.close()
    out = buf.getvalue()
    assert "50.0 msg" in out and "%" not in out


class _TTY(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("extra, shown", [((), True), (("--quiet",), False), (("--json", "-"), False)])
def test_cli_shows_the_bar_on_a_terminal_only_without_quiet_or_json_stdout(monkeypatch, capsys, extra, shown):
    made = []

    class Spy(cli._Progress):
        def set_total(self, total):
            made.append(total)
            super().set_total(total)

    monkeypatch.setattr(cli, "_Progress", Spy)
    monkeypatch.setattr(cli.sys, "stderr", _TTY())
    code = cli.main(["run", "--topology", "fat-tree", "--nodes", "5", "--algorithm", "ring",
                     "--elements", "1000", *extra])
    assert code == 0
    assert made == ([40] if shown else [])
    if "--json" in extra:
        assert json.loads(capsys.readouterr().out)["messages"] == 40


def test_cli_shows_no_bar_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    made = []
    monkeypatch.setattr(cli, "_Progress", lambda *a, **k: made.append(1))
    assert cli.main(["run", "--topology", "fat-tree", "--nodes", "4", "--algorithm", "ring", "--elements", "64"]) == 0
    assert made == []
