"""The transport table: it loads, every figure of every transport has a value and a source,
and the figures are the documented ones."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from simcollective.nccl import model
from tests.conftest import machine, run_cli
from topologies import TopologyError, build
from topologies.transports import FIGURES, TRANSPORTS, Transport, transport


def test_every_transport_has_every_figure_with_a_source():
    assert {"ib-edr", "ib-hdr", "ib-ndr", "ib-xdr", "roce-v2", "efa-v1", "efa-v2", "efa-v3",
            "tcpx", "tcpxo", "gcp-rdma"} <= set(TRANSPORTS)
    for name, t in TRANSPORTS.items():
        assert isinstance(t, Transport) and t.name == name and t.description
        for figure in FIGURES:
            assert t.source(figure).strip(), (name, figure)
        assert t.link_type in ("infiniband", "ethernet")
        assert set(t.net_protocols) <= {"ll", "ll128", "simple"} and "simple" in t.net_protocols
        assert t.net_latency >= 0 and t.hop_latency > 0 and 0 < t.goodput <= 1
        assert t.conn_bandwidth == math.inf or t.conn_bandwidth > 0
        assert t.connections >= 1 and t.devices_per_gpu >= 1


def test_infiniband_rates_are_lanes_times_four():
    """NCCL decodes EDR/HDR/NDR/XDR as 25/50/100/200 Gb/s per lane; a 4x port: x4, / 8 bytes."""
    for name, lane in (("ib-edr", 25), ("ib-hdr", 50), ("ib-ndr", 100), ("ib-xdr", 200)):
        assert transport(name).line_rate == lane * 4 * 1e9 / 8
        assert transport(name).link_type == "infiniband" and transport(name).net_latency == 0


def test_efa_latencies_are_the_plugins():
    """aws-ofi-nccl advertises 75 us (the default, p4d, p5) and 35 us (p5en and later)."""
    assert [transport(n).net_latency for n in ("efa-v1", "efa-v2", "efa-v3", "efa-v4")] == [
        75e-6, 75e-6, 35e-6, 35e-6]
    assert all(transport(n).link_type == "ethernet" for n in ("efa-v1", "roce-v2", "tcpxo"))


def test_tcpx_carries_simple_only_and_tcpxo_has_a_floor():
    assert transport("tcpx").net_protocols == ("simple",)
    assert transport("tcpxo").net_latency > transport("efa-v3").net_latency
    assert "NOT PUBLISHED" in transport("tcpxo").source("net_latency")


@pytest.mark.parametrize("bad", ["myrinet", "", None, 3])
def test_unknown_transport_is_one_line_listing_the_allowed(bad):
    with pytest.raises(TopologyError) as info:
        transport(bad)
    message = str(info.value)
    assert "\n" not in message and repr(bad) in message
    assert all(name in message for name in TRANSPORTS)


# ------------------------------------------------- what each figure decides


def _with(monkeypatch, base, name, **figures):
    """Transport `name`: `base` with `figures` changed, in the table for this test."""
    t = dataclasses.replace(transport(base), name=name, **figures)
    monkeypatch.setitem(TRANSPORTS, name, t)
    return t


def _busbw(capsys, topology, opts=(), nbytes=1 << 30, algorithm="nccl"):
    """Simulated busbw of NCCL's allreduce of `nbytes` on 2 nodes of `topology`."""
    argv = ["run", "--topology", topology, "--nodes", "2", "--algorithm", algorithm, "--bytes", str(nbytes),
            "--verify", "symbolic", "--json", "-", "--quiet"]
    for opt in opts:
        argv += ["--topology-opt", opt]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    return json.loads(out)["busbw"]


def _net_edges(G):
    return {(u, v): d for u, v, d in G.edges(data=True) if d.get("link_type") in ("infiniband", "ethernet")}


