"""What a recording's rows imply for each message, compiled (:meth:`.program.Program.arrays`).

Plain functions under ``@njit(cache=True)``; ``NUMBA_DISABLE_JIT=1`` runs the same code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["message_columns"]

POST = 0  # (the operation code of runtime/recorder.py)


@njit(cache=True)
def message_columns(ops, ptr, M, late):
    """(source, send event, receive event) of each of the ``M`` messages, as three arrays
    of ``ops``' integers:
    the source and send event come from the ``POST`` row that names the message as its
    send (``ops[:, 2]``; rank ``r``'s rows are ``ops[ptr[r]:ptr[r + 1]]``), the receive
    event from the one that names it as its receive (``ops[:, 3]``). A receive posted
    before its message names none: ``late`` pairs (message, the receive's event), and that
    row's ``ops[:, 3]`` is written here. (One pass over the rows: NumPy took one a column,
    and a search of each posting's rank, about three times as long.)"""
    src, send_ev, recv_ev = np.empty(M, ops.dtype), np.empty(M, ops.dtype), np.empty(M, ops.dtype)
    order = np.argsort(late[:, 1])
    lev, lmsg, nl = late[order, 1], late[order, 0], late.shape[0]
    for r in range(ptr.shape[0] - 1):
        for i in range(ptr[r], ptr[r + 1]):
            if ops[i, 0] != POST:
                continue
            ev, s, m = ops[i, 1], ops[i, 2], ops[i, 3]
            if m < 0 and nl:
                j = np.searchsorted(lev, ev)
                if j < nl and lev[j] == ev:
                    m = ops[i, 3] = lmsg[j]
            if s >= 0:
                src[s], send_ev[s] = r, ev
            if m >= 0:
                recv_ev[m] = ev
    return src, send_ev, recv_ev
