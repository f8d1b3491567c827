"""The machines people rent (topologies.hardware.cloud): their figures as built, their
transport on the NICs, bad input, and runs on a few of them."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from tests.conftest import machine, run_cli
from topologies import PRESETS, TopologyError, build, describe, gpus
from topologies.hardware.cloud import FAMILY_GPUS, SHAPES
from topologies.hardware.common import MAX_NICS_PER_GPU
from topologies.summary import figures
from topologies.transports import transport

#: shapes with more NICs than the builders' bound (MAX_NICS_PER_GPU per GPU) allows (none)
OVER_BOUND = sorted(name for name, s in SHAPES.items() if s.nics > MAX_NICS_PER_GPU * FAMILY_GPUS[s.family])
BUILDABLE = [name for name in SHAPES if name not in OVER_BOUND]
REQUIRED = ["dgx-h200", "dgx-b300", "gb300-nvl72", "aws-p3dn", "aws-p4d", "aws-p4de", "aws-p5",
            "aws-p5en", "aws-p6-b200", "gcp-a3-high", "gcp-a3-mega", "gcp-a3-ultra", "gcp-a4",
            "gcp-a4x", "azure-nd-a100-v4", "azure-nd-h100-v5", "azure-nd-h200-v5",
            "azure-nd-gb200-v6", "oci-bm-gpu4-8", "oci-bm-gpu-a100-v2-8", "oci-bm-gpu-h100-8",
            "oci-bm-gpu-h200-8", "oci-bm-gpu-gb200-4", "oci-bm-gpu-gb300-4"]


def _nics(G, server=0):
    return sorted(n for n, d in G.nodes(data=True)
                  if d.get("kind") == "nic" and n.startswith(f"n{server}/"))


def _time(capsys, *argv):
    code, out, err = run_cli(capsys, "run", *argv, "--json", "-", "--quiet")
    assert code == 0, err
    return json.loads(out)


def test_every_required_shape_is_a_preset_with_sourced_figures():
    assert set(REQUIRED) <= set(SHAPES) and set(SHAPES) <= set(PRESETS)
    for name in SHAPES:
        rows = figures(name)
        assert rows and all(str(source).strip() for _, _, source in rows), name
        keys = {k for k, _, _ in rows}
        assert {"gpu_model", "transport", "nics_per_node", "nic_bandwidth", "net_latency",
                "transport.net_latency", "transport.net_protocols"} <= keys


@pytest.mark.parametrize("name", BUILDABLE)
def test_shape_as_built(name):
    """GPUs of the shape's model, the shape's NIC count and rate, its transport on every NIC and
    NIC cable, and the transport's advertised latency unless the shape gives its own."""
    shape = SHAPES[name]
    nodes = 2
    G = build(name, nodes)
    t = transport(shape.transport)
    per_node = G.graph["gpus_per_node"]
    assert per_node == FAMILY_GPUS[shape.family]
    assert len(gpus(G)) == nodes * per_node
    assert {G.nodes[g]["model"] for g in gpus(G)} == {shape.gpu_model}
    nics = _nics(G)
    assert len(nics) == shape.nics
    for nic in nics:
        assert G.nodes[nic]["transport"] == t.name
        (leaf,) = [v for v in G.successors(nic) if G.nodes[v].get("kind") == "switch"]
        cable = G.edges[nic, leaf]
        assert cable["transport"] == t.name and cable["link_type"] == t.link_type
        assert cable["bandwidth"] == shape.figures["nic_bandwidth"]
    net_latency = shape.figures.get("net_latency", t.net_latency)
    assert G.graph.get("net_latency", 0.0) == net_latency
    assert G.graph["transport"] == t.name and G.graph["name"] == name
    assert set(describe(G)["links"]) <= {"nvlink", "nvswitch", "pcie", t.link_type}




def _bound_allows_32():
    try:
        build("dgx-h100", 1, {"nics_per_node": "32"})
    except TopologyError:
        return False
    return True


