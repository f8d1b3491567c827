"""``--utilization-from``: rows of another shape are one line, read before any drawing."""

import json

import pytest

from tests.conftest import one_line_error


@pytest.mark.parametrize("rows", [[{"source": "a", "target": "b"}], [{"link": "a->b", "utilization": "x"}],
                                  [{"link": "a->b", "utilization": 1e400}], [3], {"link": "a"}])
def test_rows_of_another_shape(tmp_path, capsys, rows):
    path = tmp_path / "u.json"
    path.write_text(json.dumps({"links": rows}).replace("Infinity", "1e400"))
    one_line_error(capsys, ["draw-topology", "--topology", "abci", "-o", tmp_path / "d.png",
                            "--utilization-from", path], "--utilization-from")
    assert not (tmp_path / "d.png").exists()


def test_a_good_row_is_read():
    from simcollective.drawings.utilization import link_utilization

    edges, nodes, note = link_utilization({"links": [{"link": "a->b", "utilization": 0.5}]})
    assert edges == {frozenset(("a", "b")): 0.5} and note == "every link"
