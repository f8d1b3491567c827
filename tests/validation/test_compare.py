"""``simcollective compare`` on logs as users paste them (simcollective.validation.compare and
the compare command), end to end through the CLI: the published p4d log (2 x 8 A100, all_reduce,
16 ranks) with launcher prefixes, unsimulable rows, another run appended, another op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simcollective.cli import main

from tests.validation.paste_logs import P4D, alltoall_run, one_node_of_ranks, prefixed, with_bad_rows

MACHINE = ["--topology", "dgx-a100", "--nodes", "2"]
SMALL = ["--max-size", "1K"]          # 8 sizes, quickly


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name, text) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The clean log's table and JSON (copied, so that only the file name differs)."""
    d = tmp_path_factory.mktemp("clean")
    log = write(d, "p4d.txt", P4D.read_text())
    code = main(["compare", str(log), *MACHINE, *SMALL, "--json", str(d / "p4d.json")])
    assert code == 0
    return json.loads((d / "p4d.json").read_text())


def same_comparison(a: dict, b: dict) -> bool:
    drop = ("log", "dropped_rows")
    return {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


@pytest.mark.parametrize("prefix", ["0: ", "[1,0]<stdout>:"], ids=["srun", "mpirun"])
def test_a_prefixed_log_compares_as_the_clean_one(capsys, tmp_path, clean, prefix):
    log = write(tmp_path, "p4d.txt", prefixed(P4D.read_text(), lambda i: prefix))
    code, out, err = cli(capsys, "compare", log, *MACHINE, *SMALL, "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert same_comparison(res, clean) and "dropped_rows" not in res
    assert len(res["rows"]) == 8 and res["ranks"] == 16


def test_dropped_rows_are_listed_in_the_table_and_the_json(capsys, tmp_path, clean):
    text, where = with_bad_rows(P4D.read_text())
    log = write(tmp_path, "p4d.txt", text)
    code, out, err = cli(capsys, "compare", log, *MACHINE, *SMALL, "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert same_comparison(res, clean)
    assert [(d["line"], d["reason"]) for d in res["dropped_rows"]] == [
        (where[0], "size 0: nothing to simulate"), (where[1], "inf in the time/algbw/busbw columns"),
        (where[2], "negative size or count")]
    code, out, err = cli(capsys, "compare", log, *MACHINE, *SMALL)
    lines = out.splitlines()
    at = lines.index("dropped 3 row(s) of the log:")
    assert lines[at + 1].startswith(f"  line {where[0]}: size 0: nothing to simulate: 0 0 float sum 0.11")
    assert lines[at + 2].startswith(f"  line {where[1]}: inf in the time/algbw/busbw columns: ")
    assert lines[at + 3].startswith(f"  line {where[2]}: negative size or count: -2147483648 -536870912 float")


def test_a_mixed_file_compares_each_run_as_its_own_collective(capsys, tmp_path):
    log = write(tmp_path, "mixed.txt", P4D.read_text() + "\n" + alltoall_run(rows=3))
    code, out, err = cli(capsys, "compare", log, *MACHINE)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "1: untitled (all_reduce_perf, 16 ranks, 28 sizes); 2: untitled (alltoall_perf, 16 ranks, 3 sizes)" in err
    code, out, err = cli(capsys, "compare", log, *MACHINE, "--section", "2", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert (res["collective"], res["ranks"]) == ("alltoall", 16)
    assert res["forced"] == "NCCL has no alltoall algorithm here: the fastest registered one per size"
    assert [r["size"] for r in res["rows"]] == [4096, 8192, 16384] and [r["elements"] for r in res["rows"]] == [64, 128, 256]
    assert "NCCL_ALGO" not in res["log_settings"]["read"]          # the p4d run's setting, not this run's
    assert res["log_settings"]["read"] == {"NCCL_DEBUG": "WARN", "NCCL_PROTO": "Simple"}
    assert res["log_settings"]["not_modelled"] == {"NCCL_PROTO": "Simple (applied to allreduce only, not alltoall)"}


def test_a_run_without_its_binary_name_is_refused_in_one_line(capsys, tmp_path):
    log = write(tmp_path, "mixed.txt", P4D.read_text() + "\n" + alltoall_run(binary_named=False, rows=3))
    code, out, err = cli(capsys, "compare", log, *MACHINE, "--section", "2")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "section 2: the op column says none but the collective read is all_reduce_perf" in err


def test_a_max_log_is_refused_before_any_simulation(capsys, tmp_path):
    log = write(tmp_path, "max.txt", P4D.read_text().replace("   sum   ", "   max   "))
    code, out, err = cli(capsys, "compare", log, *MACHINE)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"simcollective: error: {log}: the op column says max (nccl-tests -o max); "
                                        "compare simulates sum reductions only; allowed: sum"]


def test_ranks_overrides_the_log(capsys, tmp_path, clean):
    log = write(tmp_path, "p4d.txt", P4D.read_text())
    code, out, err = cli(capsys, "compare", log, *MACHINE, "--max-size", "64", "--ranks", "8", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert res["ranks"] == 8 and res["ranks_note"] == "8 ranks (--ranks; the log: 16)"
    assert [r["elements"] for r in res["rows"]] == [2, 4, 8, 16]
    assert res["rows"][0]["simulated_time_us"] != clean["rows"][0]["simulated_time_us"]


def test_rank_lines_against_the_columns_point_to_ranks(capsys, tmp_path, clean):
    log = write(tmp_path, "p4d.txt", one_node_of_ranks(P4D.read_text()))
    res = json.loads(cli(capsys, "compare", log, *MACHINE, "--max-size", "64", "--json", "-")[1])
    assert res["ranks"] == 8
    assert res["ranks_note"] == ("8 ranks (from the log's '# Rank' lines; its busbw/algbw says 16: "
                                 "--ranks 16 to simulate those)")
    res = json.loads(cli(capsys, "compare", log, *MACHINE, "--max-size", "64", "--ranks", "16", "--json", "-")[1])
    assert res["ranks"] == 16 and res["rows"] == clean["rows"][:4]


@pytest.mark.parametrize("value, needle", [("0", "--ranks"), ("x", "--ranks"),
                                           ("1", "--ranks 1: dgx-a100 with --nodes 2 holds 16 GPUs; allowed: 2 to 16"),
                                           ("17", "--ranks 17: dgx-a100 with --nodes 2 holds 16 GPUs; allowed: 2 to 16")])
def test_bad_ranks_is_one_line(capsys, value, needle):
    code, out, err = cli(capsys, "compare", P4D, *MACHINE, "--ranks", value)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_help_states_the_nccl_default_profile(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "nccl or a TOML file (default: nccl)" in out and "(default: ideal)" not in out
    assert "--ranks N" in out and "[1,0]<stdout>:" in out


def test_a_one_rank_log_is_one_line(capsys, tmp_path):
    text = "\n".join(["# Using devices", "#  Rank  0 Group  0 Pid 1 on host device  0 [0x10] A100-SXM4-40GB",
                      P4D.read_text()])
    code, out, err = cli(capsys, "compare", write(tmp_path, "one.txt", text), *MACHINE)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "the log has 1 rank: a collective of one rank moves nothing to compare; --ranks N" in err


def test_the_nccl_version_is_read_from_the_log_header(clean):
    assert clean["nccl_version"] == "2.7.8 (from the log)"      # "# NCCL version: 2.7.8+cuda11.0 (printed in the log)"


def test_an_explicit_nccl_version_overrides_the_log_with_a_note(capsys, tmp_path, clean):
    log = write(tmp_path, "p4d.txt", P4D.read_text())
    code, out, err = cli(capsys, "compare", log, *MACHINE, *SMALL, "--nccl-version", "2.30", "--json", "-")
    assert code == 0, err
    res = json.loads(out)
    assert res["nccl_version"] == "2.30 (--nccl-version; the log says 2.7.8)"
    # 2.7.8's tables (the 2.4 family) differ from 2.30's in ring LL's base latency: 3.6 us, not 6.6
    assert [r["simulated_time_us"] for r in res["rows"]] != [r["simulated_time_us"] for r in clean["rows"]]
    code, out, _ = cli(capsys, "compare", log, *MACHINE, *SMALL, "--nccl-version", "2.7.8")
    assert code == 0 and "NCCL tuner 2.7.8 (--nccl-version)" in out


def test_a_log_without_a_version_runs_the_newest(capsys, tmp_path):
    text = "\n".join(ln for ln in P4D.read_text().splitlines() if "NCCL version" not in ln)
    code, out, err = cli(capsys, "compare", write(tmp_path, "p4d.txt", text), *MACHINE, *SMALL)
    assert code == 0, err
    assert "NCCL tuner 2.30 (the newest modelled: the log names no NCCL version)" in out


@pytest.mark.parametrize("how, needle", [("log", "the log's NCCL version '2.3.7' is not modelled"),
                                         ("option", "--nccl-version '2.99' is not a modelled")])
def test_an_unmodelled_version_is_one_line_exit_2(capsys, tmp_path, how, needle):
    text = P4D.read_text().replace("NCCL version: 2.7.8", "NCCL version: 2.3.7")
    argv = ["--nccl-version", "2.99"] if how == "option" else []
    code, out, err = cli(capsys, "compare", write(tmp_path, "p4d.txt", text), *MACHINE, *SMALL, *argv)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_compare_checks_symbolic_data_and_times_as_real_data_would(monkeypatch):
    """`compare` simulates with symbolic inputs (each rank's result checked to hold every
    contribution once); the simulated times are bit-identical to a run on real random data."""
    import simcollective.simulate as simulate
    from simcollective.validation.compare import compare

    seen = []
    real_run = simulate.run_allreduce

    def spy(config, graph=None):
        seen.append(config.verify)
        return real_run(config, graph=graph)

    monkeypatch.setattr(simulate, "run_allreduce", spy)
    kw = dict(topology="aws-p4d", nodes=2, min_size=64 * 1024, max_size=4 << 20)
    symbolic = compare(str(P4D), **kw)
    assert set(seen) == {"symbolic"} and all(r["verified"] for r in symbolic["rows"])

    def dense(config, graph=None):
        from dataclasses import replace
        return real_run(replace(config, verify="full"), graph=graph)

    monkeypatch.setattr(simulate, "run_allreduce", dense)
    full = compare(str(P4D), **kw)
    assert [r["simulated_time_us"] for r in full["rows"]] == [r["simulated_time_us"] for r in symbolic["rows"]]
    assert len(full["rows"]) == 7


def test_the_network_of_the_simulated_machine_is_named(capsys, tmp_path):
    """Across nodes, compare names what the simulation crossed (the network line of a run at the
    log's largest size): the preset's transport, its advertised latency and the NIC layout; on
    one node there is no network line."""
    log = write(tmp_path, "p4d.txt", P4D.read_text())
    code, out, err = cli(capsys, "compare", log, "--topology", "aws-p4d", *SMALL, "--json", str(tmp_path / "r.json"))
    assert code == 0, err
    line = ("network: 4 efa-v1 NICs per node, 2 GPUs per NIC, 75 us advertised per network hop; "
            "NCCL's model: 4 network rings at 12 GB/s")
    assert line in out.splitlines()
    assert json.loads((tmp_path / "r.json").read_text())["network"] == line.removeprefix("network: ")
    code, out, err = cli(capsys, "compare", log, "--topology", "aws-p4d", "--ranks", "8", *SMALL)
    assert code == 0 and "network:" not in out


def test_a_bfloat16_log_runs_with_data_of_the_same_width(capsys, tmp_path):
    """``-d bfloat16`` (and the other types bench runs with a stand-in: uint32, int64, uint64):
    simulated with data of the same width, as ``bench`` does, and said so; the times are those
    of the half-precision log of the same sizes."""
    def as_type(text, name, per):
        out = []
        for ln in text.splitlines():
            cols = ln.split()
            if ln[:1] == " " and len(cols) > 3 and cols[2] == "float":
                ln = ln.replace(f" {cols[1]} ", f" {int(cols[0]) // per} ", 1).replace(" float ", f" {name} ", 1)
            out.append(ln)
        return "\n".join(out)

    bf = write(tmp_path, "bf16.txt", as_type(P4D.read_text(), "bfloat16", 2))
    half = write(tmp_path, "half.txt", as_type(P4D.read_text(), "half", 2))
    code, out, err = cli(capsys, "compare", bf, *MACHINE, *SMALL, "--json", str(tmp_path / "bf.json"))
    assert code == 0, err
    assert "bfloat16 (simulated with float16 data, the same width)" in out.splitlines()[0]
    assert cli(capsys, "compare", half, *MACHINE, *SMALL, "--json", str(tmp_path / "half.json"))[0] == 0
    bf_rows, half_rows = (json.loads((tmp_path / f"{n}.json").read_text())["rows"] for n in ("bf", "half"))
    assert [r["simulated_time_us"] for r in bf_rows] == [r["simulated_time_us"] for r in half_rows]
