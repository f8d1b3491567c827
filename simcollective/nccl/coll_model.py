"""NCCL's cost model for allgather, reduce-scatter, broadcast and reduce.

What NCCL has per collective:

* allgather, reduce-scatter: **Ring** (C channels, each its own ring, P - 1 steps, chunks of
  the protocol) and **NVLS** on one node with NVLink SHARP (multi-node NVLS needs CollNet,
  which plain nccl-tests runs do not have); no tree (PAT needs one rank per node);
* broadcast, reduce: **Ring** only, a pipelined chain along each channel's ring starting
  (broadcast) or ending (reduce) at the root, chunk = one FIFO step of the protocol.

The cost model for these collectives: ``nsteps`` = P - 1 (allgather, reduce-scatter) or P
(broadcast, reduce); ``bytes`` = the whole output (allgather) / input (reduce-scatter)
buffer, ``count x itemsize`` otherwise; ring ``BW = busBw x P / nsteps``; NVLS ``BW = busBw``
with per channel ``min(bwIntra x nvlsEfficiency x (nCh - 1)/nCh x (ppn - 1)/ppn, bwInter)``;
ring latency ``base + (nsteps - nInter) x intra hop + nInter x net hop`` with nInter =
nodes - 1 for allgather/reduce-scatter (the net hop carries the latency the transport
advertises, twice for Simple, as for allreduce), ``nsteps x hop`` (Tree's hop for Simple) for
broadcast/reduce; NVLS 25 us. The allreduce-only corrections (tree correction factors, the
ring plateau factor) do not apply.
"""

from __future__ import annotations

import math

from ..errors import UserInputError
from . import model
from .protocols import TUNER_ORDER
from .versions import has_algorithm, latency_tables, ll_max_bw, ring_ll_factor, tuner_arch
from .transport import advertised_latency, protocol_allowed

__all__ = ["NCCL_ALGOS", "coll_enabled", "coll_bandwidth", "coll_latency", "coll_predict", "coll_choose"]

#: the algorithms NCCL has for each collective (CollNet and PAT do not apply here)
NCCL_ALGOS = {"allgather": ("ring", "nvls"), "reduce-scatter": ("ring", "nvls"), "broadcast": ("ring",),
              "reduce": ("ring",)}


def _nsteps(coll: str, n: int) -> int:
    return n - 1 if coll in ("allgather", "reduce-scatter") else n


def coll_enabled(m, coll: str, algo: str, proto: str) -> bool:
    """Whether NCCL would consider (algo, proto) for ``coll`` on machine ``m``."""
    if algo not in NCCL_ALGOS[coll] or m.nranks < 2 or not has_algorithm(m, algo, coll):
        return False
    if algo == "nvls":   # single node, NVLink SHARP, Simple, <= 32 local ranks
        return m.nvls and m.nnodes == 1 and proto == "simple" and m.ppn <= 32
    if proto == "ll128" and (m.intra != "nvlink" or m.cc < 70):
        return False
    return protocol_allowed(m, proto)


def coll_bandwidth(m, graphs: dict, coll: str, algo: str, proto: str) -> float:
    """NCCL's algorithm bandwidth BW (GB/s) for ``coll``; 0 = disabled."""
    if not coll_enabled(m, coll, algo, proto) or algo not in graphs:
        return 0.0
    g = graphs[algo]
    n, nn = m.nranks, m.nnodes
    ni = 0 if nn == 1 else 1 if nn == 2 else 2
    arch = tuner_arch(m)    # the tables' row: Hopper's for Blackwell before NCCL 2.27
    nch = g.nchannels
    bw = g.bw_intra if nn <= 2 else g.bw_inter
    if algo == "nvls":
        intra = g.bw_intra * model.NVLS_EFFICIENCY[arch] * (nch - 1) / nch * (m.ppn - 1) / m.ppn
        bw = min(intra, g.bw_inter)
    bus = nch * bw
    if algo == "ring" and proto == "ll":
        bus = min(ll_max_bw(m, model.LL_MAX_BW[arch][ni]), ring_ll_factor(m, coll in ("allreduce", "reduce")) * bus)
    elif algo == "ring" and proto == "ll128":
        bus = min(0.92 * bus, nch * model.PER_CH_RING_LL128[arch])
    if algo == "ring":   # bus -> algorithm bandwidth (skipped for NVLS allgather/reduce-scatter)
        bus *= n / _nsteps(coll, n)
    return bus


def coll_latency(m, coll: str, algo: str, proto: str, table: dict | None = None) -> float:
    """NCCL's latency L (us) of one call of ``coll``; ``table`` may replace the
    constants as in :func:`simcollective.nccl.model.latency`."""
    base_t, hop_t = latency_tables(m, table)
    base_t, hop_t = base_t or model.BASE_LAT, hop_t or model.HW_LAT
    p = TUNER_ORDER.index(proto)
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
        inter += advertised_latency(m, proto)   # as for allreduce, on every network hop of the ring
        if nn > 1:
            intra = max(intra, model.NET_OVERHEAD_US * (3 if proto == "simple" else 1))
    else:   # broadcast/reduce: nsteps hops, Tree's hop latency for Simple
        kind = "tree" if proto == "simple" else "ring"
        intra = hop_t[link][kind][p]
        inter = hop_t["net"][kind][p]
    return L + (nsteps - n_inter) * intra + n_inter * inter


def coll_predict(m, graphs: dict, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's predicted time (us) of one ``coll`` of ``nbytes`` (``nbytes``: NCCL's ``bytes``);
    inf when disabled."""
    bw = coll_bandwidth(m, graphs, coll, algo, proto)
    if bw <= 0:
        return float("inf")
    return coll_latency(m, coll, algo, proto) + nbytes / (1000.0 * bw)


def coll_choose(m, coll: str, nbytes: int, algos=None, protos=TUNER_ORDER) -> tuple:
    """NCCL's pick for one ``coll`` of ``nbytes``: ``(algorithm, protocol, channels, time_us)``
    (minimum predicted time; ties: NCCL's order Ring before NVLS, LL, LL128, Simple)."""
    graphs = model.graphs_of(m)
    best = None
    for algo in ("ring", "nvls"):
        if algos is not None and algo not in algos:
            continue
        for proto in TUNER_ORDER:
            if proto not in protos:
                continue
            t = coll_predict(m, graphs, coll, algo, proto, nbytes)
            if best is None or t < best[3]:
                best = (algo, proto, 0, t)
    if best is None or math.isinf(best[3]):
        raise UserInputError(f"NCCL's model has no algorithm/protocol for {coll} available on this machine")
    algo, proto, _, t = best
    return algo, proto, model.channels_for(m, graphs, algo, proto, nbytes), t