def test_goodput_is_the_payload_share_of_every_network_cable_nccl_sees_the_rate(monkeypatch, capsys):
    """goodput 0.5: every scale-out cable (NIC - leaf and uplinks) carries half its rate, the
    rate stays as its line_rate; NCCL's model sees the same NICs and picks the same; a
    NIC-bound simulated busbw (1 GiB on 2 x p4d) halves."""
    _with(monkeypatch, "efa-v1", "efa-half", goodput=0.5)
    full, half = build("aws-p4d", 2), build("aws-p4d", 2, {"transport": "efa-half"})
    edges = _net_edges(full)
    assert edges and {k: d["bandwidth"] / 2 for k, d in edges.items()} == {
        k: d["bandwidth"] for k, d in _net_edges(half).items()}
    assert all(d["line_rate"] == edges[k]["bandwidth"] for k, d in _net_edges(half).items())
    assert half.edges["n0/nic0", "su0/leaf0"]["bandwidth"] == 6.25e9 and "line_rate" not in edges["n0/nic0", "su0/leaf0"]
    m_full, m_half = machine("aws-p4d", 2), machine("aws-p4d", 2, {"transport": "efa-half"})
    assert (m_half.nic_bw, m_half.nics) == (m_full.nic_bw, m_full.nics) == (12.5, 4)
    for nbytes in (8, 1 << 16, 1 << 20, 1 << 24, 1 << 30):
        assert model.choose(m_half, nbytes) == model.choose(m_full, nbytes)
    ratio = _busbw(capsys, "aws-p4d", ["transport=efa-half"]) / _busbw(capsys, "aws-p4d")
    assert ratio == pytest.approx(0.5, rel=0.02)


def test_a_connection_carries_its_streams_times_the_stream_cap(monkeypatch, capsys):
    """net_conn_bandwidth is one stream's (QP's) cap, net_connections the streams of a connection:
    each flow on a NIC cable is capped at their product; a shape takes both from its transport;
    NCCL's ring bound by the cap (16 connections of 2e9 per node, far under the NICs) doubles with 2 QPs."""
    G = build("dgx-h100", 2, {"net_conn_bandwidth": "2e9", "net_connections": "3"})
    caps = {d.get("flow_bandwidth") for (u, v), d in _net_edges(G).items() if "nic" in u + v}
    assert caps == {6e9} and G.graph["net_connections"] == 3
    _with(monkeypatch, "ib-ndr", "ib-capped", conn_bandwidth=2e9, connections=4)
    H = build("azure-nd-h100-v5", 2, {"transport": "ib-capped"})
    assert H.edges["n0/nic0", "su0/leaf0"]["flow_bandwidth"] == 8e9
    assert build("azure-nd-h100-v5", 2, {"transport": "ib-capped", "net_connections": "1"}).edges[
        "n0/nic0", "su0/leaf0"]["flow_bandwidth"] == 2e9
    one = _busbw(capsys, "dgx-h100", ["net_conn_bandwidth=2e9"], algorithm="nccl-ring")
    two = _busbw(capsys, "dgx-h100", ["net_conn_bandwidth=2e9", "net_connections=2"], algorithm="nccl-ring")
    assert two / one == pytest.approx(2.0, rel=0.02)


@pytest.mark.parametrize("bad", ["0", "129", "1.5"])
def test_net_connections_out_of_range_is_refused(bad):
    with pytest.raises(TopologyError, match="net_connections"):
        build("dgx-h100", 2, {"net_connections": bad})


