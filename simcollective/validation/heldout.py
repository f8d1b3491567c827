"""Held-out validation: band hits of a comparison, and the leave-one-log-out refit of every
calibrated figure.

**Bands** (the accuracy targets): busbw within 10 % at >= 64 MiB, busbw within 25 % at
1-64 MiB, time within 30 % at <= 64 KiB. A row is judged by the better of the log's
out-of-place and in-place figures (the simulated value against each; a hit if either is
inside the band); a row without the measured quantity is not counted.

**Leave one log out.** Every figure of the ``nccl`` profile and of the command lines that was
fitted to published logs (:data:`FIGURES`) names the runs it was fitted on and how it is
refitted from a set of runs: from their in-sample comparisons (a bandwidth-bound figure
scales with the ratio at the fitted size), or, with no run left to fit on, its prior (the
figure NCCL's own model or the datasheet gives). :func:`fold_figures` computes a fold's
figures from the comparisons of the *other* runs only: it is handed a mapping without the
held-out run, so the held-out log cannot reach the fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

KiB, MiB = 1024, 1024 * 1024

__all__ = ["BANDS", "row_error", "row_hit", "band_hits", "band_errors", "Figure", "FIGURES", "fold_figures",
           "fold_values", "fold_profile",
           "fold_options", "add_hits"]

#: (name, applies to size, quantity, tolerance)
BANDS = (
    ("busbw >= 64 MiB (10 %)", lambda s: s >= 64 * MiB, "busbw", 0.10),
    ("busbw 1-64 MiB (25 %)", lambda s: MiB <= s < 64 * MiB, "busbw", 0.25),
    ("time <= 64 KiB (30 %)", lambda s: s <= 64 * KiB, "time", 0.30),
)


def row_error(row: dict, band) -> float | None:
    """|simulated / measured - 1| of ``row`` (a row of
    :func:`~simcollective.validation.compare.compare`) in ``band``'s quantity, the better of
    its two measured columns; None when the band does not apply or the log has no figure to
    judge by."""
    _, applies, quantity, _ = band
    if not applies(row["size"]):
        return None
    sim = row["simulated_busbw"] if quantity == "busbw" else row["simulated_time_us"]
    measured = (row["measured_busbw"], row.get("other_busbw")) if quantity == "busbw" else \
        (row["measured_time_us"], row.get("other_time_us"))
    errors = [abs(sim / m - 1) for m in measured if m]
    return min(errors) if errors else None


def row_hit(row: dict, band) -> bool | None:
    """Whether ``row`` is inside ``band`` (:func:`row_error` within its tolerance); None when
    the band does not apply or the log has no figure to judge by."""
    err = row_error(row, band)
    return None if err is None else err <= band[3]


def band_errors(rows) -> dict:
    """``{band name: [|sim/measured - 1| of each row judged]}`` of ``rows``."""
    return {band[0]: [e for e in (row_error(r, band) for r in rows) if e is not None] for band in BANDS}


def band_hits(rows) -> dict:
    """``{band name: [hits, rows judged]}`` of ``rows``."""
    out = {}
    for band in BANDS:
        judged = [h for h in (row_hit(r, band) for r in rows) if h is not None]
        out[band[0]] = [sum(judged), len(judged)]
    return out


def add_hits(total: dict, hits: dict) -> dict:
    """``total`` + ``hits`` band by band (a new dict)."""
    return {k: [total.get(k, [0, 0])[0] + v[0], total.get(k, [0, 0])[1] + v[1]] for k, v in hits.items()}


# -- the calibrated figures ------------------------------------------------------------------------
def _at(result: dict, size: int) -> float | None:
    """busbw simulated / published at ``size`` of a comparison (None: no such row)."""
    return next((r["busbw_ratio"] for r in result["rows"] if r["size"] == size and r["busbw_ratio"]), None)


def _scaled(value, sources, training, size):
    """A bandwidth-bound figure refitted on the ``sources`` in ``training``: ``value`` divided by
    the geometric mean of their busbw ratios at ``size`` (None: no source left)."""
    import math

    ratios = [_at(training[s], size) for s in sources if s in training]
    ratios = [r for r in ratios if r]
    if not ratios:
        return None
    return value / math.exp(sum(math.log(r) for r in ratios) / len(ratios))


@dataclass(frozen=True)
class Figure:
    """A calibrated figure: its ``name``, in-sample ``value``, ``prior`` (with nothing to fit on),
    the runs it was ``fitted`` on, the runs it ``applies`` to, where it lives (``kind``: a
    ``[network]``/``[nccl]`` entry of the profile or a ``--topology-opt``) and the refit rule
    (``refit_from``: other runs it can be refitted on, at busbw size ``size``; ``pool``: the
    names of sibling figures whose fitted values stand in, averaged)."""

    name: str
    value: float
    prior: float
    fitted: tuple
    applies: tuple
    kind: str
    refit_from: tuple = ()
    size: int = 8 << 30
    pool: tuple = ()
    source: str = ""

    def seen(self, training) -> bool:
        """Whether every run the figure was fitted on is in ``training``."""
        return all(f in training for f in self.fitted)

    def refit(self, training: dict) -> float | None:
        """The figure fitted on ``training`` alone (None: nothing there to fit it on)."""
        if self.seen(training):
            return self.value
        return _scaled(self.value, self.refit_from, training, self.size) if self.refit_from else None


_NVLSTREE_RUNS = ("h100x16-A", "h100x32-B", "h100x64-C", "h100x16-D", "h100x32-E", "h100x64-F")
_IB_RUNS = _NVLSTREE_RUNS + ("h100x16-G-ring", "b200x16-allgather")

#: every figure fitted to a published log, as docs/validation.md lists them
FIGURES = (
    Figure("network.link_efficiency.nvlink", 0.95, 0.80, ("v100x8",), ("v100x8",), "network",
           source="prior: NCCL's 20 GB/s per 25 GB/s NVLink2 link (topo.h SM70_NVLINK_BW)"),
    Figure("network.link_efficiency.infiniband", 0.982, 1.0, ("h100x16-G-ring",), _IB_RUNS, "network",
           refit_from=("h100x64-F",), source="refit: the other NIC-bound ring run (F, 8 GiB)"),
    Figure("nccl.nvls_efficiency", 0.80, 0.85, ("h100x8-nvls",), ("h100x8-nvls",) + _NVLSTREE_RUNS, "nccl",
           refit_from=("h100x16-A", "h100x16-D"),
           source="refit: the 2-node NVLSTree runs of the same H100 NVSwitch (A, D, 8 GiB)"),
    Figure("nccl.launch_us_per_extra_gpu.volta", 4.5, 0.0, ("v100x8",), ("v100x8",), "nccl",
           pool=("nccl.launch_us_per_extra_gpu.ampere", "nccl.launch_us_per_extra_gpu.hopper"),
           source="refit: the mean of the other generations' fitted launch costs"),
    Figure("nccl.launch_us_per_extra_gpu.ampere", 4.0, 0.0, ("a100x8",), ("a100x8",), "nccl",
           pool=("nccl.launch_us_per_extra_gpu.volta", "nccl.launch_us_per_extra_gpu.hopper"),
           source="refit: the mean of the other generations' fitted launch costs"),
    Figure("nccl.launch_us_per_extra_gpu.hopper", 2.3, 0.0, ("h100x8-nvls",), ("h100x8-nvls",), "nccl",
           pool=("nccl.launch_us_per_extra_gpu.volta", "nccl.launch_us_per_extra_gpu.ampere"),
           source="refit: the mean of the other generations' fitted launch costs"),
    Figure("nic_bandwidth", 7.34e9, 12.5e9, ("a100x16-p4d",), ("a100x16-p4d",), "topology_opt",
           source="prior: the aws-p4d preset's EFA device line rate, 100 Gb/s (no other EFA log)"),
    Figure("net_conn_bandwidth", 20.44e9, 20.44e9, ("h100x32-E",), ("h100x64-C", "h100x16-D", "h100x32-E",
           "h100x64-F", "h100x16-G-ring"), "topology_opt", refit_from=("h100x64-C",),
           source="refit: the other default run of the same cluster (C, 8 GiB)"),
)


def fold_figures(training: dict) -> dict:
    """``{figure name: value}`` fitted on ``training`` (run name -> its in-sample comparison;
    the held-out run is not in it): each figure refitted (:meth:`Figure.refit`); a pooled
    figure with nothing of its own to fit on takes the mean of its siblings fitted here; the
    prior when neither is possible."""
    own = {f.name: f.refit(training) for f in FIGURES}
    values = {}
    for f in FIGURES:
        got = own[f.name]
        if got is None and f.pool:
            pool = [own[p] for p in f.pool if own[p] is not None]
            got = sum(pool) / len(pool) if pool else None
        values[f.name] = f.prior if got is None else got
    return values


def fold_values(insample, held_out: str) -> dict:
    """The figures of the fold that predicts ``held_out``: :func:`fold_figures` on every run of
    ``insample`` (run name -> in-sample comparison) but ``held_out``, whose entry is never read."""
    return fold_figures({name: insample[name] for name in insample if name != held_out})


def fold_profile(base, values: dict):
    """The profile ``base`` (a :class:`~simcollective.profiles.Profile`) with the ``network``
    and ``nccl`` figures of ``values``."""
    eff = dict(base.network.link_efficiency)
    launch = dict(base.nccl.launch_us_per_extra_gpu)
    nccl = base.nccl
    for name, v in values.items():
        if name.startswith("network.link_efficiency."):
            kind = name.rsplit(".", 1)[1]
            eff[kind] = v
            if kind == "infiniband":
                eff["ethernet"] = v
        elif name.startswith("nccl.launch_us_per_extra_gpu."):
            launch[name.rsplit(".", 1)[1]] = v
        elif name == "nccl.nvls_efficiency":
            nccl = replace(nccl, nvls_efficiency=v)
    network = replace(base.network, link_efficiency=tuple(eff.items()))
    return replace(base, network=network, nccl=replace(nccl, launch_us_per_extra_gpu=launch))


def fold_options(opts: dict, run: str, values: dict) -> dict:
    """A run's ``--topology-opt`` values with the fold's refitted ones (only the options the run
    already sets: a figure applies to the runs it names)."""
    out = dict(opts)
    for f in FIGURES:
        if f.kind == "topology_opt" and run in f.applies and f.name in out:
            out[f.name] = values[f.name]
    return out
