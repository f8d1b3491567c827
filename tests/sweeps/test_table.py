"""Sweep results tables: columns, stable types, Parquet files read together."""

from simcollective.sweeps import expand_grid, read_results, run_sweep
from tests.conftest import TINY, _write


def test_table_columns(tmp_path):
    df = run_sweep({"fixed": {"topology": "abci", "algorithm": "ring", "elements": "4K", "density": "1/8"}},
                   tmp_path / "one.csv", workers=1, progress=False)
    row = df.iloc[0]
    for col in ("key", "topology", "nodes", "algorithm", "elements", "ok", "error", "ignored", "time_s",
                "algbw", "busbw", "verified", "messages", "wall_s", "phase_reduce-scatter", "phase_allgather",
                "bytes_nvlink", "top_links", "options"):
        assert col in df.columns, col
    assert "phases" not in df.columns and "bytes_by_link_type" not in df.columns
    assert row["ok"] and row["ignored"] == "density"      # dense algorithm: density not passed
    assert row["time_s"] > 0 and row["verified"]


def test_points_without_the_new_options_keep_their_keys_and_columns(tmp_path):
    """A point that sets neither protocol nor channels has the key it has in existing tables
    (which then resume), and a sweep that sets neither has no column for them."""
    (p,) = expand_grid({"fixed": {"algorithm": "ring", "elements": "4K"}})
    assert "protocol" not in p and "channels" not in p
    assert p["key"] == "9e849bab90fa7b67"         # the key this point has in existing tables
    df = run_sweep(_write(tmp_path, TINY), tmp_path / "r.csv", workers=1, progress=False)
    assert "protocol" not in df.columns and "channels" not in df.columns


FAILING = """
[fixed]
topology = "abci"
nodes = 1
elements = "4K"
[grid]
algorithm = ["ring"]
gpus = [4, 5]
"""


def test_integer_columns_stay_integers_after_a_failed_point(tmp_path):
    out = tmp_path / "f.csv"
    run_sweep(_write(tmp_path, FAILING), out, workers=1, progress=False)
    header, *rows = out.read_text().splitlines()
    cols = header.split(",")
    ring = next(r for r in rows if ",ring," in r)
    values = dict(zip(cols, ring.split(",")))
    for c in ("ranks", "bytes", "messages", "events", "flows"):
        assert values[c].isdigit(), (c, values[c])
    df = read_results(out)
    assert str(df["ranks"].dtype) == "Int64" and df["ranks"].isna().sum() == 1


def test_parquet_files_of_different_sweeps_read_together(tmp_path):
    import pyarrow.dataset as ds

    a = run_sweep(_write(tmp_path, FAILING, "a.toml"), tmp_path / "a.parquet", workers=1, progress=False)
    b = run_sweep(_write(tmp_path, TINY, "b.toml"), tmp_path / "b.parquet", workers=1, progress=False)
    table = ds.dataset([str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")], format="parquet").to_table()
    assert table.num_rows == len(a) + len(b)
    import pyarrow.parquet as pq

    sa, sb = pq.read_schema(tmp_path / "a.parquet"), pq.read_schema(tmp_path / "b.parquet")
    for name in set(sa.names) & set(sb.names):
        assert sa.field(name).type == sb.field(name).type, name


EVERY_KIND = """
[fixed]
topology = "dgx-h100"
nodes = 1
elements = 4096
[grid]
algorithm = ["ring", "nccl", "sparse-ring", "gtopk"]
density = [0.25]
"""


def test_every_column_a_run_writes_has_a_stable_type(tmp_path):
    """A column without a declared type would take whatever pandas infers (float after a failed
    point, another type in another sweep): every column of dense, sparse, approximate and NCCL
    runs is declared."""
    from simcollective.sweeps.table import _column_dtype

    df = run_sweep(_write(tmp_path, EVERY_KIND), tmp_path / "o.csv", workers=1, progress=False)
    assert df["ok"].all(), df["error"].tolist()
    assert [c for c in df.columns if _column_dtype(str(c)) is None] == []
