"""NCCL's protocols as the simulator models them (``shared/reference/nccl.md`` section 3).

A protocol changes what crosses a link for a byte of data: Simple sends the data (plus a
step counter), LL sends 8-byte lines of 4 B data + 4 B flag (wire = 2 x data), LL128 sends
128-byte lines of 120 B data + 8 B flag (wire = 128/120 x data). The simulator models
this as wire-size inflation (:class:`Wire`), with the factors of the profile's ``[nccl]``
table; chunk sizes follow NCCL's defaults (``calcCollChunking``).
"""

from __future__ import annotations

import math

__all__ = ["PROTOCOLS", "Wire", "wrap", "unwrap", "ring_chunk_bytes", "tree_chunk_bytes", "check_protocol",
           "nvls_chunk_bytes", "step_bytes"]

PROTOCOLS = ("simple", "ll", "ll128")

#: ring chunk (data bytes per rank and loop step) for AllReduce (nccl.md 2.2):
#: Simple 4 steps of 512 KiB = 2 MiB, LL 32 KiB of data, LL128 614,400 x 15/16 = 576,000 B
RING_CHUNK = {"simple": 2 * 1024 * 1024, "ll": 32 * 1024, "ll128": 576_000}
#: tree chunk = one FIFO step of data: Simple 512 KiB, LL 32 KiB, LL128 576,000 B
TREE_CHUNK = {"simple": 512 * 1024, "ll": 32 * 1024, "ll128": 576_000}
#: data bytes of one FIFO step (buffSize / NCCL_STEPS, nccl.md 2.2 and 3): Simple 4 MiB / 8 = 512 KiB,
#: LL 64 KiB / 2 (half is flags) = 32 KiB, LL128 614,400 x 15/16 = 576,000 B
STEP_BYTES = {"simple": 512 * 1024, "ll": 32 * 1024, "ll128": 576_000}


#: NVLS chunk per head and channel (NCCL_NVLS_CHUNKSIZE default, nccl.md 2.4); NVLSTree on >= 4 nodes 64 KiB
NVLS_CHUNK = 128 * 1024


def nvls_chunk_bytes(nbytes: int, channels: int, heads: int, nnodes: int = 1) -> int:
    """NCCL's NVLS chunk (bytes per head and channel) for an allreduce of ``nbytes``.

    128 KiB (64 KiB for NVLSTree on >= 4 nodes), reduced for smaller calls to 64, 32 and
    16 KiB (nccl.md 2.4) while ``nbytes`` is below 64, 8 and 2 x (channels x heads x chunk)
    (enqueue.cc calcCollChunking; the factors are recalled from NCCL's source, the chunk
    sizes are nccl.md's)."""
    chunk = NVLS_CHUNK if nnodes < 4 else 64 * 1024
    ops = max(1, channels) * max(1, heads)
    for factor, smaller in ((64, 64 * 1024), (8, 32 * 1024), (2, 16 * 1024)):
        if nbytes < factor * ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def check_protocol(protocol) -> str:
    from ..errors import UserInputError

    if protocol not in PROTOCOLS:
        raise UserInputError(f"--protocol {protocol!r} is not a protocol; allowed: {', '.join(PROTOCOLS)}")
    return protocol


class Wire:
    """A payload that occupies ``factor`` times its data size on the wire.

    ``nbytes`` is the wire size (what the runtime sends); ``data`` the payload itself.
    Sums of two wires are wires (``Comm.add`` works unchanged).
    """

    __slots__ = ("data", "factor", "nbytes")

    def __init__(self, data, factor: float):
        self.data = data
        self.factor = factor
        self.nbytes = int(math.ceil(data.nbytes * factor)) if factor != 1.0 else int(data.nbytes)

    def __add__(self, other):
        return Wire(self.data + other.data, self.factor)

    def __len__(self):
        return len(self.data)


def wrap(x, factor: float):
    return Wire(x, factor)


def unwrap(w):
    return w.data if isinstance(w, Wire) else w


def ring_chunk_bytes(protocol: str) -> int:
    return RING_CHUNK[protocol]


def tree_chunk_bytes(protocol: str) -> int:
    return TREE_CHUNK[protocol]


def step_bytes(protocol: str) -> int:
    """Data bytes of one of NCCL's FIFO steps for ``protocol`` (``STEP_BYTES``)."""
    return STEP_BYTES[protocol]