@pytest.mark.skipif(not _bound_allows_32(), reason="needs the NIC-count bound of 4 per GPU "
                    "(nics_per_node up to 32, from the multi-NIC work) in _check_nics")
def test_p5_has_32_efa_devices():
    G = build("aws-p5", 2)
    assert len(_nics(G)) == 32 and G.graph["transport"] == "efa-v2"
    assert G.edges["n0/nic31", "su0/leaf31"]["bandwidth"] == 12.5e9


def test_an_800g_nic_is_not_capped_by_pcie():
    """B300 / GB300: ConnectX-8 at 800 Gb/s on a PCIe Gen6 attach: every cable from a GPU to
    its NIC carries at least the NIC's 100e9 bytes/s."""
    for name in ("dgx-b300", "gb300-nvl72"):
        G = build(name, 2)
        gpu = "n0/gpu0"
        path = nx.shortest_path(G, gpu, G.nodes[gpu]["nic"])
        assert min(G.edges[u, v]["bandwidth"] for u, v in zip(path, path[1:])) >= 100e9
        assert G.edges[G.nodes[gpu]["nic"], "su0/leaf0"]["bandwidth"] == 100e9


def test_transport_option_changes_the_figures_it_gives():
    G = build("aws-p4d", 2, {"transport": "efa-v3", "net_latency": "1e-5"})
    assert G.graph["transport"] == "efa-v3" and G.graph["net_latency"] == 1e-5
    H = build("gcp-a4", 2, {"transport": "tcpxo"})
    assert H.graph["net_latency"] == transport("tcpxo").net_latency
    assert machine("gcp-a4", 2, {"transport": "tcpx"}).net_protocols == ("simple",)
    assert machine("aws-p4d", 2).net_latency_us == pytest.approx(75.0)
    assert machine("aws-p3dn", 2).net_latency_us == pytest.approx(150.0)


@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if "net_latency" in s.figures])
def test_another_transport_brings_its_own_advertised_latency(name):
    """A shape's own ``net_latency`` is what its transport's plugin advertises there (aws-ofi-nccl
    on p4d: 75 us): with another transport the preset takes that transport's figure (NCCL's IB
    transport advertises none; EFA v3 35 us), as it does for the protocols; given, it wins."""
    own = SHAPES[name]
    assert build(name, 2).graph["net_latency"] == own.figures["net_latency"]
    assert build(name, 2, {"transport": own.transport}).graph["net_latency"] == own.figures["net_latency"]
    for other in ("ib-ndr", "efa-v3", "tcpxo"):
        if other != own.transport:
            G = build(name, 2, {"transport": other})
            assert G.graph.get("net_latency", 0.0) == transport(other).net_latency, other
    assert build(name, 2, {"transport": "ib-ndr", "net_latency": "1e-5"}).graph["net_latency"] == 1e-5


def test_show_names_the_shapes_own_latency():
    rows = {k: (v, src) for k, v, src in figures("aws-p4d")}
    assert rows["net_latency"][0] == 75e-6 and "[OFI-plat]" in rows["net_latency"][1]


@pytest.mark.parametrize("name, good, bad", [
    ("aws-p5", [1, 2, 4, 8, 16, 24, 32], [3, 5, 12, 31]),
    ("aws-p4d", [1, 2, 4], [3]),
    ("oci-bm-gpu-gb300-4", [1, 2, 4, 8], [3, 6]),
    ("aws-p3dn", [1], [2]),
])
def test_nics_left_out_leave_every_gpu_an_equal_share(name, good, bad):
    """NICs left out of a shape (as NCCL_IB_HCA does) leave the GPUs an equal share of the rest:
    k NICs per GPU or one NIC per GPUs / k GPUs; an uneven count (3 on p5's 8 GPUs: 3, 3 and 2
    GPUs on a NIC) is not the shape with NICs left out and is refused, naming the allowed ones."""
    for k in good:
        assert len(_nics(build(name, 1, {"nics_per_node": str(k)}))) == k
    for k in bad:
        with pytest.raises(TopologyError) as e:
            build(name, 1, {"nics_per_node": str(k)})
        allowed = ", ".join(map(str, good))
        assert f"nics_per_node must be one of {allowed}" in str(e.value) and f"got {k}" in str(e.value)


