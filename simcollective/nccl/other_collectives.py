"""NCCL's algorithms for allgather, reduce-scatter, broadcast and reduce (used by
``algorithms/nccl_<collective>.py``), with NCCL's cost model for them.

What NCCL has per collective (``shared/reference/nccl.md`` 2.2, 2.4, 2.7):

* allgather, reduce-scatter: **Ring** (C channels, each its own ring, P - 1 steps, chunks of
  the protocol) and **NVLS** on one node with NVLink SHARP (multi-node NVLS needs CollNet,
  which plain nccl-tests runs do not have); no tree (PAT needs one rank per node);
* broadcast, reduce: **Ring** only, a pipelined chain along each channel's ring starting
  (broadcast) or ending (reduce) at the root, chunk = one FIFO step of the protocol.

The cost model (nccl.md 4.2-4.3) for these collectives: ``nsteps`` = P - 1 (allgather,
reduce-scatter) or P (broadcast, reduce); ``bytes`` = the whole output (allgather) / input
(reduce-scatter) buffer, ``count x itemsize`` otherwise; ring ``BW = busBw x P / nsteps``;
NVLS ``BW = busBw`` with per channel ``min(bwIntra x nvlsEfficiency x (nCh - 1)/nCh x
(ppn - 1)/ppn, bwInter)``; ring latency ``base + (nsteps - nInter) x intra hop + nInter x
net hop`` with nInter = nodes - 1 for allgather/reduce-scatter, ``nsteps x hop`` (Tree's
hop for Simple) for broadcast/reduce; NVLS 25 us. The allreduce-only corrections (tree
correction factors, the ring plateau factor) do not apply.

As for allreduce (:mod:`simcollective.nccl.collectives`): channels split the buffer into
contiguous ranges run at once; a protocol is wire-size inflation; NCCL's latency of the call
is spent once at the start (phase ``latency``).
"""

from __future__ import annotations

import math

from ..patterns.dense import split
from ..data.blocks import block_bounds
from ..errors import UserInputError
from . import model
from .collectives import MAX_CHANNELS, MAX_LOOPS, Plan, cached_plan, nccl_table, require_nvls, set_ring_orders
from .protocols import Wire, check_protocol, ring_chunk_bytes, tree_chunk_bytes

__all__ = ["NCCL_ALGOS", "coll_enabled", "coll_bandwidth", "coll_latency", "coll_predict", "coll_choose",
           "make_coll_plan", "run_coll_plan", "report_fields_for", "plan_for_coll", "MAX_CHAIN_CHUNKS",
           "messages_for"]

#: the algorithms NCCL has for each collective (nccl.md 2.7; CollNet and PAT do not apply here)
NCCL_ALGOS = {"allgather": ("ring", "nvls"), "reduce-scatter": ("ring", "nvls"), "broadcast": ("ring",),
              "reduce": ("ring",)}
#: chunks per channel of a broadcast/reduce chain: NCCL's steps up to this many (the chain fills in
#: P - 1 chunk times, so fewer chunks would cost time; more cost events)
MAX_CHAIN_CHUNKS = 64


def _nsteps(coll: str, n: int) -> int:
    return n - 1 if coll in ("allgather", "reduce-scatter") else n


def coll_enabled(m, coll: str, algo: str, proto: str) -> bool:
    """Whether NCCL would consider (algo, proto) for ``coll`` on machine ``m``."""
    if algo not in NCCL_ALGOS[coll] or m.nranks < 2:
        return False
    if algo == "nvls":   # single node, NVLink SHARP, Simple, <= 32 local ranks (nccl.md 2.7, 4.5)
        return m.nvls and m.nnodes == 1 and proto == "simple" and m.ppn <= 32
    if proto == "ll128" and (m.intra != "nvlink" or m.cc < 70):
        return False
    return True


def coll_bandwidth(m, graphs: dict, coll: str, algo: str, proto: str) -> float:
    """NCCL's algorithm bandwidth BW (GB/s) for ``coll`` (nccl.md 4.2); 0 = disabled."""
    if not coll_enabled(m, coll, algo, proto) or algo not in graphs:
        return 0.0
    g = graphs[algo]
    n, nn = m.nranks, m.nnodes
    ni = 0 if nn == 1 else 1 if nn == 2 else 2
    arch = m.arch
    nch = g.nchannels
    bw = g.bw_intra if nn <= 2 else g.bw_inter
    if algo == "nvls":
        intra = g.bw_intra * model.NVLS_EFFICIENCY[arch] * (nch - 1) / nch * (m.ppn - 1) / m.ppn
        bw = min(intra, g.bw_inter)
    bus = nch * bw
    if algo == "ring" and proto == "ll":
        bus = min(model.LL_MAX_BW[arch][ni], 0.5 * bus)
    elif algo == "ring" and proto == "ll128":
        bus = min(0.92 * bus, nch * model.PER_CH_RING_LL128[arch])
    if algo == "ring":   # bus -> algorithm bandwidth (skipped for NVLS allgather/reduce-scatter)
        bus *= n / _nsteps(coll, n)
    return bus


