"""Describing a topology."""

from __future__ import annotations

import json

from topologies import describe, dgx1_cluster


def test_describe():
    d = describe(dgx1_cluster(7))
    assert d["gpus"] == 56 and d["servers"] == 7 and d["gpus_per_node"] == 8
    assert d["kinds"] == {"gpu": 56, "pcie_switch": 28, "nvswitch": 0, "nic": 0,
                          "switch": 3, "cpu": 0}
    assert d["switch_levels"] == {"leaf": 2, "root": 1}
    assert d["links"] == {"infiniband": 28 + 2, "nvlink": 7 * 16, "pcie": 7 * 8}
    assert d["cables"] * 2 == d["directed_edges"]
    assert d["crossing_nodes"] == 3 and d["rank_order"] == "0,3,2,1,5,6,7,4"
    json.dumps(d)