@pytest.mark.parametrize("name, keys", [
    ("aws-p3dn", ("gpu_model", "nics_per_node", "nic_bandwidth")),
    ("aws-p5en", ("transport", "pcie_bandwidth")),
    ("aws-p6-b200", ("transport", "nics_per_node", "nic_bandwidth")),
    ("azure-nd-h200-v5", ("transport", "nics_per_node", "nic_bandwidth")),
    ("oci-bm-gpu-h100-8", ("nic_bandwidth",)),
])
def test_figures_no_document_gives_say_unverified(name, keys):
    """Figures the shape's public documents do not give (p3dn's spec page, EFA generations,
    OCI's per-HCA rates) are marked unverified in their source, for the user to check."""
    for key in keys:
        assert "unverified" in SHAPES[name].sources[key], (name, key)


def test_unequal_nvl72_racks_over_the_rails():
    G = build("gb300-nvl72", 34, {"domain_hosts": "18,16"})
    assert G.out_degree("nvl0/nvswitch") == 72 and G.out_degree("nvl1/nvswitch") == 64
    assert G.has_edge("n33/gpu3", "nvl1/nvswitch") and not G.has_edge("n17/gpu0", "nvl1/nvswitch")
    assert G.edges["n33/nic0", "su1/leaf0"]["bandwidth"] == 100e9


@pytest.mark.parametrize("opt, words", [
    ("transport=myrinet", ["unknown transport 'myrinet'", "ib-ndr", "efa-v1", "tcpxo"]),
    ("nics_per_node=8", ["aws-p4d has 4 NICs per node", "one of 1, 2, 4", "got 8"]),
    ("nics_per_node=3", ["aws-p4d has 4 NICs per node", "one of 1, 2, 4", "got 3"]),
    ("domain_hosts=18,18", None),
])
def test_bad_input_is_one_line_and_exit_2(capsys, opt, words):
    topo = "aws-p4d" if words else "gb300-nvl72"
    code, out, err = run_cli(capsys, "run", "--topology", topo, "--nodes", "2", "--algorithm",
                             "ring", "--bytes", "1024", "--topology-opt", opt)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    for word in words or ["domain_hosts must be", "adding up to nodes = 2", "'18,18'"]:
        assert word in err


def test_unknown_preset_lists_the_new_ones(capsys):
    code, _, err = run_cli(capsys, "topologies", "--show", "aws-p9")
    assert code == 2 and "aws-p9" in err and "gcp-a3-mega" in err and "oci-bm-gpu-gb300-4" in err


def test_show_lists_figures_sources_and_keys(capsys):
    code, out, _ = run_cli(capsys, "topologies", "--show", "gcp-a3-mega")
    assert code == 0
    assert "tcpxo" in out and "[GKE-TCPX]" in out and "NOT PUBLISHED" in out
    (keys,) = [ln for ln in out.splitlines() if ln.startswith("--topology-opt keys:")]
    assert "transport" in keys and "nics_per_node" in keys and "net_latency" in keys
    code, out, _ = run_cli(capsys, "topologies", "--show", "dgx-h100")
    (row,) = [ln for ln in out.splitlines() if ln.split()[:1] == ["nic_bandwidth"]]
    assert "NDR 400 Gb/s" in row          # a family preset: its docstring's source
    (row,) = [ln for ln in out.splitlines() if ln.split()[:1] == ["oversubscription"]]
    assert "Rail leaf down : up bandwidth" in row
    code, out, _ = run_cli(capsys, "topologies")
    assert code == 0 and all(any(ln.split()[0] == n for ln in out.splitlines()) for n in REQUIRED)


