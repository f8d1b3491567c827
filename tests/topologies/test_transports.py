"""The transport table: it loads, every figure of every transport has a value and a source,
and the figures are the documented ones."""

from __future__ import annotations

import math

import pytest

from topologies import TopologyError
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
