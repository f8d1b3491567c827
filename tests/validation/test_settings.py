"""NCCL settings read from a log: per section, from the header, applied, overridden, bad values."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

import topologies
from simcollective.errors import UserInputError
from simcollective.validation.nccltests import parse_log, settings_of
from simcollective.validation.settings import log_settings, nccl_version_of, topology_settings
from tests.conftest import row


REF = Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests"

H100 = REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt"


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
    assert ls["not_modelled"] == {} and ls["diagnostic"] == {"NCCL_DEBUG": "INFO"}
    assert ls["topology"] == {"NCCL_IB_QPS_PER_CONNECTION": "2"}       # left to topology_settings
    ls = log_settings(s, "x", "allreduce", "nccl-ring", protocol="ll", channels=8)
    assert ls["overridden"] == {"NCCL_MIN_CTAS": "--channels 8", "NCCL_PROTO": "--protocol ll",
                                "NCCL_NVLS_ENABLE": "--algorithm nccl-ring"}
    assert (ls["min_channels"], ls["protos"], ls["algos"]) == (None, None, None)
    assert log_settings({"NCCL_PROTO": "^LL128"}, "x", "allreduce", "auto")["protos"] == ("ll", "simple")
    ls = log_settings({"NCCL_MIN_CTAS": "24"}, "x", "allreduce", "ring")   # not NCCL's algorithm
    assert ls["min_channels"] is None and "not NCCL's" in ls["not_modelled"]["NCCL_MIN_CTAS"]


def _qps(topology, opts=None, value="2", transport=None):
    """``topology_settings`` of a log stating NCCL_IB_QPS_PER_CONNECTION=value: (options, ls)."""
    g = topologies.build(topology, 2, {"transport": transport} if transport else {}) if topology else nx.DiGraph()
    ls = log_settings({"NCCL_IB_QPS_PER_CONNECTION": value}, "x", "allreduce", "auto")
    return topology_settings(ls, g, topology, dict(opts or {}), "x"), ls


def test_qps_per_connection_sets_net_connections_on_nccls_ib_transport_only():
    """NCCL_IB_QPS_PER_CONNECTION is the QPs of each connection of NCCL's IB transport: the
    preset's net_connections on a hardware family or a shape on IB/RoCE; a net plugin (EFA through
    aws-ofi-nccl, TCPX) does not read it; the user's --topology-opt wins; a graph file takes no option."""
    for topology, transport in (("dgx-h100", None), ("oci-bm-gpu-h100-8", None), ("aws-p4d", "ib-ndr")):
        opts, ls = _qps(topology, transport=transport)
        assert opts == {"net_connections": 2} and ls["applied"] == {"NCCL_IB_QPS_PER_CONNECTION": "2"}
    for topology, transport in (("aws-p4d", None), ("gcp-a3-high", None), ("azure-nd-h100-v5", "efa-v2")):
        opts, ls = _qps(topology, transport=transport)
        assert opts == {} and "is a net plugin" in ls["not_modelled"]["NCCL_IB_QPS_PER_CONNECTION"]
    opts, ls = _qps("dgx-h100", {"net_connections": 4})
    assert opts == {} and ls["overridden"] == {"NCCL_IB_QPS_PER_CONNECTION": "--topology-opt net_connections=4"}
    opts, ls = _qps(None)
    assert opts == {} and "takes no --topology-opt" in ls["not_modelled"]["NCCL_IB_QPS_PER_CONNECTION"]
    with pytest.raises(UserInputError, match="NCCL_IB_QPS_PER_CONNECTION='0' in the log"):
        _qps("dgx-h100", value="0")


@pytest.mark.parametrize("setting,needle", [
    ({"NCCL_MIN_CTAS": "abc"}, "NCCL_MIN_CTAS='abc' in the log: NCCL takes a channel count from 1 to 64"),
    ({"NCCL_MAX_CTAS": "0"}, "NCCL_MAX_CTAS='0'"),
    ({"NCCL_PROTO": "LL256"}, "NCCL_PROTO='LL256'"),
    ({"NCCL_MIN_CTAS": "32", "NCCL_MAX_CTAS": "8"}, "floor 32 is above its ceiling 8"),
])
def test_log_settings_bad_values(setting, needle):
    with pytest.raises(UserInputError, match=needle.replace("(", r"\(").replace("^", r"\^")):
        log_settings(setting, "x", "allreduce", "auto")


@pytest.mark.parametrize("line, version", [
    ("# NCCL version: 2.18.5; CUDA 12.5", "2.18.5"),
    ("# software: NCCL 2.26.2+cuda12.8, CUDA 12.8", "2.26.2"),
    ("host:1234:1234 [0] NCCL INFO NCCL version 2.19.3+cuda12.3", "2.19.3"),
    ("# nccl-tests version 2.17.1 nccl-headers=22809 nccl-library=22809", "2.28.9"),
    ("# NCCL version: not stated (2019)", None),
    ("# NCCL_ALGO=Ring 2.5", None),
])
def test_nccl_versions_as_logs_write_them(line, version):
    assert nccl_version_of([line]) == version


def test_each_section_of_the_h100_thread_has_its_own_version():
    text = (Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests" /
            "h100x8-2to8node-ib400_allreduce_ncclt309.txt").read_text()
    assert [t.nccl_version for t in parse_log(text)] == ["2.26.2", "2.26.2", None, None, None, None, None]


def test_the_hcas_a_log_names_point_to_nics_per_node():
    """``NCCL_IB_HCA`` (the NICs NCCL uses) is not read as a NIC count, but the note says how to
    leave the others out of the machine: ``--topology-opt nics_per_node``."""
    ls = log_settings({"NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}, "log", "allreduce", "auto")
    assert ls["not_modelled"]["NCCL_IB_HCA"].startswith("mlx5_0:1,mlx5_1:1 (the NICs NCCL uses: "
                                                        "--topology-opt nics_per_node=N")


def test_a_version_named_in_notes_is_prose_not_the_runs():
    """Lines under a ``notes:`` key are prose about other runs: a version they name is not the
    log's (as the settings they name are not), a version stated on its own line is."""
    notes = ["# notes: the same test with NCCL 2.19.3 was slower", "#        and NCCL_ALGO=Tree too"]
    assert nccl_version_of(notes) is None and settings_of(notes) == {}
    assert nccl_version_of(notes + ["# NCCL version: 2.18.5"]) == "2.18.5"
    assert nccl_version_of(["NCCL version 2.21.5+cuda12.4"] + notes) == "2.21.5"
