"""NCCL's protocols, chunk rules and caps as the simulator models them: the one definition.

A protocol changes what crosses a link for a byte of data: Simple sends the data (plus a
step counter), LL sends 8-byte lines of 4 B data + 4 B flag (wire = 2 x data), LL128 sends
128-byte lines of 120 B data + 8 B flag (wire = 128/120 x data). The simulator models
this as wire-size inflation (:class:`~simcollective.patterns.channels.Wire`), with the
factors of the profile's ``[nccl]`` table; chunk sizes follow NCCL's defaults
(``calcCollChunking``).
"""

from __future__ import annotations

__all__ = ["PROTOCOLS", "TUNER_ORDER", "ring_chunk_bytes", "tree_chunk_bytes",
           "check_protocol", "NVLS_CHUNK", "nvls_chunk_bytes", "step_bytes", "MAXCHANNELS", "MAX_CHANNELS",
           "MAX_LOOPS", "MAX_TREE_CHUNKS", "MAX_CHAIN_CHUNKS", "NVLSTREE_PIECES", "MAX_NVLSTREE_PIECES",
           "P2P_CHUNK_NVLINK", "P2P_CHUNK_NET", "NCCL_STEPS", "p2p_chunk_bytes"]

#: the protocols, as the user names them (``--protocol``), the default first
PROTOCOLS = ("simple", "ll", "ll128")
#: the same protocols in NCCL's own order (LL 0, LL128 1, Simple 2): the index into the
#: tuner's constant triples, and the order its choice breaks ties in
TUNER_ORDER = PROTOCOLS[1:] + PROTOCOLS[:1]
#: NCCL's allreduce algorithms, in the tuner's order
ALGOS = ("tree", "ring", "nvls", "nvlstree")
#: the GPU generations NCCL's figures are given for
ARCHS = ("volta", "ampere", "hopper", "blackwell")

# -- caps ---------------------------------------------------------------------------------------
#: NCCL's MAXCHANNELS
MAXCHANNELS = 64
#: channels of one call: MAXCHANNELS for rings and trees; NVLS: NCCL_MAX_NVLS_ARITY heads x channels cap
MAX_CHANNELS = {"ring": MAXCHANNELS, "tree": MAXCHANNELS, "nvls": 32}
#: pipelined loops per channel simulated at most (in this flow model the number of loops does
#: not change the time, so loops beyond this are merged to keep the event count down)
MAX_LOOPS = 2
#: chunks per channel of a tree allreduce simulated at most
MAX_TREE_CHUNKS = 8
#: chunks per channel of a broadcast/reduce chain: NCCL's steps up to this many (the chain fills in
#: P - 1 chunk times, so fewer chunks would cost time; more cost events)
MAX_CHAIN_CHUNKS = 64
#: NVLSTree on 2 nodes: pieces of the buffer pipelined through NVLS reduce, network exchange, NVLS multicast
NVLSTREE_PIECES = 16
#: NVLSTree beyond 2 nodes: chunks per tree simulated at most (NCCL's chunks beyond that are merged:
#: in this flow model merging only shortens the pipeline fill, by at most one chunk's time per stage)
MAX_NVLSTREE_PIECES = 16

# -- chunks -------------------------------------------------------------------------------------
#: ring chunk (data bytes per rank and loop step) for AllReduce:
#: Simple 4 steps of 512 KiB = 2 MiB, LL 32 KiB of data, LL128 614,400 x 15/16 = 576,000 B
RING_CHUNK = {"simple": 2 * 1024 * 1024, "ll": 32 * 1024, "ll128": 576_000}
#: tree chunk = one FIFO step of data: Simple 512 KiB, LL 32 KiB, LL128 576,000 B
TREE_CHUNK = {"simple": 512 * 1024, "ll": 32 * 1024, "ll128": 576_000}
#: data bytes of one FIFO step (buffSize / NCCL_STEPS): Simple 4 MiB / 8 = 512 KiB,
#: LL 64 KiB / 2 (half is flags) = 32 KiB, LL128 614,400 x 15/16 = 576,000 B
STEP_BYTES = {"simple": 512 * 1024, "ll": 32 * 1024, "ll128": 576_000}
#: point-to-point chunk (p2pChunkSize, NCCL 2.30 src/init.cc): 512 KiB between GPUs of one
#: node joined by NVLink, 128 KiB across nodes (and over PCIe)
P2P_CHUNK_NVLINK = 512 * 1024
P2P_CHUNK_NET = 128 * 1024
#: FIFO slots of one connection (NCCL_STEPS): the chunks of one send in flight at most
NCCL_STEPS = 8


def p2p_chunk_bytes(same_node: bool) -> int:
    """NCCL's p2p chunk between two ranks: :data:`P2P_CHUNK_NVLINK` on one node, else
    :data:`P2P_CHUNK_NET`."""
    return P2P_CHUNK_NVLINK if same_node else P2P_CHUNK_NET


#: NVLS chunk per head and channel (NCCL_NVLS_CHUNKSIZE default); NVLSTree on >= 4 nodes: half of it
NVLS_CHUNK = 128 * 1024


def nvls_chunk_bytes(nbytes: int | None = None, channels: int = 1, heads: int = 1, nnodes: int = 1) -> int:
    """NCCL's NVLS chunk (bytes per head and channel) for an allreduce of ``nbytes``.

    128 KiB (64 KiB for NVLSTree on >= 4 nodes), reduced for smaller calls to 64, 32 and
    16 KiB while ``nbytes`` is below 64, 8 and 2 x (channels x heads x chunk) (NCCL's
    ``calcCollChunking``; the factors are recalled from NCCL's source). ``nbytes`` None:
    the chunk before that reduction (what the simulated NVLSTree pipelines cut by)."""
    chunk = NVLS_CHUNK if nnodes < 4 else NVLS_CHUNK // 2
    if nbytes is None:
        return chunk
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


def ring_chunk_bytes(protocol: str) -> int:
    return RING_CHUNK[protocol]


def tree_chunk_bytes(protocol: str) -> int:
    return TREE_CHUNK[protocol]


def step_bytes(protocol: str) -> int:
    """Data bytes of one of NCCL's FIFO steps for ``protocol`` (``STEP_BYTES``)."""
    return STEP_BYTES[protocol]
