"""A recorded collective: every rank's operations and the messages they exchange, as arrays
(:mod:`simcollective.runtime.record` writes it; :mod:`simcollective.network.replay` runs it)."""

from __future__ import annotations

from array import array
from struct import pack

import numpy as np

__all__ = ["Program"]

#: Python ints a rank's list holds before they move into its array (at most P x FLUSH ints
#: wait in lists, the messages' lists up to FLUSH_MSGS)
FLUSH = 1024
FLUSH_MSGS = 1 << 15


class Program:
    """The recorded operations of every rank and the messages they exchange.

    While recording, rows are appended to Python lists (``ops[rank]``: four integers a
    row; ``msgs``: destination, bytes and via of each message, in sending order), which
    :meth:`flush` moves into blocks (packed int64s, up to about :data:`FLUSH` a block) now and
    then: a list's ``extend`` costs a fifth of an array's, and blocks are never copied to
    grow. What the rows imply is worked out at the end, in :meth:`arrays`: each message's
    source and send event (from its ``POST``), its receive event (the ``POST`` that
    received it), and the ``recv`` field of the receives posted before their message
    (``late``: pairs of message and receive event)."""

    def __init__(self, P: int):
        self.P = P
        self.ops = [[] for _ in range(P)]
        self.blocks: list = [[] for _ in range(P)]   # per rank, its rows moved out of ``ops``
        self.flushed = [0] * P                         # integers in a rank's blocks
        self.msgs: list = []
        self.late: list = []
        self.msg_blocks: list = []
        self.late_blocks: list = []
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
        return (self.flushed[rank] + len(self.ops[rank])) // 4

    def via(self, via) -> int:
        """The index of ``via`` in ``vias`` (added at its first use)."""
        v = self.via_ids.get(via)
        if v is None:
            v = self.via_ids[via] = len(self.vias)
            self.vias.append(via)
        return v

    def held(self) -> int:
        """The entries of the lists the recording holds (rows not yet in blocks, each rank's
        results where they are lists)."""
        outs = sum(len(o) for o in self.outputs if o.__class__ is list)
        return sum(map(len, self.ops)) + len(self.msgs) + len(self.late) + outs

    def flush(self, rank: int) -> None:
        """Move the rows ``rank`` (and the messages) hold in lists into blocks."""
        ops = self.ops[rank]
        if ops:
            self.blocks[rank].append(_packed(ops))
            self.flushed[rank] += len(ops)
            ops.clear()
        if len(self.msgs) > FLUSH_MSGS:
            self.flush_messages()

    def flush_messages(self) -> None:
        for rows, blocks in ((self.msgs, self.msg_blocks), (self.late, self.late_blocks)):
            if rows:
                blocks.append(_packed(rows))
                rows.clear()

    def arrays(self) -> dict:
        """The operations as NumPy arrays: ``ops`` (n, 4), ``rank_ptr`` (P + 1), messages.
        Made once, at the end of the recording (the lists and blocks it is made of are
        then let go: the recording holds each row once); the compiled loop's
        :func:`~simcollective.network.replay.replay` takes the message columns out of it."""
        if self.made is not None:
            return self.made
        from .program_rows import message_columns  # (numba: imported by the compiled path only)

        for r in range(self.P):
            self.flush(r)
        self.flush_messages()
        lens = [n // 4 for n in self.flushed]
        ptr = np.zeros(self.P + 1, np.int64)
        np.cumsum(lens, out=ptr[1:])
        blocks = [b for per_rank in self.blocks for b in per_rank]
        self.blocks = []
        ops = _joined(blocks).reshape(-1, 4)
        late = _joined(self.late_blocks).reshape(-1, 2)
        part = _joined(self.msg_blocks).reshape(-1, 3)
        src, send_ev, recv_ev = message_columns(ops, ptr, len(part), late)
        # (destination and via: views of the rows recorded; the bytes contiguous, as the loop's rows take them)
        self.made = {"ops": ops, "rank_ptr": ptr, "src": src, "dst": part[:, 0], "bytes": part[:, 1].copy(),
                     "send_ev": send_ev, "recv_ev": recv_ev, "via": part[:, 2], "vias": self.vias,
                     "members": np.frombuffer(self.members, np.int64),
                     "seconds": np.frombuffer(self.seconds, np.float64)}
        return self.made


def _packed(ints: list) -> bytes:
    """``ints`` as native int64s (``struct.pack`` with the list unpacked costs less than
    half of ``array("q", ints)``: about 12 ns an integer against 29 here)."""
    return pack(f"{len(ints)}q", *ints)


def _joined(blocks: list) -> np.ndarray:
    """The integers of ``blocks`` (packed int64s), one after the other, in one int64 array;
    ``blocks`` is emptied on the way (each block let go once copied: the rows are held
    about once, not twice)."""
    out = np.empty(sum(len(b) for b in blocks) // 8, np.int64)
    i = 0
    blocks.reverse()
    while blocks:
        b = np.frombuffer(blocks.pop(), np.int64)
        out[i:i + len(b)] = b
        i += len(b)
    return out
