"""A recorded collective: every rank's operations and the messages they exchange, as arrays
(:mod:`simcollective.runtime.record` writes it; :mod:`simcollective.network.replay` runs it)."""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["Program"]


class Program:
    """The recorded operations of every rank and the messages they exchange (arrays)."""

    def __init__(self, P: int):
        self.P = P
        self.ops = [array("q") for _ in range(P)]
        self.msg_src, self.msg_dst, self.msg_bytes = array("q"), array("q"), array("q")
        self.msg_send_ev, self.msg_recv_ev = array("q"), array("q")
        self.msg_via = array("q")      # index into vias: the NICs a send is pinned to (0: none)
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
        return {"ops": ops.reshape(-1, 4), "rank_ptr": ptr, "src": np.frombuffer(self.msg_src, np.int64),
                "dst": np.frombuffer(self.msg_dst, np.int64), "bytes": np.frombuffer(self.msg_bytes, np.int64),
                "send_ev": np.frombuffer(self.msg_send_ev, np.int64),
                "recv_ev": np.frombuffer(self.msg_recv_ev, np.int64),
                "via": np.frombuffer(self.msg_via, np.int64), "vias": self.vias,
                "members": np.frombuffer(self.members, np.int64), "seconds": np.frombuffer(self.seconds, np.float64)}
