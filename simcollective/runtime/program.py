"""A recorded collective: every rank's operations and the messages they exchange, as arrays
(:mod:`simcollective.runtime.record` writes it; :mod:`simcollective.network.replay` runs it)."""

from __future__ import annotations

from array import array

import numpy as np

__all__ = ["Program", "MSG_FIELDS"]

MSG_FIELDS = 6
#: Python ints a rank's list holds before they move into its array (at most P x FLUSH ints
#: wait in lists, the messages' lists up to FLUSH_MSGS)
FLUSH = 1024
FLUSH_MSGS = 1 << 15


class Program:
    """The recorded operations of every rank and the messages they exchange.

    While recording, rows are appended to Python lists (``ops[rank]``: four integers a
    row; ``msgs``: destination, bytes and via of each message, in sending order), which
    :meth:`flush` moves into arrays now and then (a list's ``extend`` costs a fifth of an
    array's). What the rows imply is worked out at the end, in :meth:`arrays`: each
    message's source and send event (from its ``POST``), its receive event (the ``POST``
    that received it), and the ``recv`` field of the receives posted before their message
    (``late``: pairs of message and receive event)."""

    def __init__(self, P: int):
        self.P = P
        self.ops = [[] for _ in range(P)]
        self.rank_rows = [array("q") for _ in range(P)]
        self.msgs: list = []
        self.msg_rows = array("q")
        self.late: list = []
        self.late_rows = array("q")
        self.vias: list = [None]       # the NICs a send is pinned to (index 0: none)
        self.via_ids: dict = {None: 0}
        self.members = array("q")
        self.seconds = array("d")
        self.marks: list = []          # (name or None, entering)
        self.events = 0
        self.outputs: list = [None] * P
        self.made: dict | None = None

    def row(self, rank: int) -> int:
        """The number of rows ``rank`` has written (the index of its next one)."""
        return (len(self.rank_rows[rank]) + len(self.ops[rank])) // 4

    def via(self, via) -> int:
        """The index of ``via`` in ``vias`` (added at its first use)."""
        v = self.via_ids.get(via)
        if v is None:
            v = self.via_ids[via] = len(self.vias)
            self.vias.append(via)
        return v

    def flush(self, rank: int) -> None:
        """Move the rows ``rank`` (and the messages) hold in lists into their arrays."""
        ops = self.ops[rank]
        self.rank_rows[rank].fromlist(ops)
        ops.clear()
        if len(self.msgs) > FLUSH_MSGS:
            self.flush_messages()

    def flush_messages(self) -> None:
        self.msg_rows.fromlist(self.msgs)
        self.msgs.clear()
        self.late_rows.fromlist(self.late)
        self.late.clear()

    def arrays(self) -> dict:
        """The operations as NumPy arrays: ``ops`` (n, 4), ``rank_ptr`` (P + 1), messages.
        Made once, at the end of the recording (the lists and arrays it is made of are
        then let go: the recording holds each row once)."""
        if self.made is not None:
            return self.made
        for r in range(self.P):
            self.flush(r)
        self.flush_messages()
        lens = [len(o) // 4 for o in self.rank_rows]
        ptr = np.zeros(self.P + 1, np.int64)
        np.cumsum(lens, out=ptr[1:])
        ops = (np.concatenate([np.frombuffer(o, np.int64) for o in self.rank_rows]) if lens
               else np.zeros(0, np.int64)).reshape(-1, 4)
        self.rank_rows = []
        post = np.flatnonzero(ops[:, 0] == 0)  # (POST)
        if self.late_rows:
            late = np.frombuffer(self.late_rows, np.int64).reshape(-1, 2)
            ev_row = np.zeros(self.events, np.int64)
            ev_row[ops[post, 1]] = post
            ops[ev_row[late[:, 1]], 3] = late[:, 0]
        part = np.frombuffer(self.msg_rows, np.int64).reshape(-1, 3)
        m = np.empty((len(part), MSG_FIELDS), np.int64)
        m[:, 1], m[:, 2], m[:, 5] = part[:, 0], part[:, 1], part[:, 2]
        send, recv = ops[post, 2], ops[post, 3]
        s, q = post[send >= 0], post[recv >= 0]
        m[ops[s, 2], 0] = np.searchsorted(ptr, s, side="right") - 1
        m[ops[s, 2], 3] = ops[s, 1]
        m[ops[q, 3], 4] = ops[q, 1]
        self.msg_rows = self.late_rows = None
        self.made = {"ops": ops, "rank_ptr": ptr, "src": m[:, 0], "dst": m[:, 1], "bytes": m[:, 2],
                     "send_ev": m[:, 3], "recv_ev": m[:, 4], "via": m[:, 5], "vias": self.vias,
                     "members": np.frombuffer(self.members, np.int64),
                     "seconds": np.frombuffer(self.seconds, np.float64)}
        return self.made
