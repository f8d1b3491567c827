"""NCCL's version as an input: the families' algorithms and constants change the tuner's pick
where they must, the newest family is today's model exactly, bad versions are one line."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simcollective.errors import UserInputError
from simcollective.nccl import coll_model, model
from simcollective.nccl.constants import NcclConstants
from simcollective.nccl.versions import FAMILIES, NEWEST, parse_version, tuner_named, version_of
from tests.conftest import machine, run_cli

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10


def with_tuner(m, version):
    return dataclasses.replace(m, tuner=tuner_named(version))


def test_families_cover_2_4_to_2_30_without_gaps():
    for a, b in zip(FAMILIES, FAMILIES[1:]):
        assert b.first == (a.last[0], a.last[1] + 1)
    assert FAMILIES[0].first == (2, 4) and FAMILIES[-1].last == (2, 30)
    assert version_of(NEWEST) is FAMILIES[-1]


def test_the_newest_family_is_the_profile_and_the_model_unchanged():
    fam = version_of("2.30.7")
    table = NcclConstants.default()
    assert fam.base == table.base and fam.hop == table.hop
    assert fam.base == model.BASE_LAT and fam.hop == model.HW_LAT


@pytest.mark.parametrize("version, algo", [("2.16", "ring"), ("2.16.5", "ring"), ("2.30", "nvls"), (None, "nvls")])
def test_dgx_h100_1gib_picks_nvls_only_from_2_17(version, algo):
    m = with_tuner(machine("dgx-h100"), version)
    assert model.choose(m, GiB)[0] == algo


def test_nvlstree_exists_from_2_18_across_nodes():
    m = machine("dgx-h100", nodes=2)
    assert model.choose(with_tuner(m, "2.18"), 4 * GiB)[0] == "nvlstree"
    assert model.choose(with_tuner(m, "2.17"), 4 * GiB)[0] != "nvlstree"
    assert not model.enabled(with_tuner(m, "2.17"), "nvlstree", "simple")


def test_nvls_allgather_exists_from_2_19():
    m = machine("dgx-h100")
    assert not coll_model.coll_enabled(with_tuner(m, "2.18"), "allgather", "nvls", "simple")
    assert coll_model.coll_enabled(with_tuner(m, "2.19"), "allgather", "nvls", "simple")


def test_ring_ll_bandwidth_before_2_21_is_half_of_todays_for_allreduce():
    # 2.18-2.20: busBw x 1/4 (allreduce) where 2.21 on has x 1/2; one 24 GB/s ring: 6 and 12 GB/s,
    # both below the llMaxBw cap (39 GB/s across nodes)
    m = machine("dgx-a100", nodes=2, opts={"nics_per_node": 1})
    graphs = model.graphs_of(m)
    new = model.bandwidth(with_tuner(m, "2.21"), graphs, "ring", "ll")
    old = model.bandwidth(with_tuner(m, "2.20"), graphs, "ring", "ll")
    assert old == pytest.approx(new / 2)
    assert new == pytest.approx(0.5 * 24.0 * 16 / 30)


def test_tree_simple_latency_follows_the_family_tables():
    # 2 nodes x 8: L = base + 2 ((ppn - 1) x NVLink hop + log2(2) x net hop)
    m = machine("dgx-h100", nodes=2)
    graphs = model.graphs_of(m)
    assert model.latency(with_tuner(m, "2.30"), graphs, "tree", "simple") == pytest.approx(8.4 + 2 * (7 * 4.0 + 14.0))
    assert model.latency(with_tuner(m, "2.20"), graphs, "tree", "simple") == pytest.approx(0.0 + 2 * (7 * 28.0 + 28.0))
    assert model.latency(with_tuner(m, "2.12"), graphs, "tree", "simple") == pytest.approx(0.0 + 2 * (7 * 28.0 + 28.0))


@pytest.mark.parametrize("text", ["2.3", "2.31", "3.0", "two", "2", "2.18.x", 2.18])
def test_bad_versions_are_refused(text):
    with pytest.raises(UserInputError) as e:
        parse_version(text)
    assert "2.4 to 2.30" in str(e.value) and "\n" not in str(e.value)


def test_suffixes_are_dropped():
    assert parse_version("2.18.5+cuda12.2") == (2, 18, 5)
    assert parse_version("2.12.12-1") == (2, 12, 12)


def test_a_release_tag_reads_as_its_version():
    """NCCL's git tags (``v2.18.3-1``), as a user copies them from the release page."""
    assert parse_version("v2.18.3-1") == (2, 18, 3) and parse_version("V2.30") == (2, 30, None)


