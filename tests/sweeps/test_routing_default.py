"""Sweeps and ``routing = "auto"`` (the default): keys of existing tables, values checked first."""

import pytest

from simcollective.sweeps import expand_grid
from tests.conftest import one_line_error


def test_the_default_routing_keeps_the_keys_of_existing_tables():
    # auto took first's place as the default: a point that does not set routing keeps its key
    (p,) = expand_grid({"fixed": {"algorithm": "ring", "elements": "4K"}})
    assert p["routing"] == "auto" and p["key"] == "9e849bab90fa7b67"
    (q,) = expand_grid({"fixed": {"algorithm": "ring", "elements": "4K", "routing": "first"}})
    (d,) = expand_grid({"fixed": {"algorithm": "ring", "elements": "4K", "routing": "dest"}})
    assert q["key"] == p["key"] != d["key"]


@pytest.mark.parametrize("values, needles", [
    ('["first", "dmodk"]', ("'dmodk' is not a routing policy", "allowed: auto, first, hash, dest, study")),
    ('["auto", "first"]', ("[grid] routing", "lists both 'auto' and 'first'", "'dest'")),
])
def test_a_bad_routing_list_is_refused_before_any_point(tmp_path, capsys, values, needles):
    cfg = tmp_path / "g.toml"
    cfg.write_text(f'[fixed]\ntopology = "abci"\nalgorithm = "ring"\nelements = "1K"\n[grid]\nrouting = {values}\n')
    out = tmp_path / "r.csv"
    one_line_error(capsys, ["sweep", str(cfg), "--out", str(out), "--workers", "1", "--quiet"], *needles)
    assert not out.exists()
