"""Plans: an NVLink domain is one NCCL node, study presets give the model network ports."""

from __future__ import annotations

from tests.conftest import machine


def test_nvlink_domain_is_one_nccl_node():
    m = machine("gb200-nvl72", 18)           # 18 hosts of 4 GPUs on one NVLink domain
    assert (m.nnodes, m.ppn, m.nvls) == (1, 72, True)
    m = machine("dgx-h100", 2)
    assert (m.nnodes, m.ppn, m.nic_bw, m.nics) == (2, 8, 48.0, 8)


def test_study_presets_have_network_ports_for_the_model():
    m = machine("abci", 2)                   # PLX switches with InfiniBand cables, no NIC nodes
    assert m.nnodes == 2 and m.nic_bw > 0