def test_run_names_the_version_and_changes_the_pick(capsys, tmp_path):
    out = {}
    for v in ("2.16", "2.30"):
        path = tmp_path / f"{v}.json"
        code, _, err = run_cli(capsys, "run", "--algorithm", "nccl", "--topology", "dgx-h100", "--bytes", "1G",
                               "--verify", "symbolic", "--nccl-version", v, "--json", path)
        assert code == 0, err
        out[v] = json.loads(path.read_text())
    assert out["2.16"]["nccl_version"] == "2.16" and out["2.16"]["algorithm_chosen"] == "nccl-ring"
    assert out["2.30"]["algorithm_chosen"] == "nccl-nvls"
    code, text, _ = run_cli(capsys, "run", "--algorithm", "nccl", "--topology", "dgx-h100", "--bytes", "1M",
                            "--verify", "symbolic", "--nccl-version", "2.18.5")
    assert code == 0 and "NCCL 2.18.5's tuner" in text
    for tag in ("v2.18.5-1", "2.18.5+cuda12.2"):   # the release's name, as copied from a tag or a log
        code, text, _ = run_cli(capsys, "run", "--algorithm", "nccl", "--topology", "dgx-h100", "--bytes", "1M",
                                "--verify", "symbolic", "--nccl-version", tag)
        assert code == 0 and "NCCL 2.18.5's tuner" in text and tag not in text


def test_default_run_is_the_newest_and_equals_an_explicit_2_30(capsys, tmp_path):
    times = []
    for extra in ([], ["--nccl-version", "2.30"]):
        path = tmp_path / f"{len(extra)}.json"
        code, _, err = run_cli(capsys, "run", "--algorithm", "nccl", "--topology", "dgx-h100", "--nodes", "2",
                               "--bytes", "64M", "--verify", "symbolic", "--json", path, *extra)
        assert code == 0, err
        js = json.loads(path.read_text())
        assert js["nccl_version"] == NEWEST
        times.append(js["time_s"])
    assert times[0] == times[1]


@pytest.mark.parametrize("argv, needle", [
    (["--algorithm", "nccl", "--nccl-version", "2.31"], "2.31"),
    (["--algorithm", "nccl", "--nccl-version", "1.9"], "1.9"),
    (["--algorithm", "ring", "--nccl-version", "2.18"], "not used by the algorithm 'ring'"),
    (["--algorithm", "nccl-nvls", "--nccl-version", "2.16"], "NVLS for allreduce from 2.17"),
])
def test_bad_version_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run_cli(capsys, "run", "--topology", "dgx-h100", "--bytes", "1G", "--verify", "symbolic", *argv)
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bench_takes_the_version(capsys):
    code, out, err = run_cli(capsys, "bench", "--algorithm", "nccl", "--topology", "dgx-h100", "-b", "1G", "-e", "1G",
                             "--verify", "symbolic", "--nccl-version", "2.31")
    assert code == 2 and "2.4 to 2.30" in err


def test_sweep_takes_the_version_as_a_grid_key(capsys, tmp_path):
    import csv

    cfg = tmp_path / "v.toml"
    cfg.write_text('name = "v"\n[fixed]\ntopology = "dgx-h100"\nprofile = "nccl"\nverify = "symbolic"\n'
                   '[[grid]]\nalgorithm = ["nccl"]\nbytes = ["1G"]\nnccl_version = ["2.16", "2.30"]\n')
    code, _, err = run_cli(capsys, "sweep", cfg, "--out", tmp_path / "v.csv", "--workers", "1")
    assert code == 0, err
    rows = {r["nccl_version"]: r for r in csv.DictReader((tmp_path / "v.csv").open())}
    assert rows["2.16"]["algorithm_chosen"] == "nccl-ring" and rows["2.30"]["algorithm_chosen"] == "nccl-nvls"


@pytest.mark.parametrize("value, needle", [('["2.31"]', "'2.31' is not a modelled"), ("[2.20]", "must be given as text")])
def test_a_bad_sweep_version_is_refused_before_any_point(capsys, tmp_path, value, needle):
    cfg = tmp_path / "v.toml"
    cfg.write_text(f'name = "v"\n[fixed]\ntopology = "dgx-h100"\n[[grid]]\nalgorithm = ["nccl"]\nbytes = ["1G"]\n'
                   f'nccl_version = {value}\n')
    code, out, err = run_cli(capsys, "sweep", cfg, "--out", tmp_path / "v.csv")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "v.csv").exists()


