"""The compiled loop's rows of the messages (:func:`.replay.replay`), in one pass.

Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs the same code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .replay_flows import EAGER

__all__ = ["message_rows"]


@njit(cache=True)
def message_rows(pidx, send_ev, recv_ev, size, limit, smpi, eff, lat, bw_k, path_lat, npaths):
    """The loop's rows of the messages: ``MI`` (path, send event, receive event, flags,
    0; int32, as the recording's rows: counts it bounds), ``MF`` (bytes over the bandwidth
    factor, latency), and the bytes carried on each of the ``npaths`` paths. A message is
    eager below ``limit`` bytes (``smpi``), else up to it. ``eff`` and ``lat`` are each
    message's figures, or empty: then they are ``size / bw_k`` (0 for an empty message)
    and its path's ``path_lat`` (``Network.transfer``'s operations: the same bits)."""
    M = pidx.shape[0]
    MI, MF, sums = np.empty((M, 5), np.int32), np.empty((M, 2)), np.zeros(npaths, np.int64)
    given = eff.shape[0] > 0
    for m in range(M):
        p, s = pidx[m], size[m]
        MI[m, 0], MI[m, 1], MI[m, 2], MI[m, 4] = p, send_ev[m], recv_ev[m], 0
        MI[m, 3] = EAGER if (s < limit if smpi else s <= limit) else 0
        if given:
            MF[m, 0], MF[m, 1] = eff[m], lat[m]
        else:
            MF[m, 0], MF[m, 1] = s / bw_k if s > 0 else 0.0, path_lat[p]
        sums[p] += s
    return MI, MF, sums