def test_devices_per_gpu_keeps_each_gpus_nearest_nics(monkeypatch, capsys):
    """OCI BM.GPU.H100.8: 2 RoCE NICs per GPU, all driven ("all": 16 rings for NCCL); a transport
    driving 1 per GPU keeps each GPU's nearest, NCCL's model counts 8 rings and NCCL's ring, bound
    by the NICs, halves its simulated busbw."""
    assert transport("roce-v2").devices_per_gpu == math.inf
    _with(monkeypatch, "roce-v2", "roce-one", devices_per_gpu=1)
    both, one = build("oci-bm-gpu-h100-8", 2), build("oci-bm-gpu-h100-8", 2, {"transport": "roce-one"})
    assert both.nodes["n0/gpu3"]["nics"] == "n0/nic6,n0/nic7" and one.nodes["n0/gpu3"]["nics"] == "n0/nic6"
    assert one.nodes["n0/gpu3"]["nic"] == "n0/nic6" and one.graph["devices_per_gpu"] == 1
    assert "devices_per_gpu" not in both.graph
    assert (machine("oci-bm-gpu-h100-8", 2).nics, machine("oci-bm-gpu-h100-8", 2, {"transport": "roce-one"}).nics) == (16, 8)
    ring = {opts: _busbw(capsys, "oci-bm-gpu-h100-8", opts, algorithm="nccl-ring") for opts in ((), ("transport=roce-one",))}
    assert ring[("transport=roce-one",)] / ring[()] == pytest.approx(0.5, rel=0.03)


def test_another_transport_brings_its_line_rate():
    """A shape keeps its own NIC rate under its own transport; under another it takes that
    transport's line rate, or keeps its own where the rate is per shape (RoCE); a given one wins."""
    def rate(opts):
        return build("aws-p4d", 2, opts).edges["n0/nic0", "su0/leaf0"]["bandwidth"]
    assert rate({}) == rate({"transport": "roce-v2"}) == 12.5e9
    assert rate({"transport": "ib-ndr"}) == 50e9 and rate({"transport": "efa-v3"}) == 25e9
    assert rate({"transport": "ib-ndr", "nic_bandwidth": "1e10"}) == 1e10


def test_show_lists_every_figure_of_the_transport_with_its_source(capsys):
    code, out, _ = run_cli(capsys, "topologies", "--show", "aws-p5")
    assert code == 0
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.split()}
    for figure in FIGURES:
        assert f"transport.{figure}" in rows, figure
    assert "OFI_NCCL_MIN_STRIPE_SIZE" in rows["transport.devices_per_gpu"] or "128 KiB" in rows["transport.devices_per_gpu"]
    assert "net_connections" in rows and "from transport efa-v2" in rows["net_connections"]
    # every option row shows a value the option takes: "all" NICs is 0 (inf is refused as an int)
    assert rows["net_devices_per_gpu"].split()[1] == "0" and "(0: all)" in rows["net_devices_per_gpu"]
    shown = rows["net_devices_per_gpu"].split()[1]
    assert build("aws-p5", 2, {"net_devices_per_gpu": shown}).nodes["n0/gpu0"]["nics"].count("nic") == 4


def test_every_figure_is_also_a_preset_option():
    """net_goodput and net_devices_per_gpu set on any hardware preset what the transport's
    goodput and devices_per_gpu set on a shape; a shape takes them from its transport unless given."""
    G = build("dgx-h100", 2, {"net_goodput": "0.5"})
    assert G.edges["n0/nic0", "su0/leaf0"]["bandwidth"] == 25e9 and G.graph["goodput"] == 0.5
    assert G.edges["su0/leaf0", "n0/nic0"]["line_rate"] == 50e9
    H = build("dgx-h100", 2, {"nics_per_node": "16", "nic_bandwidth": "25e9", "net_devices_per_gpu": "1"})
    assert H.nodes["n1/gpu7"]["nics"] == "n1/nic14" and H.graph["devices_per_gpu"] == 1
    assert build("dgx-h100", 2, {"nics_per_node": "16", "net_devices_per_gpu": "2"}).graph.get("devices_per_gpu") is None
    p4d = build("aws-p4d", 2, {"net_goodput": "0.25"})
    assert p4d.edges["n0/nic0", "su0/leaf0"]["bandwidth"] == 12.5e9 / 4 and p4d.graph["transport"] == "efa-v1"


@pytest.mark.parametrize("key, bad", [("net_goodput", "0"), ("net_goodput", "1.5"), ("net_devices_per_gpu", "-2"),
                                      ("net_devices_per_gpu", "1.5")])
def test_figure_options_out_of_range_are_refused(key, bad):
    with pytest.raises(TopologyError, match=key):
        build("dgx-h100", 2, {key: bad})