def test_blackwell_reads_hoppers_rows_before_2_27():
    """The tuner's per-architecture tables have a Blackwell row from 2.27; an earlier release
    indexes them compCap >= 90 -> Hopper, so 2 x 8 B200 (8 NICs) under 2.25 caps ring LL128 at
    Hopper's 36.7 GB/s per channel, under 2.27 and 2.30 at Blackwell's 40. 8 searched rings of
    48 GB/s: busBw = min(0.92 x 8 x 48, 8 x cap), allgather BW = busBw x 16 / 15."""
    m = machine("dgx-b200", nodes=2, opts={"nics_per_node": 8})
    graphs = model.graphs_of(m)
    assert (graphs["ring"].nchannels, graphs["ring"].bw_intra) == (8, 48.0)
    old = coll_model.coll_bandwidth(with_tuner(m, "2.25.1"), graphs, "allgather", "ring", "ll128")
    assert old == pytest.approx(8 * 36.7 * 16 / 15)
    for version in ("2.27", "2.30", None):
        new = coll_model.coll_bandwidth(with_tuner(m, version), graphs, "allgather", "ring", "ll128")
        assert new == pytest.approx(8 * 40.0 * 16 / 15)
    assert model.bandwidth(with_tuner(m, "2.26"), graphs, "ring", "ll128") == pytest.approx(8 * 36.7 * 16 / 30)
    # one node: llMaxBw's row (Hopper 141, Blackwell 282 GB/s) caps ring LL
    one = machine("dgx-b200")
    g1 = model.graphs_of(one)
    assert model.bandwidth(with_tuner(one, "2.25"), g1, "ring", "ll") == pytest.approx(141.0 * 8 / 14)
    assert model.bandwidth(with_tuner(one, "2.27"), g1, "ring", "ll") == pytest.approx(282.0 * 8 / 14)
    # a Hopper machine reads Hopper's row whatever the release
    h = machine("dgx-h100", nodes=2)
    gh = model.graphs_of(h)
    assert model.bandwidth(with_tuner(h, "2.25"), gh, "ring", "ll128") == \
        model.bandwidth(with_tuner(h, "2.30"), gh, "ring", "ll128")


def test_nvls_bandwidth_before_2_28_follows_its_release_rule():
    """Before nvlsEfficiency (2.28) NCCL's NVLS / NVLSTree allreduce bandwidth is, per NVLS
    channel, min(bwIntra, bwInter) with bwInter halved for NVLSTree beyond 2 nodes, times 5/6
    (2.19-2.27); 2.18's NVLSTree ratio is 0.70 x nNodes / (2 (nNodes - 1)). DGX H100 NVLS graph:
    8 channels, bwIntra 40, bwInter 48."""
    one, two, four = machine("dgx-h100"), machine("dgx-h100", 2), machine("dgx-h100", 4)
    g1, g2, g4 = model.graphs_of(one), model.graphs_of(two), model.graphs_of(four)
    assert (g4["nvlstree"].nchannels, g4["nvlstree"].bw_intra, g4["nvlstree"].bw_inter) == (8, 40.0, 48.0)
    assert (g1["nvls"].bw_intra, g1["nvls"].bw_inter) == (40.0, 60.0)
    assert model.bandwidth(with_tuner(one, "2.26"), g1, "nvls", "simple") == pytest.approx(8 * 40.0 * 5 / 6)
    assert model.bandwidth(with_tuner(two, "2.22"), g2, "nvlstree", "simple") == pytest.approx(8 * 40.0 * 5 / 6)
    assert model.bandwidth(with_tuner(four, "2.26.2"), g4, "nvlstree", "simple") == pytest.approx(8 * 24.0 * 5 / 6)
    assert model.bandwidth(with_tuner(four, "2.27"), g4, "nvlstree", "simple") == pytest.approx(8 * 24.0 * 5 / 6)
    assert model.bandwidth(with_tuner(four, "2.18"), g4, "nvlstree", "simple") == \
        pytest.approx(8 * 40.0 * 0.70 * 4 / 6)
    # 2.28 on: nvlsEfficiency's rule, the newest model's
    for version in ("2.28", "2.30"):
        assert model.bandwidth(with_tuner(four, version), g4, "nvlstree", "simple") == \
            model.bandwidth(four, g4, "nvlstree", "simple")
    # so 4 x 8 H100 under 2.26 leaves NVLSTree for the ring from 256 MiB, under 2.30 from 1 GiB
    assert model.choose(with_tuner(four, "2.26.2"), 256 * MiB)[0] == "ring"
    assert model.choose(with_tuner(four, "2.30"), 256 * MiB)[0] == "nvlstree"
    assert model.choose(with_tuner(four, "2.26.2"), 128 * MiB)[0] == "nvlstree"


def test_ring_allreduce_latency_counts_2_nnodes_network_steps_under_2_18():
    """NCCL 2.18's ring allreduce latency counts 2 nNodes network steps where 2.30 counts
    2 (nNodes - 1): on 2 x 8 H100 (30 steps) LL is 6.6 + 26 x 1.0 + 4 x 2.7 under 2.18 and
    6.6 + 28 x 1.0 + 2 x 2.7 under 2.30 (NVLink hop max(0.6, the 1 us net overhead)); one node
    counts none under either."""
    m = machine("dgx-h100", nodes=2)
    graphs = model.graphs_of(m)
    assert model.latency(with_tuner(m, "2.18.5"), graphs, "ring", "ll") == pytest.approx(6.6 + 26 * 1.0 + 4 * 2.7)
    assert model.latency(with_tuner(m, "2.30"), graphs, "ring", "ll") == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)
    assert model.latency(with_tuner(m, "2.19"), graphs, "ring", "ll") == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)
    one = machine("dgx-h100")
    assert model.latency(with_tuner(one, "2.18"), model.graphs_of(one), "ring", "ll") == pytest.approx(6.6 + 14 * 0.6)
