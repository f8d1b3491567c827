"""A recorded collective: every rank's operations and the messages they exchange, as arrays
(:mod:`simcollective.runtime.record` writes it; :mod:`simcollective.network.replay` runs it)."""

from __future__ import annotations

import functools
from array import array
from struct import error as StructError
from struct import pack

import numpy as np

from ..errors import SimCollectiveError

__all__ = ["Program", "NotCompilable", "ROW_DTYPE", "packed", "release_free_memory"]

#: Python ints a rank's list holds before they move into its array (at most P x FLUSH ints
#: wait in lists, the messages' lists up to FLUSH_MSGS)
FLUSH = 1024
FLUSH_MSGS = 1 << 15
#: the integers of the operation rows, of ``members`` and of the message columns other than
#: ``bytes`` (event, message, rank and index counts): 4 bytes each, half of int64's; a count
#: past its range stops the recording (:func:`packed`)
ROW_DTYPE = np.int32
#: bytes of blocks copied into an array after which their memory is handed back (:func:`_joined`)
TRIM_BYTES = 32 << 20


class NotCompilable(SimCollectiveError):
    """The run cannot take the compiled path (the message says why)."""


class Program:
    """The recorded operations of every rank and the messages they exchange.

    While recording, rows are appended to Python lists (``ops[rank]``: four integers a
    row; ``msgs``: destination, bytes and via of each message, in sending order), which
    :meth:`flush` moves into blocks (packed integers, up to about :data:`FLUSH` a block: the
    operations' as :data:`ROW_DTYPE`, the messages' as int64, a message's bytes being
    unbounded) now and then: a list's ``extend`` costs a fifth of an array's, and blocks
    are never copied to grow. What the rows imply is worked out at the end, in :meth:`arrays`: each message's
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
        self.members = array("i")     # (ROW_DTYPE's)
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
            self.blocks[rank].append(packed(ops, "i"))
            self.flushed[rank] += len(ops)
            ops.clear()
        if len(self.msgs) > FLUSH_MSGS:
            self.flush_messages()

    def flush_messages(self) -> None:
        for rows, blocks, code in ((self.msgs, self.msg_blocks, "q"), (self.late, self.late_blocks, "i")):
            if rows:
                blocks.append(packed(rows, code))
                rows.clear()

    def arrays(self) -> dict:
        """The operations as NumPy arrays: ``ops`` (n, 4), ``rank_ptr`` (P + 1), messages.
        Made once, at the end of the recording (the lists and blocks it is made of are
        then let go, and the memory they took handed back to the system: the recording
        holds each row once); the compiled loop's
        :func:`~simcollective.network.replay.replay` takes the message columns out of it.
        Integers are :data:`ROW_DTYPE` but ``bytes`` and ``rank_ptr`` (int64)."""
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
        ops = _joined(blocks, ROW_DTYPE).reshape(-1, 4)
        late = _joined(self.late_blocks, ROW_DTYPE).reshape(-1, 2)
        part = _joined(self.msg_blocks, np.int64).reshape(-1, 3)
        release_free_memory()
        src, send_ev, recv_ev = message_columns(ops, ptr, len(part), late)
        del late
        dst, via = part[:, 0].astype(ROW_DTYPE), part[:, 2].astype(ROW_DTYPE)  # (ranks and indices: they fit)
        size = part[:, 1].copy()
        del part
        self.made = {"ops": ops, "rank_ptr": ptr, "src": src, "dst": dst, "bytes": size,
                     "send_ev": send_ev, "recv_ev": recv_ev, "via": via, "vias": self.vias,
                     "members": np.frombuffer(self.members, ROW_DTYPE),
                     "seconds": np.frombuffer(self.seconds, np.float64)}
        return self.made


def packed(ints: list, code: str) -> bytes:
    """``ints`` as native integers of the ``struct`` ``code`` (``"i"``: int32, ``"q"``:
    int64; ``struct.pack`` with the list unpacked costs less than half of
    ``array("q", ints)``: about 12 ns an integer against 29 here). An integer past the
    code's range raises :class:`NotCompilable` (a recording of more than 2**31
    events or messages: the SimPy path runs it)."""
    try:
        return pack(f"{len(ints)}{code}", *ints)
    except StructError:
        big = max(ints, key=abs)
        raise NotCompilable(f"the recording counts past the compiled path's 32-bit rows ({big:,}: more than "
                            "2**31 events, messages or waited events)") from None


def _joined(blocks: list, dtype) -> np.ndarray:
    """The integers of ``blocks`` (packed ``dtype``), one after the other, in one array;
    ``blocks`` is emptied on the way (each block let go once copied, and their memory
    handed back every :data:`TRIM_BYTES`: the rows are held about once, not twice)."""
    size = np.dtype(dtype).itemsize
    out = np.empty(sum(len(b) for b in blocks) // size, dtype)
    i = mark = 0
    blocks.reverse()
    while blocks:
        b = np.frombuffer(blocks.pop(), dtype)
        out[i:i + len(b)] = b
        i += len(b)
        if (i - mark) * size > TRIM_BYTES:   # (the blocks copied so far: their pages back to the system)
            del b
            release_free_memory()
            mark = i
    return out


@functools.cache
def _libc():
    """The C library the interpreter runs with, where it has glibc's ``malloc_trim`` (else
    None)."""
    import ctypes

    try:
        lib = ctypes.CDLL(None)   # (the process's own symbols: the C library's among them)
    except (OSError, TypeError):
        return None
    return lib if hasattr(lib, "malloc_trim") else None


def release_free_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere
    nothing): a recording's blocks (kilobytes each, between the Python objects that stay)
    are freed into the heap, which keeps their pages (the ring on 1,024 ranks: about 100
    bytes a message, which the compiled loop's arrays, allocated apart, would never reuse).
    Returns whether it could."""
    # NOTE: ctypes into the C library: Python and NumPy offer no call that trims the C heap
    lib = _libc()
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True
