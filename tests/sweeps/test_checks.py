"""The whole grid checked before any point runs, and large grids taken lazily."""

import pytest

from simcollective.errors import UserInputError
from tests.conftest import one_line_error

BASE = '[fixed]\ntopology = "abci"\nverify = "symbolic"\n[grid]\nalgorithm = ["ring"]\nelements = ["1K"]\n'


def _config(tmp_path, text):
    path = tmp_path / "g.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("line, needles", [
    ('algorithm = ["ring", "nosuch"]', ("[grid] algorithm", "'nosuch'", "known:")),
    ('collective = ["allgather", "nosuch"]', ("[grid] collective", "'nosuch'")),
    ('topology_file = ["missing.json"]', ("topology_file", "missing.json", "does not exist")),
    ('dtype = ["float32", "complex64"]', ("[grid] dtype", "complex64")),
    ('profile = ["ideal", "nosuch"]', ("[grid] profile",)),
    ('placement = ["nosuch.txt"]', ("[grid] placement", "does not exist")),
    ('engine = ["simpy", "fast"]', ("[grid] engine", "'fast'", "allowed: auto, compiled, simpy")),
])
def test_a_bad_value_is_refused_before_any_point(tmp_path, capsys, line, needles):
    key = line.split(" ")[0]
    cfg = _config(tmp_path, BASE.replace(f"{key} = ", "# ") + line + "\n")   # the block's own value out
    out = tmp_path / "r.csv"
    one_line_error(capsys, ["sweep", str(cfg), "--out", str(out), "--workers", "1", "--quiet"], *needles)
    assert not out.exists()            # no failed rows: nothing ran


def test_an_algorithm_of_another_collective_in_the_block_passes(tmp_path):
    from simcollective.sweeps.checks import validate_grid
    from simcollective.sweeps.config import load_config

    text = BASE.replace('algorithm = ["ring"]', 'algorithm = ["ring", "pairwise"]') + \
        'collective = ["allreduce", "alltoall"]\n'
    validate_grid(load_config(_config(tmp_path, text)))     # each exists for one of the collectives
    with pytest.raises(UserInputError, match="'pairwise' is not an algorithm of allreduce"):
        validate_grid(load_config(_config(tmp_path, BASE.replace('"ring"]', '"ring", "pairwise"]'))))


def _huge(tmp_path):
    seeds = ", ".join(str(s) for s in range(1, 1001))
    sizes = ", ".join(f'"{i}"' for i in range(1, 1001))
    chunks = ", ".join(f'"{i}"' for i in range(16, 1016))
    return _config(tmp_path, f'[fixed]\ntopology = "abci"\nverify = "symbolic"\n[grid]\nalgorithm = ["ring", '
                             f'"ring-ring"]\nseed = [{seeds}]\nelements = [{sizes}]\nchunk_size = [{chunks}]\n')


def test_max_points_on_a_grid_of_2e9_points_expands_nothing(tmp_path, monkeypatch):
    from simcollective.sweeps import execution

    monkeypatch.setattr(execution, "expand_grid", lambda cfg: pytest.fail("the grid was expanded"))
    df = execution.run_sweep(_huge(tmp_path), tmp_path / "r.csv", workers=1, progress=False, max_points=1)
    s = df.attrs["summary"]
    assert s["points"] == 2 * 1000 ** 3 and s["ran"] == 1 and s["left"] == 2 * 1000 ** 3 - 1
    df = execution.run_sweep(_huge(tmp_path), tmp_path / "r.csv", workers=1, progress=False, max_points=1)
    assert len(df) == 2 and df.attrs["summary"]["skipped"] == 1     # the next point, the first kept


def test_iter_points_is_the_expanded_grid(tmp_path):
    from simcollective.sweeps.grid import expand_grid, iter_points

    cfg = _config(tmp_path, BASE.replace('["1K"]', '["1K", "2K", "1K"]'))
    assert list(iter_points(cfg)) == expand_grid(cfg) and len(expand_grid(cfg)) == 2


def test_out_on_a_device_is_refused_before_reading_it(tmp_path, capsys):
    """/dev/full reads as endless zeros: a table there would never finish reading."""
    link = tmp_path / "full.csv"
    link.symlink_to("/dev/full")
    one_line_error(capsys, ["sweep", str(_config(tmp_path, BASE)), "--out", str(link), "--workers", "1"],
                   "not a regular file", "/dev/full")
