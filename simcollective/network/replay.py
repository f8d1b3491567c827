"""Preparing recorded messages for the compiled event loop, and running it.

:func:`replay` takes the messages and operations of a recording
(:mod:`simcollective.runtime.record`) and a :class:`~.engine.Network` (its routes, path
parameters, capacities and model), builds the loop's arrays (one row per message, per
path, per resource, per event) and runs :func:`.replay_kernels.execute`. Per-message
figures are computed with NumPy over the distinct (path, size) pairs, with the same
floating-point operations as ``Network.transfer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .path_rows import path_rows
from .replay_rows import loop_order, message_rows, pair_index
from .stats import link_stats

__all__ = ["ReplayResult", "Unsupported", "replay", "unsupported_model", "MESSAGE_COLUMNS"]

#: places the loop's sets of due times start with (a power of 2; they double when half full)
SET_PLACES = 64
#: the per-message columns of a recorded program (:meth:`Program.arrays`)
MESSAGE_COLUMNS = ("src", "dst", "bytes", "via", "send_ev", "recv_ev")


class Unsupported(Exception):
    """The compiled loop cannot reproduce this run (the message says why)."""


@dataclass
class ReplayResult:
    """What the compiled loop measured (times in seconds)."""

    finish: np.ndarray
    op_time: np.ndarray
    events: int
    flows: int
    recomputations: int
    links: list
    now: float
    arrays: int = 0  # times the flows moved into the array store


def unsupported_model(net) -> str | None:
    """Why ``net``'s model cannot take the compiled loop (None: it can)."""
    if net.model.bandwidth_factor_mode == "bound":
        return "the network model's bandwidth factor bounds rates (bandwidth_factor_mode = bound)"
    return None


def _paths(net, placement, src, dst, via, vias):
    """Path index of every message (int32), and the rows of the distinct paths (a send
    pinned to NICs, ``vias[via]``, takes its own path, as ``Network.transfer`` does)."""
    P, V = len(placement), len(vias)
    keys, inverse = _distinct(src, dst, via, P, V)
    return inverse, path_rows(net, placement, keys // V // P, keys // V % P, keys % V, vias)


def _distinct(src, dst, via, P: int, V: int):
    """The distinct keys ``(src P + dst) V + via`` in increasing order and each message's
    index among them (int32), as ``np.unique(keys, return_inverse=True)``: in compiled
    passes through a table of ``P^2 V`` places where that is not much more than the
    messages (:func:`.replay_rows.pair_index`: no key array of 8 bytes a message; for the
    ring 0.01 / 0.05-0.18 / 0.35 s of CPU at 1,024 / 2,048 / 4,096 ranks, where NumPy's
    marking and counting took 0.03 / 0.08 / 0.33 s; measured here), else by sorting."""
    if P * P * V > 4 * len(src) + (1 << 16):
        pair = src.astype(np.int64)   # (in place from here: one array of 8 bytes a message, not four)
        pair *= P
        pair += dst
        pair *= V
        pair += via
        keys, inverse = np.unique(pair, return_inverse=True)
        return keys, inverse.astype(np.int32)
    return pair_index(src, dst, via, np.int64(P), np.int64(V))


def _per_message(net, rows, pidx, size):
    """(eff, latency) per message, as ``Network.transfer`` computes them, and the
    bandwidth factor and latency per path that :func:`.replay_rows.message_rows` computes
    them from where the eff and latency arrays are empty (a single bandwidth factor and a
    latency per path)."""
    model = net.model
    bw_k = model.bw_factors[0] if len(model.bw_factors) == 1 else None
    if bw_k is not None and rows.lat is not None:
        return np.zeros(0), np.zeros(0), float(bw_k), rows.lat
    sizes, sinv = np.unique(size, return_inverse=True)
    if bw_k is not None:
        effs = np.array([s / bw_k if s > 0 else 0.0 for s in sizes.tolist()])
    else:
        effs = np.array([s / model.bandwidth_factor(s) if s > 0 else 0.0 for s in sizes.tolist()])
    eff = effs[sinv]
    if rows.lat is not None:
        lat = rows.lat[pidx]
    else:
        combo, cinv = np.unique(pidx.astype(np.int64) * len(sizes) + sinv, return_inverse=True)
        vals = []
        for c in combo.tolist():
            lat, s = float(rows.route_lat[c // len(sizes)]), sizes[c % len(sizes)]
            if lat:
                lat *= model.latency_factor(int(s))
            vals.append(lat)
        lat = np.array(vals)[cinv]
    return eff, lat, 1.0, np.zeros(0)


def replay(net, placement, prog: dict, n_events: int, smpi: bool, eager: int) -> ReplayResult:
    """Run the recorded program ``prog`` (:meth:`Program.arrays`) over ``net``. The message
    columns (:data:`MESSAGE_COLUMNS`) are taken out of ``prog`` and let go once used (the
    ends and via once the paths are known, the rest once the loop's own rows of the
    messages are made, before the loop runs: 28 bytes a message). The messages and events
    are numbered again in the order the loop meets them, in ``prog``'s ``ops`` and
    ``members`` too (:func:`.replay_rows.loop_order`)."""
    from . import replay_flows as rf
    from . import replay_kernels as rk

    src, dst, size, via, send_ev, recv_ev = (prog.pop(k) for k in MESSAGE_COLUMNS)
    pidx, rows = _paths(net, placement, src, dst, via, prog["vias"])
    del src, dst, via
    eff, lat, bw_k, path_lat = _per_message(net, rows, pidx, size)
    mnew = loop_order(prog["ops"], prog["rank_ptr"], np.int64(len(size)), np.int64(n_events), prog["members"],
                      send_ev, recv_ev)
    MI, MF, sums = message_rows(pidx, send_ev, recv_ev, size, np.int64(eager), smpi, eff, lat, bw_k, path_lat,
                                len(rows.PI), mnew)
    del size, send_ev, recv_ev, pidx, eff, lat, mnew
    PI, PF = rows.PI, rows.PF
    t = net.tuning
    cap = net.cap
    RF = np.zeros((len(cap), 7))
    RF[:, 0] = cap
    RF[:, 1] = [c * (1 + t.eps) for c in cap]
    RF[:, 2] = [c * (1 - t.near_tol) for c in cap]
    EVS = np.zeros((n_events, 3), np.int32)  # (pages the loop writes first: no pass before it; events < 2**31)
    tune = np.array([t.bulk_min, t.walk_limit, t.level_tol, t.cutoff_tol, t.bulk_off, t.refresh, SET_PLACES])
    C, finish, op_time, rcnt, now = rk.execute(prog["ops"], prog["rank_ptr"], prog["members"], prog["seconds"],
                                               smpi, tune, MI, MF, PI, PF, RF, EVS)
    if C[rk.STATUS] == rk.DEADLOCK:
        raise Unsupported("the ranks block")
    links = link_stats(net.router, rows.resource_bytes(sums, len(cap)), RF[:, 6].tolist(), RF[:, 5].tolist(),
                       (rcnt > 0).tolist(), now)
    return ReplayResult(finish, op_time, int(C[rk.EID]), int(C[rk.FLOWS]), int(C[rk.RECOMP]), links, now,
                        int(C[rf.ENTERS]))
