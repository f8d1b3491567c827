"""The figure of ``simcollective compare --plot``: size ticks written as sizes are written on
the command line (1M, 4M), not as powers of two."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from simcollective.cli import main  # noqa: E402

# an all_reduce_perf table of 4 ranks, 256K -> 16M bytes (x 4)
LOG = """# all_reduce_perf
#  Rank  0 Group  0 Pid  1 on host device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on host device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  3 on host device  2 [0000:3a:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  4 on host device  3 [0000:5d:00] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      262144         65536     float     sum      -1    20.00   13.11   19.66      0    20.00   13.11   19.66      0
     1048576        262144     float     sum      -1    27.76   37.78   56.67      0    27.49   38.15   57.22      0
     4194304       1048576     float     sum      -1    60.00   69.90  104.86      0    60.00   69.90  104.86      0
    16777216       4194304     float     sum      -1   200.00   83.89  125.83      0   200.00   83.89  125.83      0
# Out of bounds values : 0 OK
"""


@pytest.fixture
def closed_figures(monkeypatch):
    """The figures the command closes after saving them (to look at their axes)."""
    seen = []
    close = plt.close

    def keep(fig=None):
        seen.append(fig)
        close(fig)

    monkeypatch.setattr(plt, "close", keep)
    return seen


def test_compare_plot_size_ticks_read_as_sizes(tmp_path, capsys, closed_figures):
    log = tmp_path / "ar.txt"
    log.write_text(LOG)
    png = tmp_path / "bw.png"
    assert main(["compare", str(log), "--topology", "dgx-h100", "--nodes", "1", "--plot", str(png)]) == 0
    capsys.readouterr()
    assert png.stat().st_size > 1000
    (fig,) = [f for f in closed_figures if f is not None]
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels == ["256K", "512K", "1M", "2M", "4M", "8M", "16M"]
    assert not any("^" in lab for lab in labels)


def test_compare_plot_gigabyte_ticks(tmp_path, capsys, closed_figures):
    log = tmp_path / "ar.txt"
    log.write_text(LOG.replace("  16777216       4194304", "2147483648     536870912"))
    assert main(["compare", str(log), "--topology", "dgx-h100", "--nodes", "1", "--plot", str(tmp_path / "b.png")]) == 0
    capsys.readouterr()
    (fig,) = [f for f in closed_figures if f is not None]
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert labels == ["256K", "1M", "4M", "16M", "64M", "256M", "1G"]       # every second power of two
