"""The network model's per-connection cap: hand-computed on two nodes, on every preset's NIC cables, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

import topologies
from simcollective.profiles import load_profile
from simcollective.runtime import run_ranks
from tests.conftest import Blob, run_cli


REF = Path(__file__).resolve().parents[2] / "experiments" / "nccl-tests"

H100 = REF / "h100x8-2to8node-ib400_allreduce_ncclt309.txt"



def p2p(cap, k=1, size=10**9):
    """k messages of ``size`` bytes at once from n0/gpu0 to n1/gpu0 (rail 0), ideal profile."""
    g = topologies.build("dgx-h100", 2, {} if cap is None else {"net_conn_bandwidth": cap})

    def main(comm):
        if comm.rank == 0:
            yield comm.waitall([comm.isend(1, Blob(size), tag=t) for t in range(k)])
        else:
            yield comm.waitall([comm.irecv(0, tag=t) for t in range(k)])

    return run_ranks(g, ["n0/gpu0", "n1/gpu0"], main, lambda r: (), load_profile("ideal")).makespan


def test_connection_cap_hand_computed_on_two_nodes():
    # route GPU -> PCIe (63 GB/s) -> NIC -> rail leaf -> NIC -> PCIe -> GPU: the 400G NIC
    # (50e9 bytes/s) is the bottleneck; latency 4 x 0.5 + 2 x 0.3 + 0.1 = 2.7 us
    lat = 2.7e-6
    assert p2p(None) == pytest.approx(lat + 1e9 / 50e9, rel=1e-12)
    assert p2p(10e9) == pytest.approx(lat + 1e9 / 10e9, rel=1e-12)          # binds: 10 < 50
    assert p2p(100e9) == p2p(None)                                          # does not bind
    # two connections on one NIC: 2 x 20 = 40 < 50 leaves the NIC partly idle; 2 x 30 > 50 fills it
    assert p2p(20e9, k=2) == pytest.approx(lat + 1e9 / 20e9, rel=1e-12)
    assert p2p(30e9, k=2) == pytest.approx(lat + 2e9 / 50e9, rel=1e-12)
    assert p2p(None, k=2) == p2p(30e9, k=2)


@pytest.mark.parametrize("name", ["dgx1-v100", "dgx2-v100", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72"])
def test_every_hardware_preset_takes_the_connection_cap_on_its_nic_cables(name):
    g = topologies.build(name, 2, {"net_conn_bandwidth": 2e10})
    capped = [(u, v) for u, v, d in g.edges(data=True) if "flow_bandwidth" in d]
    assert capped and g.graph["net_conn_bandwidth"] == 2e10
    for u, v in capped:
        assert "nic" in (g.nodes[u]["kind"], g.nodes[v]["kind"])
        assert g.edges[u, v]["link_type"] in ("infiniband", "ethernet")
    plain = topologies.build(name, 2)
    assert "net_conn_bandwidth" not in plain.graph
    assert not any("flow_bandwidth" in d for _, _, d in plain.edges(data=True))


@pytest.mark.parametrize("value,needle", [
    ("0", "net_conn_bandwidth must be a number from 1e8 to 1e12"),
    ("-1", "net_conn_bandwidth must be a number from 1e8 to 1e12"),
    ("abc", "bad value 'abc' for option 'net_conn_bandwidth'"),
])
def test_connection_cap_bad_values(capsys, value, needle):
    code, out, err = run_cli(capsys, "compare", str(H100), "--section", "4", "--topology", "dgx-h100", "--nodes", "2",
                         "--topology-opt", f"net_conn_bandwidth={value}")
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""
