"""Plans: an NVLink domain is one NCCL node, study presets give the model network ports."""

from __future__ import annotations

import pytest

from tests.conftest import machine


def test_nvlink_domain_is_one_nccl_node():
    m = machine("gb200-nvl72", 18)           # 18 hosts of 4 GPUs on one NVLink domain
    assert (m.nnodes, m.ppn, m.nvls) == (1, 72, True)
    m = machine("dgx-h100", 2)
    assert (m.nnodes, m.ppn, m.nic_bw, m.nics) == (2, 8, 48.0, 8)


def test_study_presets_have_network_ports_for_the_model():
    m = machine("abci", 2)                   # PLX switches with InfiniBand cables, no NIC nodes
    assert m.nnodes == 2 and m.nic_bw > 0


def test_nvls_efficiency_follows_nccls_ratio_between_architectures():
    """The profile's NVLS efficiency is fitted on Hopper (8 x H100); NCCL's model gives
    Blackwell's NVLS a smaller share of its NVLink (nvlsEfficiency 0.74 against Hopper's
    0.85), so a B200 node's NVLS plan sends (0.85 / 0.74) x the bytes per byte of data
    that an H100 node's does (same 8 GPUs: the same (P + 1) / (2 (P - 1)) otherwise)."""
    import topologies
    from simcollective.nccl.plans import make_plan
    from simcollective.profiles import load_profile

    prof = load_profile("nccl")
    wires = {}
    for name in ("dgx-h100", "dgx-b200"):
        g = topologies.build(name, 1, {})
        gpus = sorted(n for n, d in g.nodes(data=True) if d.get("kind") == "gpu")
        wires[name] = make_plan(g, gpus, prof, "nvls", 1 << 30).wire
    assert wires["dgx-h100"] == (9 / 14) / prof.nccl.nvls_efficiency
    assert wires["dgx-b200"] / wires["dgx-h100"] == pytest.approx(0.85 / 0.74, rel=1e-12)