def coll_latency(m, coll: str, algo: str, proto: str, table: dict | None = None) -> float:
    """NCCL's latency L (us) of one call of ``coll`` (nccl.md 4.3); ``table`` may replace the
    constants as in :func:`simcollective.nccl.model.latency`."""
    base_t = (table or {}).get("base", model.BASE_LAT)
    hop_t = (table or {}).get("hop", model.HW_LAT)
    p = model.PROTOCOLS.index(proto)
    n, nn, ppn = m.nranks, m.nnodes, m.ppn
    link = "nvlink" if m.intra == "nvlink" else "pci"
    if algo == "nvls":
        return hop_t[link]["nvls"][p]
    L = base_t["ring"][p]
    nsteps = _nsteps(coll, n)
    n_inter = nn - 1
    if coll in ("allgather", "reduce-scatter"):
        intra = hop_t[link]["ring"][p]
        inter = hop_t["net"]["tree" if ppn == 1 else "ring"][p]
        if nn > 1:
            intra = max(intra, model.NET_OVERHEAD_US * (3 if proto == "simple" else 1))
    else:   # broadcast/reduce: nsteps hops, Tree's hop latency for Simple
        kind = "tree" if proto == "simple" else "ring"
        intra = hop_t[link][kind][p]
        inter = hop_t["net"][kind][p]
    return L + (nsteps - n_inter) * intra + n_inter * inter


