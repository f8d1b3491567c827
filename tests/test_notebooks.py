"""The notebooks run top to bottom exactly as shipped, so they never rot: SIMCOLLECTIVE_SMALL=1
changes only the numbers of each notebook's first cell (tagged ``parameters``), never which
cells run or what they do."""

import json
import sys
from pathlib import Path

import pytest


nbformat = pytest.importorskip("nbformat")

nbclient = pytest.importorskip("nbclient")

pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture
def kernel_env(tmp_path, monkeypatch):
    """A ``python3`` kernelspec that runs this interpreter (the venv's), whatever the user's
    Jupyter setup: JUPYTER_PATH is searched before the other kernel directories."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (simcollective tests)", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("SIMCOLLECTIVE_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec("python3").argv[0] == sys.executable


NAMES = ["scaling_curves.ipynb", "explore_topology.ipynb", "which_collective.ipynb", "jobs.ipynb", "moe.ipynb"]


@pytest.mark.parametrize("name", NAMES)
def test_only_the_parameters_cell_reads_the_environment(name):
    """The small run the tests make is the shipped notebook: the environment is read in the
    first code cell alone, which sets plain values (no cell branches on SMALL)."""
    cells = [c for c in nbformat.read(NOTEBOOKS / name, as_version=4).cells if c.cell_type == "code"]
    first, rest = cells[0], cells[1:]
    assert "parameters" in first.metadata.get("tags", [])
    assert "SIMCOLLECTIVE_SMALL" in first.source
    assert not [ln for ln in first.source.splitlines() if ln.startswith(("if ", "for ", "while "))]
    for cell in rest:
        assert "SMALL" not in cell.source and "environ" not in cell.source, cell.source


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs(name, kernel_env):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks with outputs cleared"
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=120,
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.get("data", {})]
    assert len(images) >= 3
