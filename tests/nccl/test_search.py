"""NCCL's search (``nccl/search.py``): channel counts, NVLS graph, rings (Hamiltonian, rail-aligned), double binary trees."""

from __future__ import annotations

import pytest

import topologies
from simcollective.nccl import model, search
from simcollective.patterns.trees import btree, dtree
from tests.conftest import machine


# -- NCCL's search: channels as NCCL's topology search derives them ---------------------------
@pytest.mark.parametrize("name,nodes,ring,comm", [
    ("dgx1-v100", 1, (6, 20.0), 12),
    ("dgx-a100", 1, (12, 20.0), 24),
    ("dgx-h100", 1, (12, 30.0), 24),
    ("dgx-h100", 2, (8, 48.0), 16),
])
def test_channel_counts_as_nccl_derives_them(name, nodes, ring, comm):
    g = model.graphs_of(machine(name, nodes))["ring"]
    assert (g.nchannels, g.bw_intra) == ring
    assert g.comm_channels == comm


def test_nvls_graph_on_8xh100():
    m = machine("dgx-h100")
    assert m.nvls
    g = model.graphs_of(m)["nvls"]
    assert (g.nchannels, g.bw_intra, g.bw_inter, g.comm_channels) == (8, 40.0, 60.0, 16)
    assert not machine("dgx-a100").nvls and not machine("dgx1-v100").nvls


def test_dgx1_rings_are_nvlink_hamiltonian_cycles_within_capacity():
    m = machine("dgx1-v100")
    nrings, speed, rings = search.ring_search(m)
    assert (nrings, speed) == (6, 20.0)
    used: dict = {}
    for ring in rings:
        assert sorted(ring) == list(range(8))
        for a, b in zip(ring, ring[1:] + ring[:1]):
            assert (a, b) in m.direct          # every hop is a direct NVLink
            used[(a, b)] = used.get((a, b), 0) + speed
    assert all(used[e] <= m.direct[e] + 1e-9 for e in used)


def test_rings_are_rail_aligned_across_nodes():
    m = machine("dgx-h100", 4)
    g = topologies.build("dgx-h100", 4, {})
    for order in search.ring_orders(m, 16):
        assert sorted(order) == list(range(32))
        for a, b in zip(order, order[1:] + order[:1]):
            if a // 8 != b // 8:   # a network hop: same local GPU, hence the same NIC and rail
                assert g.nodes[m.gpus[a]]["local"] == g.nodes[m.gpus[b]]["local"]


@pytest.mark.parametrize("n", range(1, 18))
def test_double_binary_trees_are_trees(n):
    for make in (btree, dtree):
        roots = [v for v in range(n) if make(n, v)[0] is None]
        assert len(roots) == 1
        for v in range(n):
            p, kids = make(n, v)
            assert len(kids) <= 2
            for k in kids:
                assert make(n, k)[0] == v
            if p is not None:
                assert v in make(n, p)[1]
    if n % 2 == 0 and n > 2:  # the mirror: tree 1's leaves are tree 0's interior nodes
        leaves0 = {v for v in range(n) if not btree(n, v)[1]}
        leaves1 = {v for v in range(n) if not dtree(n, v)[1]}
        assert leaves0 == {n - 1 - v for v in leaves1}


# -- NVL72 domains: NCCL's caps on heads and on rings through a GPU's NVLink ---------------------
def test_nvls_heads_are_capped_at_nccl_max_nvls_arity():
    """72 GPUs in one NVLink domain: NVLS has at most NCCL_MAX_NVLS_ARITY = 32 heads, each head
    needing (heads + 1) x bwIntra on every GPU link (722 GB/s: 33 x 20 fits, 33 x 24 does not),
    so NCCL's NVLS busbw stays below 2 x nvlsEfficiency x NVLink (not 72 heads x 26 GB/s)."""
    m = machine("gb200-nvl72", 18)
    g = model.graphs_of(m)["nvls"]
    assert (g.nchannels, g.bw_intra) == (32, 20.0)
    bus = model.bandwidth(m, model.graphs_of(m), "nvls", "simple") * 2 * (m.nranks - 1) / m.nranks
    assert bus < 2 * 0.74 * m.nvlink_total
    assert model.graphs_of(machine("dgx-h100"))["nvls"].nchannels == 8


@pytest.mark.parametrize("name,ring", [
    ("gb200-nvl72", (16, 45.1)),     # 15 x 48 = 720 fit 722.0, 16 x 45.1 = 721.6 fit better
    ("dgx-h100", (8, 48.0)),         # each GPU forwards the 7 rings that leave by other GPUs' NICs
])
def test_multi_node_rings_fit_every_gpus_nvlink(name, ring):
    """Across nodes a ring runs NET -> GPU a -> ... -> GPU x -> NET: every GPU of the node
    forwards it over NVLink except the one whose NIC it leaves by, so a GPU's NVLink carries
    the rings leaving by other GPUs (NCCL's search subtracts each ring's speed from every link);
    two NVL72 racks have 72 NICs per NVLink domain but room for 15 rings at 48 GB/s, and the
    search's next speed (45.1) fits 16."""
    nodes = 36 if name == "gb200-nvl72" else 2
    m = machine(name, nodes)
    g = model.graphs_of(m)["ring"]
    assert (g.nchannels, g.bw_intra) == ring
    forwarded = g.nchannels - g.nchannels // m.ppn
    assert forwarded * g.bw_intra <= m.nvlink_total + 1e-9


@pytest.mark.parametrize("name,nodes,inter,busbw", [
    ("gcp-a3-mega", 2, 24.0, 8 * 48.0),   # 200G per head: min(59.5, 2 x 24, 57.7) = 48
    ("dgx-h100", 2, 48.0, 8 * 57.7),      # 400G: the per-channel cap 57.7 binds, as before
    ("dgx-h100", 4, 48.0, 8 * 45.5),      # N4 cap 45.5 below the head's 48
])
def test_nvlstree_heads_cross_at_most_at_their_own_nics_speed(name, nodes, inter, busbw):
    """Each NVLSTree head sends and receives its share over its own NIC: NCCL's search gives
    the NVLS graph a bwInter no faster than the head's GPU -> NIC path (200 Gb/s TCPXO NICs:
    24 GB/s), so NCCL's model of a 2 x 8 A3 Mega allreduce stays under the NICs' line rate."""
    m = machine(name, nodes)
    graphs = model.graphs_of(m)
    assert graphs["nvlstree"].bw_inter == inter
    got = model.bandwidth(m, graphs, "nvlstree", "simple") * 2 * (m.nranks - 1) / m.nranks
    assert got == pytest.approx(busbw, rel=1e-9)