def coll_predict(m, graphs: dict, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's predicted time (us) of one ``coll`` of ``nbytes`` (nccl.md 4.4 ``bytes``); inf
    when disabled."""
    bw = coll_bandwidth(m, graphs, coll, algo, proto)
    if bw <= 0:
        return float("inf")
    return coll_latency(m, coll, algo, proto) + nbytes / (1000.0 * bw)


def coll_choose(m, coll: str, nbytes: int, algos=None, protos=model.PROTOCOLS) -> tuple:
    """NCCL's pick for one ``coll`` of ``nbytes``: ``(algorithm, protocol, channels, time_us)``
    (minimum predicted time; ties: NCCL's order Ring before NVLS, LL, LL128, Simple)."""
    graphs = model.graphs_of(m)
    best = None
    for algo in ("ring", "nvls"):
        if algos is not None and algo not in algos:
            continue
        for proto in model.PROTOCOLS:
            if proto not in protos:
                continue
            t = coll_predict(m, graphs, coll, algo, proto, nbytes)
            if best is None or t < best[3]:
                best = (algo, proto, 0, t)
    if best is None or math.isinf(best[3]):
        raise UserInputError(f"NCCL's model has no algorithm/protocol for {coll} available on this machine")
    algo, proto, _, t = best
    return algo, proto, model.channels_for(m, graphs, algo, proto, nbytes), t



def make_coll_plan(graph, gpus, profile, coll: str, algorithm: str, nbytes: int, protocol=None,
                   channels=None) -> Plan:
    """The :class:`~simcollective.nccl.collectives.Plan` of one ``coll`` of ``nbytes`` (NCCL's
    ``bytes``: allgather the output, reduce-scatter the input buffer); ``algorithm`` is
    ``ring``, ``nvls`` or ``auto``. Cached: every rank asks."""
    return cached_plan(graph, gpus, profile, (coll, algorithm, nbytes, protocol, channels),
                       lambda g: _build_coll_plan(g, gpus, profile, coll, algorithm, nbytes, protocol, channels))


def _build_coll_plan(graph, gpus, profile, coll: str, algorithm: str, nbytes: int, protocol, channels) -> Plan:
    m = model.machine_of(graph, gpus)
    graphs = model.graphs_of(m)
    table = nccl_table(profile)
    predicted = None
    if protocol is not None:
        check_protocol(protocol)
    if algorithm == "nvls":
        require_nvls(m, "nccl-ring")
        if m.nnodes > 1:
            raise UserInputError(
                f"nccl-nvls for {coll} runs inside one node (NCCL needs CollNet for multi-node NVLS); these "
                f"ranks span {m.nnodes} nodes: use nccl-ring")
        if protocol not in (None, "simple"):
            raise UserInputError(f"--protocol {protocol} does not apply to nccl-nvls (NVLS runs only simple)")
    if algorithm == "auto" and m.nranks == 1:   # nothing to move: a copy, NCCL runs no algorithm
        algorithm = "ring"
    if algorithm == "auto":
        protos = (protocol,) if protocol is not None else model.PROTOCOLS
        algorithm, protocol, nch, predicted = coll_choose(m, coll, nbytes, protos=protos)
        if channels is None:
            channels = nch
    if protocol is None:
        protocol = coll_choose(m, coll, nbytes, algos=(algorithm,))[1] if m.nranks > 1 else "simple"
    if protocol == "ll128" and not coll_enabled(m, coll, algorithm, "ll128") and m.nranks > 1:
        raise UserInputError("--protocol ll128 needs NVLink between the GPUs (NCCL disables LL128 otherwise); "
                             "allowed here: simple, ll")
    if channels is None:
        channels = model.channels_for(m, graphs, algorithm, protocol, nbytes) if algorithm in graphs else 1
    cap = MAX_CHANNELS[algorithm]
    if channels > cap:
        raise UserInputError(f"--channels {channels} is more than nccl-{algorithm} supports (1 to {cap})")
    if predicted is None and m.nranks > 1:
        predicted = coll_predict(m, graphs, coll, algorithm, protocol, nbytes)
        predicted = None if math.isinf(predicted) else predicted
    lat_us = table.launch_us
    if m.nranks > 1:
        lat_us += coll_latency(m, coll, algorithm, protocol, table=table.latency_table())
    wire = table.wire_factor[protocol]
    if algorithm == "nvls":
        # NVLS allgather: each GPU link carries its block once up and the P - 1 others down;
        # reduce-scatter: its P - 1 blocks up (the switch reads them) and its result down.
        # The emulation sends P - 1 blocks each way, so only the NVLS efficiency scales it.
        wire = 1.0 / table.nvls_efficiency
    plan = Plan(algorithm, protocol, channels, lat_us * 1e-6, wire, m, predicted_us=predicted)
    if algorithm == "ring" and m.nranks > 1:
        set_ring_orders(plan, m)
    return plan


def nccl_bytes(coll: str, x, nranks: int) -> int:
    """NCCL's ``bytes`` of a call whose per-rank input is ``x``."""
    return int(x.nbytes) * (nranks if coll == "allgather" else 1)


def plan_for_coll(comm, x, coll: str, algorithm: str, protocol=None, channels=None) -> Plan:
    gpus = [comm.gpu(r) for r in range(comm.size)]
    return make_coll_plan(comm.graph, gpus, comm.profile, coll, algorithm, nccl_bytes(coll, x, comm.size),
                          protocol, channels)


def run_coll_plan(comm, x, coll: str, plan: Plan, root=None):
    """Run ``plan`` of ``coll`` on this rank; returns the list of result parts in order."""
    if comm.size == 1:
        return [x]
    with comm.phase("latency"):
        yield comm.delay(plan.latency_s)
    if coll == "allgather":
        run = _nvls_allgather if plan.algorithm == "nvls" else _ring_allgather
        return (yield from run(comm, x, plan))
    if coll == "reduce-scatter":
        run = _nvls_reduce_scatter if plan.algorithm == "nvls" else _ring_reduce_scatter
        return (yield from run(comm, x, plan))
    return (yield from _ring_chain(comm, x, plan, root, reduce=(coll == "reduce")))


def _channel_count(plan: Plan, elements: int) -> int:
    """Channels that get data: no more than the elements of a rank's block."""
    return max(1, min(plan.channels, elements))


def _loops(nbytes: int, chunk: int) -> int:
    return max(1, min(MAX_LOOPS, math.ceil(nbytes / chunk)))


def _ring_links(comm, plan: Plan, C: int) -> list:
    P, r = comm.size, comm.rank
    out = []
    for c in range(C):
        order = plan.orders[c]
        pos = plan.positions[c][r]
        out.append((pos, order, order[(pos + 1) % P], order[(pos - 1) % P]))
    return out


def _ring_allgather(comm, x, plan: Plan):
    """C rings at once, each on its channel range of every rank's block: P - 1 steps; at step
    s the rank at ring position q sends the block of rank order[q - s] to the next and
    receives that of order[q - s - 1], in up to MAX_LOOPS loops of the protocol's chunk."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = _channel_count(plan, len(x))
    chunk = ring_chunk_bytes(plan.protocol)
    links = _ring_links(comm, plan, C)
    # mine[c][loop]: my piece of channel c, loop ``loop``
    mine = [split(rng, _loops(int(rng.nbytes), chunk)) for rng in split(x, C)]
    got = [[[None] * P for _ in mine[c]] for c in range(C)]   # got[c][loop][rank]
    for c in range(C):
        for loop, piece in enumerate(mine[c]):
            got[c][loop][r] = piece
    with comm.phase("allgather"):
        for loop in range(max(len(m) for m in mine)):
            jobs = [c for c in range(C) if loop < len(mine[c])]
            for s in range(P - 1):
                sends, recvs = [], []
                for c in jobs:
                    pos, order, nxt, prv = links[c]
                    sends.append(comm.isend(nxt, Wire(got[c][loop][order[(pos - s) % P]], f), tag=(c, loop, s)))
                    recvs.append(comm.irecv(prv, tag=(c, loop, s)))
                msgs = yield comm.waitall(recvs + sends)
                for c, g in zip(jobs, msgs):
                    pos, order, _, _ = links[c]
                    got[c][loop][order[(pos - s - 1) % P]] = g.data
    return [got[c][loop][j] for j in range(P) for c in range(C) for loop in range(len(mine[c]))]


def _ring_reduce_scatter(comm, x, plan: Plan):
    """C rings at once: P - 1 steps; at step s the rank at ring position q sends its partial sum
    of the block of rank order[q - s - 1] to the next and adds its own data to the partial of
    order[q - s - 2] it receives; after the last step it holds its own block, summed."""
    P, r, f = comm.size, comm.rank, plan.wire
    blocks = split(x, P)
    C = _channel_count(plan, len(blocks[0]))
    chunk = ring_chunk_bytes(plan.protocol)
    links = _ring_links(comm, plan, C)
    # parts[c][loop][rank]: this rank's (partial) data of rank's block, channel c, loop
    per_block = [split(b, C) for b in blocks]
    nloops = [_loops(int(per_block[r][c].nbytes), chunk) for c in range(C)]
    parts = [[[None] * P for _ in range(nloops[c])] for c in range(C)]
    for j in range(P):
        for c in range(C):
            for loop, piece in enumerate(split(per_block[j][c], nloops[c])):
                parts[c][loop][j] = piece
    with comm.phase("reduce-scatter"):
        for loop in range(max(nloops)):
            jobs = [c for c in range(C) if loop < nloops[c]]
            for s in range(P - 1):
                sends, recvs = [], []
                for c in jobs:
                    pos, order, nxt, prv = links[c]
                    sends.append(comm.isend(nxt, Wire(parts[c][loop][order[(pos - s - 1) % P]], f),
                                            tag=(c, loop, s)))
                    recvs.append(comm.irecv(prv, tag=(c, loop, s)))
                msgs = yield comm.waitall(recvs + sends)
                for c, g in zip(jobs, msgs):
                    pos, order, _, _ = links[c]
                    j = order[(pos - s - 2) % P]
                    parts[c][loop][j] = yield comm.add(parts[c][loop][j], g.data)
    return [parts[c][loop][r] for c in range(C) for loop in range(nloops[c])]


def _ring_chain(comm, x, plan: Plan, root: int, reduce: bool):
    """Per channel, a pipelined chain along the channel's ring: broadcast from the root
    (root, next, ..., the rank before the root) or reduce to it (the rank after the root
    first, the root last, each adding its data), in chunks of one FIFO step of the protocol
    (at most MAX_CHAIN_CHUNKS per channel), all channels at once. Ticks are global: chunk j
    reaches chain place v at tick j + v, so at tick T a rank receives chunk T - v of every
    channel where it is at place v and passes chunk T - v - 1 on; the messages of one tick
    are all posted together on every rank (channels whose chains put the rank at different
    places cannot wait on each other)."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = _channel_count(plan, len(x))
    step = tree_chunk_bytes(plan.protocol)
    links = _ring_links(comm, plan, C)
    chans = []
    for c, rng in enumerate(split(x, C)):
        pos, order, nxt, prv = links[c]
        rpos = plan.positions[c][root]
        v = (pos - rpos) % P if not reduce else (pos - rpos - 1) % P   # place in the chain
        k = max(1, min(MAX_CHAIN_CHUNKS, math.ceil(int(rng.nbytes) / step)))
        chans.append((v, nxt, prv, split(rng, k)))
    K = max(len(ch[3]) for ch in chans)
    out = [list(ch[3]) for ch in chans]
    with comm.phase("reduce" if reduce else "broadcast"):
        for t in range(K + P):
            sends, recvs, where = [], [], []
            for c, (v, nxt, prv, chunks) in enumerate(chans):
                k = len(chunks)
                j = t - v
                if v > 0 and 0 <= j < k:
                    recvs.append(comm.irecv(prv, tag=(c, j)))
                    where.append((c, j))
                if v < P - 1 and 0 <= j - 1 < k:
                    sends.append(comm.isend(nxt, Wire(out[c][j - 1], f), tag=(c, j - 1)))
            if not sends and not recvs:
                continue
            msgs = yield comm.waitall(recvs + sends)
            for (c, j), g in zip(where, msgs):
                out[c][j] = (yield comm.add(out[c][j], g.data)) if reduce else g.data
    return [piece for per_channel in out for piece in per_channel]


def _nvls_allgather(comm, x, plan: Plan):
    """NVLS allgather emulated with point-to-point messages: per channel, every rank sends its
    range to every other rank at once (the switch's multicast); wire sizes scaled by the NVLS
    efficiency (see :func:`make_coll_plan`)."""
    P, r, f = comm.size, comm.rank, plan.wire
    C = _channel_count(plan, len(x))
    mine = split(x, C)
    others = [h for h in range(P) if h != r]
    got = [[None] * P for _ in range(C)]
    with comm.phase("nvls-multicast"):
        sends, recvs, where = [], [], []
        for c in range(C):
            got[c][r] = mine[c]
            for h in others:
                sends.append(comm.isend(h, Wire(mine[c], f), tag=(c, "ag")))
            for h in others:
                recvs.append(comm.irecv(h, tag=(c, "ag")))
                where.append((c, h))
        msgs = yield comm.waitall(recvs + sends)
        for (c, h), g in zip(where, msgs):
            got[c][h] = g.data
    return [got[c][j] for j in range(P) for c in range(C)]


def _nvls_reduce_scatter(comm, x, plan: Plan):
    """NVLS reduce-scatter emulated: per channel, every rank sends its range of block h to rank
    h (the switch's load-reduce), which adds them up."""
    P, r, f = comm.size, comm.rank, plan.wire
    blocks = split(x, P)
    C = _channel_count(plan, len(blocks[0]))
    per_block = [split(b, C) for b in blocks]
    others = [h for h in range(P) if h != r]
    with comm.phase("nvls-reduce"):
        sends, recvs, where = [], [], []
        for c in range(C):
            for h in others:
                sends.append(comm.isend(h, Wire(per_block[h][c], f), tag=(c, "rs")))
            for h in others:
                recvs.append(comm.irecv(h, tag=(c, "rs")))
                where.append(c)
        msgs = yield comm.waitall(recvs + sends)
        acc = list(per_block[r])
        for c, g in zip(where, msgs):
            acc[c] = yield comm.add(acc[c], g.data)
    return acc


def messages_for(coll: str, algorithm: str):
    """The registry ``messages`` hook of an nccl-* algorithm of ``coll``: the messages its
    plan sends (rings: P (P - 1) per loop of every channel; NVLS: P (P - 1) per channel;
    chains: P - 1 per chunk of every channel)."""

    def messages(P, *, n, dtype, graph, placement, profile, protocol=None, channels=None, **_):
        if P < 2:
            return 0
        item = dtype.itemsize
        plan = make_coll_plan(graph, list(placement), profile, coll, algorithm,
                              n * item * (P if coll == "allgather" else 1), protocol, channels)
        elems = n // P if coll == "reduce-scatter" else n       # what the channels cut
        C = _channel_count(plan, elems)
        sizes = [(b - a) * item for a, b in block_bounds(elems, C)]
        if coll in ("broadcast", "reduce"):
            step = tree_chunk_bytes(plan.protocol)
            return (P - 1) * sum(max(1, min(MAX_CHAIN_CHUNKS, math.ceil(b / step))) for b in sizes)
        if plan.algorithm == "nvls":
            return C * P * (P - 1)
        chunk = ring_chunk_bytes(plan.protocol)
        return P * (P - 1) * sum(_loops(b, chunk) for b in sizes)

    return messages


def report_fields_for(coll: str, algorithm: str):
    """The ``report_fields(graph, placement, nbytes, options, profile)`` hook of an nccl-*
    algorithm of ``coll`` (``nbytes`` as nccl-tests prints it, which is NCCL's ``bytes``)."""

    def fields(graph, placement, nbytes, options, profile):
        plan = make_coll_plan(graph, list(placement), profile, coll, algorithm, int(nbytes),
                              options.get("protocol"), options.get("channels"))
        return plan.fields()

    return fields