def test_small_message_floor_is_the_transports(capsys):
    """8 bytes, 2 x 8 GPUs, profile nccl: NCCL's tree, 2 x (7 NVLink hops + 1 network hop)
    after the base latency; the network hop carries the transport's advertised latency.
    IB (ND H100 v5): LL, 6.8 + 2 (7 x 0.6 + 5.0) = 25.2 us. TCPXO (A3 Mega, no LL over the
    network): LL128, 14 + 2 (7 x 1.25 + 8.5 + 40) = 128.5 us. EFA (p4d, 75 us):
    LL, 6.8 + 2 (4.2 + 5.0 + 75) = 175.2 us."""
    common = ("--nodes", "2", "--algorithm", "nccl", "--bytes", "8", "--profile", "nccl")
    ib = _time(capsys, "--topology", "azure-nd-h100-v5", *common)["time_s"]
    tcpxo = _time(capsys, "--topology", "gcp-a3-mega", *common)["time_s"]
    efa = _time(capsys, "--topology", "aws-p4d", *common)["time_s"]
    assert ib == pytest.approx(25.2e-6, rel=1e-3)
    assert tcpxo == pytest.approx(128.5e-6, rel=1e-3)
    assert efa == pytest.approx(175.2e-6, rel=1e-3)


def test_large_allreduce_times_are_bounded_by_the_nics(capsys):
    """64 MiB over 2 nodes, profile nccl: a ring's busbw cannot exceed what a node's NICs
    carry (4 x 12.5e9 on p4d, 8 x 25e9 on ND A100 v4, 8 x 50e9 on A4, x 2 n/(n-1) ... bounded
    loosely by twice the node's NIC total), and more NIC bandwidth gives more busbw."""
    common = ("--nodes", "2", "--algorithm", "nccl", "--bytes", str(64 << 20), "--profile", "nccl",
              "--verify", "symbolic")
    busbw = {name: _time(capsys, "--topology", name, *common)["busbw"] for name in
             ("aws-p4d", "azure-nd-a100-v4", "gcp-a4")}
    for name, total in (("aws-p4d", 50e9), ("azure-nd-a100-v4", 200e9), ("gcp-a4", 400e9)):
        assert 0.2 * total < busbw[name] < 2 * total, (name, busbw[name])
    assert busbw["aws-p4d"] < busbw["azure-nd-a100-v4"] < busbw["gcp-a4"]


def test_docs_list_every_preset_and_transport():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "machines.md").read_text()
    assert all(f"`{name}`" in text for name in SHAPES)
    assert all(f"`{name}`" in text for name in ("ib-ndr", "efa-v1", "tcpxo", "gcp-rdma"))


@pytest.mark.skipif(_bound_allows_32(), reason="the builders allow 32 NICs per node")
def test_p5_over_todays_bound_says_so(capsys):
    code, _, err = run_cli(capsys, "run", "--topology", "aws-p5", "--nodes", "2", "--algorithm",
                           "ring", "--bytes", "1024")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "aws-p5 has 32 NICs per node" in err and "nics_per_node" in err
    G = build("aws-p5", 2, {"nics_per_node": "16"})
    assert len(_nics(G)) == 16 and G.graph["transport"] == "efa-v2"


def test_gb300_hosts_2_nics_per_gpu_are_not_capped_by_pcie_gen5():
    """OCI BM.GPU.GB300.4: 8 x 400 Gb/s for 4 GPUs (ConnectX-8, 2 ports per GPU) on PCIe Gen6:
    a GPU drives 100e9 bytes/s, not Gen5's 63e9; NCCL's model sees 2 rings of 48 GB/s per GPU.
    BM.GPU.GB200.4 (4 x 400 Gb/s, ConnectX-7) drives half that per GPU."""
    G = build("oci-bm-gpu-gb300-4", 2)
    pcie = [d["bandwidth"] for _, v, d in G.out_edges("n0/gpu0", data=True) if d.get("link_type") == "pcie"]
    assert min(pcie) >= 100e9
    gb300 = machine("oci-bm-gpu-gb300-4", 36)
    gb200 = machine("oci-bm-gpu-gb200-4", 36)
    assert gb300.nics == 2 * gb200.nics == 144
