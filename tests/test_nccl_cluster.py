"""Issue 15, one cluster's logs (sections C-G of the H100 thread): the log's own NCCL settings,
the per-connection network cap, and rows where a log disagrees with itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simcollective.cli import main
from simcollective.errors import UserInputError
from simcollective.nccl.compare import log_settings
from simcollective.nccl.nccltests import parse_log, settings_of

REF = Path(__file__).parents[1] / "experiments" / "nccl-tests"
H100 = REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt"


def cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def row(size, t_us, t_ip_us=None, n=8):
    """One current-format allreduce row of ``n`` ranks (float) with consistent algbw/busbw."""
    t_ip_us = t_us if t_ip_us is None else t_ip_us
    cols = []
    for t in (t_us, t_ip_us):
        alg = size / (t * 1e3)
        cols += [f"{t:.2f}", f"{alg:.2f}", f"{alg * 2 * (n - 1) / n:.2f}", "0"]
    return f"{size:>12} {size // 4:>12} float sum -1 " + " ".join(cols)


# ------------------------------------------------------------------ 1. the log's own settings


def test_settings_are_read_per_section_and_prose_is_not():
    text = "\n".join([
        "# all_reduce_perf, two runs",
        "# NOTE: the second run sets NCCL_MIN_CTAS=32 (prose: not a setting of any run)",
        "# ---- Section A: default ----",
        "# command: mpirun -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5_0:1,mlx5_1:1 all_reduce_perf -b 1M",
        "# notes: with NCCL_NVLS_ENABLE=0 another run got less;",
        "#        NCCL_PROTO=LL was also tried",
        row(1 << 20, 50.0),
        "# ---- Section B: tuned, NCCL_MIN_CTAS=24, NCCL_PROTO=^LL128 ----",
        "host:1:1 [0] NCCL INFO NCCL_MAX_CTAS set by environment to 28",
        "# command: export NCCL_ALGO=<algo>; all_reduce_perf",
        row(1 << 20, 50.0),
    ])
    a, b = parse_log(text)
    assert a.settings == {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}
    assert b.settings == {"NCCL_MAX_CTAS": "28", "NCCL_MIN_CTAS": "24", "NCCL_PROTO": "^LL128"}
    assert a.forced_algorithm is None and b.forced_algorithm is None


def test_settings_without_section_titles_come_from_the_header():
    (t,) = parse_log("# all_reduce_perf\n# command: NCCL_MIN_NCHANNELS=32 NCCL_ALGO=Tree mpirun ...\n"
                     + row(1 << 20, 50.0))
    assert t.settings == {"NCCL_MIN_NCHANNELS": "32", "NCCL_ALGO": "Tree"} and t.forced_algorithm == "tree"
    assert settings_of(["#  NCCL_X=\"a b\""]) == {"NCCL_X": "a b"}


def test_the_published_h100_thread_settings_per_section():
    tables = parse_log(H100.read_text())
    mins = [t.settings.get("NCCL_MIN_CTAS") for t in tables]
    assert mins == [None, None, None, None, None, "24", "24"]          # F and G only, not C/D/E
    assert [t.forced_algorithm for t in tables] == [None] * 6 + ["ring"]
    assert "NCCL_NVLS_ENABLE" not in tables[0].settings                # section A's notes are prose
    assert tables[0].settings["NCCL_IB_HCA"] == "mlx5_0:1,...,mlx5_7:1"
    assert tables[6].settings["NCCL_IB_QPS_PER_CONNECTION"] == "2"


def test_log_settings_applied_overridden_and_not_modelled():
    s = {"NCCL_MIN_CTAS": "24", "NCCL_PROTO": "LL,Simple", "NCCL_NVLS_ENABLE": "0",
         "NCCL_IB_QPS_PER_CONNECTION": "2", "NCCL_DEBUG": "INFO"}
    ls = log_settings(s, "x", "allreduce", "auto")
    assert (ls["min_channels"], ls["protos"], ls["algos"]) == (24, ("ll", "simple"), ("tree", "ring"))
    assert ls["not_modelled"] == {"NCCL_IB_QPS_PER_CONNECTION": "2"} and ls["diagnostic"] == {"NCCL_DEBUG": "INFO"}
    ls = log_settings(s, "x", "allreduce", "nccl-ring", protocol="ll", channels=8)
    assert ls["overridden"] == {"NCCL_MIN_CTAS": "--channels 8", "NCCL_PROTO": "--protocol ll",
                                "NCCL_NVLS_ENABLE": "--algorithm nccl-ring"}
    assert (ls["min_channels"], ls["protos"], ls["algos"]) == (None, None, None)
    assert log_settings({"NCCL_PROTO": "^LL128"}, "x", "allreduce", "auto")["protos"] == ("ll", "simple")
    ls = log_settings({"NCCL_MIN_CTAS": "24"}, "x", "allreduce", "ring")   # not NCCL's algorithm
    assert ls["min_channels"] is None and "not NCCL's" in ls["not_modelled"]["NCCL_MIN_CTAS"]


@pytest.mark.parametrize("setting,needle", [
    ({"NCCL_MIN_CTAS": "abc"}, "NCCL_MIN_CTAS='abc' in the log: NCCL takes a channel count from 1 to 64"),
    ({"NCCL_MAX_CTAS": "0"}, "NCCL_MAX_CTAS='0'"),
    ({"NCCL_PROTO": "LL256"}, "NCCL_PROTO='LL256'"),
    ({"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": "8"}, "floor 32 is above its ceiling 8"),
])
def test_log_settings_bad_values(setting, needle):
    with pytest.raises(UserInputError, match=needle.replace("(", r"\(").replace("^", r"\^")):
        log_settings(setting, "x", "allreduce", "auto")


def _log(tmp_path, header, sizes=(1 << 20, 2 << 20)):
    p = tmp_path / "ar.txt"
    p.write_text("# all_reduce_perf\n" + header + "\n" + "\n".join(row(s, 40.0 + s / 1e5) for s in sizes) + "\n")
    return p


def test_compare_applies_min_ctas_on_one_h100_node(capsys, tmp_path):
    # 8 x H100, one node: ring LL at 1 MiB on 24 channels, NVLS at 2 MiB on 16 (nccl.md 4.7, 2.1).
    # NCCL_MIN_CTAS=32 lifts both communicators to 32 channels; 1 MiB still fills 32 ring LL
    # channels (1 MiB >= 32 x 512 threads x 8 B x 8 ranks) and 2 MiB 32 NVLS ones (>= 32 x 512 x 64 B).
    log = _log(tmp_path, "# command: mpirun -x NCCL_MIN_CTAS=32 -x NCCL_IB_QPS_PER_CONNECTION=4 all_reduce_perf")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert [(r["algorithm_chosen"], r["protocol"], r["channels"]) for r in res["rows"]] == [
        ("nccl-ring", "ll", 32), ("nccl-nvls", "simple", 32)]
    assert res["log_settings"]["applied"] == {"NCCL_MIN_CTAS": "32"}
    assert res["log_settings"]["not_modelled"] == {"NCCL_IB_QPS_PER_CONNECTION": "4"}
    assert res["settings_note"] == ("NCCL_MIN_CTAS=32 in the log: 32 channels; "
                                    "not modelled: NCCL_IB_QPS_PER_CONNECTION=4")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    assert "log settings: NCCL_MIN_CTAS=32 in the log: 32 channels; not modelled" in out
    # without the setting: NCCL's defaults (24 ring, 16 NVLS)
    plain = _log(tmp_path, "# command: all_reduce_perf")
    res = json.loads(cli(capsys, "compare", str(plain), "--topology", "dgx-h100", "--json", "-")[1])
    assert [r["channels"] for r in res["rows"]] == [24, 16] and res["settings_note"] is None


def test_compare_max_ctas_nvls_off_and_proto(capsys, tmp_path):
    log = _log(tmp_path, "# command: NCCL_MAX_CTAS=4 NCCL_NVLS_ENABLE=0 NCCL_PROTO=Simple all_reduce_perf")
    res = json.loads(cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--json", "-")[1])
    assert {(r["algorithm_chosen"], r["protocol"], r["channels"]) for r in res["rows"]} == {("nccl-ring", "simple", 4)}
    assert "NCCL_NVLS_ENABLE=0 in the log: no NVLS/NVLSTree" in res["settings_note"]
    assert "NCCL_PROTO=Simple in the log: protocols simple" in res["settings_note"]
    # explicit flags win, and say so
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100", "--channels", "2",
                         "--protocol", "ll", "--json", "-")
    res = json.loads(out)
    assert {(r["protocol"], r["channels"]) for r in res["rows"]} == {("ll", 2)}
    assert "NCCL_MAX_CTAS=4 in the log overridden by --channels 2" in res["settings_note"]
    assert "NCCL_PROTO=Simple in the log overridden by --protocol ll" in res["settings_note"]


def test_compare_bad_setting_in_the_log_is_a_one_line_error(capsys, tmp_path):
    log = _log(tmp_path, "# command: NCCL_MIN_CTAS=abc all_reduce_perf")
    code, out, err = cli(capsys, "compare", str(log), "--topology", "dgx-h100")
    assert code == 2 and "NCCL_MIN_CTAS='abc'" in err and len(err.strip().splitlines()) == 1
