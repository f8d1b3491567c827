"""A recorded collective: every rank's operations and the messages they exchange, as arrays
(:mod:`simcollective.runtime.record` writes it; :mod:`simcollective.network.replay` runs it)."""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["Program", "MSG_FIELDS"]

MSG_FIELDS = 6


class Program:
    """The recorded operations of every rank and the messages they exchange (arrays)."""

    def __init__(self, P: int):
        self.P = P
        self.ops = [array("q") for _ in range(P)]
        # one row of MSG_FIELDS integers per message: source, destination, bytes, send event,
        # receive event, via (an index into ``vias``: the NICs a send is pinned to, 0 none)
        self.msgs = array("q")
        self.vias: list = [None]
        self.via_ids: dict = {None: 0}
        self.members = array("q")
        self.seconds = array("d")
        self.marks: list = []          # (name or None, entering)
        self.events = 0
        self.outputs: list = [None] * P

    def arrays(self) -> dict:
        """The operations as NumPy arrays: ``ops`` (n, 4), ``rank_ptr`` (P + 1), messages."""
        lens = [len(o) // 4 for o in self.ops]
        ptr = np.zeros(self.P + 1, np.int64)
        np.cumsum(lens, out=ptr[1:])
        ops = np.concatenate([np.frombuffer(o, np.int64) for o in self.ops]) if lens else np.zeros(0, np.int64)
        m = np.frombuffer(self.msgs, np.int64).reshape(-1, MSG_FIELDS)
        return {"ops": ops.reshape(-1, 4), "rank_ptr": ptr, "src": m[:, 0], "dst": m[:, 1], "bytes": m[:, 2],
                "send_ev": m[:, 3], "recv_ev": m[:, 4], "via": m[:, 5], "vias": self.vias,
                "members": np.frombuffer(self.members, np.int64), "seconds": np.frombuffer(self.seconds, np.float64)}
