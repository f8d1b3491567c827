"""NCCL's version as an input: the tuner's choices and constants of each version family.

NCCL's cost model (``src/graph/tuning.cc``) changed between releases: algorithms were added
(NVLS in 2.17, NVLSTree in 2.18, NVLS allgather / reduce-scatter in 2.19) and the latency
tables and a few bandwidth factors moved. A *family* is a run of releases with the same
figures in what this model reads; ``--nccl-version X.Y[.Z]`` picks the family of release
X.Y. Every figure below is either **read** in NCCL's source at the tag named (the
repository github.com/NVIDIA/nccl, tags v2.12.12-1, v2.18.3-1, v2.19.3-1, v2.21.5-1,
v2.23.4-1, v2.27.7-1 and 2.30.7 at HEAD) or **assumed**, as its comment says:

* 2.4-2.11: no tag of these releases was read; the earliest tables read (2.12.12) are used.
  Tree exists from 2.4 (NCCL 2.4 release notes: double binary trees).
* 2.17: NVLS allreduce (one node) exists; its tables are 2.12's (not read at 2.17) with
  2.18's NVLS latency.
* NVLS allgather / reduce-scatter from 2.19: recalled from NCCL's 2.19 release notes, not
  re-read.
* Blackwell (compute capability 10.x) rows of the per-architecture tables (llMaxBws, the
  per-channel caps, nvlsEfficiency) exist from 2.27 (added as twice Hopper's, set to 2.30's
  values by 2.30); before, the tuner indexes its tables by ``compCap >= 90 -> Hopper``, so a
  Blackwell GPU reads Hopper's row (:func:`tuner_arch`). 2.27-2.28's interim Blackwell figures
  are not modelled (2.30's).
* NVLS / NVLSTree allreduce bandwidth before 2.28 (no nvlsEfficiency): per channel
  min(bwIntra, bwInter), bwInter halved for NVLSTree beyond 2 nodes, bus -> algorithm ratio
  5/6 (read at v2.19.3-1 and v2.21.5-1; assumed unchanged until 2.28, whose nvlsEfficiency
  replaced it); 2.18's NVLSTree ratio 0.70 x nNodes / (2 (nNodes - 1)) (read at v2.18.3-1),
  2.17-2.18's per-channel bw assumed as 2.19's (:func:`nvls_rule`).
* A ring allreduce's latency counts 2 nNodes network steps under 2.18 (read at v2.18.3-1),
  2 (nNodes - 1) otherwise (2.30's; the other tags were not read for it:
  :func:`ring_inter_steps`).

What is **not** versioned (2.30's figures for every version, no older source read): the
per-channel bandwidth caps (``perChMax*``, but which architecture's row Blackwell reads), NVLS
allgather / reduce-scatter bandwidth (allreduce's follows :func:`nvls_rule`), the tree
correction factors, the ring plateau factor, the topology search's speed tables and so the
channel counts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import UserInputError

__all__ = ["NcclVersion", "FAMILIES", "NEWEST", "parse_version", "release_name", "version_of", "with_version",
           "modelled_range", "tuner_of", "tuner_named",
           "has_algorithm", "ring_ll_factor", "ll_max_bw", "latency_tables", "check_available", "tuner_arch",
           "nvls_rule", "ring_inter_steps"]

_ALL = ("tree", "ring", "nvls", "nvlstree")


def _hop(nvlink_tree, nvlink_ring, pci_tree, pci_ring, net_tree, net_ring, nvls=(25.0, 18.0, 20.9)):
    """A hwLatencies table (us per hop, (LL, LL128, Simple)); ``nvls``: NVLink NVLS/NVLSTree,
    network NVLS, network NVLSTree (Simple only)."""
    nv, net_nvls, net_nvlstree = nvls
    return {
        "nvlink": {"tree": nvlink_tree, "ring": nvlink_ring, "nvls": (0.0, 0.0, nv), "nvlstree": (0.0, 0.0, nv)},
        "pci": {"tree": pci_tree, "ring": pci_ring, "nvls": (0.0, 0.0, 0.0), "nvlstree": (0.0, 0.0, 0.0)},
        "net": {"tree": net_tree, "ring": net_ring, "nvls": (0.0, 0.0, net_nvls),
                "nvlstree": (0.0, 0.0, net_nvlstree)},
    }


def _base(tree, ring):
    return {"tree": tree, "ring": ring, "nvls": (0.0, 0.0, 0.0), "nvlstree": (0.0, 0.0, 0.0)}


@dataclass(frozen=True)
class NcclVersion:
    """One family of NCCL releases, ``first`` to ``last`` (``(major, minor)``), as the tuner
    model reads it.

    ``algorithms``: the allreduce algorithms that exist; ``coll_nvls``: NVLS allgather /
    reduce-scatter exist; ``base`` / ``hop``: baseLatencies / hwLatencies (us, (LL, LL128,
    Simple)); ``ring_ll``: ring LL busbw factor, ``(allreduce/reduce or multi-node, other)``;
    ``ll_max_hopper``: the Hopper row of llMaxBws on one node (GB/s); ``source``: where the
    figures come from; ``blackwell_row``: the per-architecture tables have a Blackwell row;
    ``nvls_bw``: which release's NVLS / NVLSTree bandwidth rule (None: the newest)."""

    name: str
    first: tuple
    last: tuple
    algorithms: tuple
    coll_nvls: bool
    base: dict
    hop: dict
    ring_ll: tuple
    ll_max_hopper: float
    source: str
    #: the tuner's tables have a Blackwell row (NCCL 2.27 on); without it a Blackwell GPU reads
    #: the Hopper row
    blackwell_row: bool = False
    #: NVLS / NVLSTree bandwidth before nvlsEfficiency (2.28): "2.18" or "2.19" (the rule of
    #: those releases, :func:`nvls_rule`); None: the newest
    nvls_bw: str | None = None
    #: network steps of a ring allreduce's latency: 2 nNodes (read at v2.18.3-1) where True,
    #: else 2 (nNodes - 1)
    ring_inter_2n: bool = False

    def contains(self, major: int, minor: int) -> bool:
        return self.first <= (major, minor) <= self.last


# 2.12.12: baseLat Tree (4.4, 4.4, 0), Ring (3.6, 10.0, 8.4); hwLat NVLink Tree (.52, 1.25, 28), Ring (.47, 1.9, 3.4);
# PCI Tree Simple 28; NET Tree (5.0, 8.5, 28), Ring (2.7, 4.0, 28) (read at v2.12.12-1); PCI Tree LL/LL128 and PCI Ring:
# 2.30's (assumed); ring LL factor 1/4 or 1/3 (read at v2.18.3-1, assumed unchanged since 2.12)
_BASE_212 = _base((4.4, 4.4, 0.0), (3.6, 10.0, 8.4))
_HOP_212 = _hop((0.52, 1.25, 28.0), (0.47, 1.9, 3.4), (1.0, 1.9, 28.0), (1.0, 2.5, 5.7), (5.0, 8.5, 28.0),
                (2.7, 4.0, 28.0), nvls=(23.0, 18.0, 19.0))
# 2.18.3: baseLat Tree (6.8, 14.0, 0), Ring (6.6, 14.0, 8.4), NVLS/NVLSTree Simple 23.0 (this model's NVLS latency has no
# base term, so the 23 us are its NVLink hop); hwLat NVLink Tree (.6, 1.25, 4), PCI Tree Simple 6, NET Tree Simple 14,
# NET Ring Simple 14; NET NVLS 18, NVLSTree 19 (read at v2.18.3-1); the other entries 2.30's (assumed)
_BASE_218 = _base((6.8, 14.0, 0.0), (6.6, 14.0, 8.4))
_HOP_218 = _hop((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (1.0, 1.9, 6.0), (1.0, 2.5, 5.7), (5.0, 8.5, 14.0),
                (2.7, 4.0, 14.0), nvls=(23.0, 18.0, 19.0))
# 2.19-2.22: Tree Simple hwLat 28 on NVLink, PCI and NET, base 0 (read at v2.19.3-1, v2.21.5-1)
_HOP_219 = _hop((0.6, 1.25, 28.0), (0.6, 1.9, 3.4), (1.0, 1.9, 28.0), (1.0, 2.5, 5.7), (5.0, 8.5, 28.0),
                (2.7, 4.0, 14.0), nvls=(23.0, 18.0, 19.0))   # NVLS: 2.18's (assumed unchanged until 2.23)
# 2.23 on: 2.30.7's ncclTunerConstantsDefaults (Tree Simple base 8.4, NVLink/PCI Tree Simple 4.0 from v2.23.4-1)
_BASE_230 = _base((6.8, 14.0, 8.4), (6.6, 14.0, 8.4))
_HOP_230 = _hop((0.6, 1.25, 4.0), (0.6, 1.9, 3.4), (1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (5.0, 8.5, 14.0),
                (2.7, 4.0, 14.0))
_OLD_LL = (0.25, 1.0 / 3.0)
_NEW_LL = (0.5, 0.5)        # from v2.21.5-1
_AMPERE_LL = 87.7           # the Hopper row of llMaxBws equal to Ampere's until 2.20 (read at v2.18.3-1, v2.19.3-1)

FAMILIES = (
    NcclVersion("2.4", (2, 4), (2, 11), ("tree", "ring"), False, _BASE_212, _HOP_212, _OLD_LL, _AMPERE_LL,
                "2.12.12's tables (2.4-2.11 not read); Tree from 2.4"),
    NcclVersion("2.12", (2, 12), (2, 16), ("tree", "ring"), False, _BASE_212, _HOP_212, _OLD_LL, _AMPERE_LL,
                "v2.12.12-1"),
    NcclVersion("2.17", (2, 17), (2, 17), ("tree", "ring", "nvls"), False, _BASE_212, _HOP_212, _OLD_LL,
                _AMPERE_LL, "2.12.12's tables with NVLS (one node, added in 2.17); 2.17 not read", nvls_bw="2.18"),
    NcclVersion("2.18", (2, 18), (2, 18), _ALL, False, _BASE_218, _HOP_218, _OLD_LL, _AMPERE_LL, "v2.18.3-1",
                nvls_bw="2.18", ring_inter_2n=True),
    NcclVersion("2.19", (2, 19), (2, 20), _ALL, True, _BASE_218, _HOP_219, _OLD_LL, _AMPERE_LL, "v2.19.3-1",
                nvls_bw="2.19"),
    NcclVersion("2.21", (2, 21), (2, 22), _ALL, True, _BASE_218, _HOP_219, _NEW_LL, 141.0, "v2.21.5-1",
                nvls_bw="2.19"),
    NcclVersion("2.23", (2, 23), (2, 26), _ALL, True, _BASE_230, _HOP_230, _NEW_LL, 141.0,
                "v2.23.4-1 to v2.26 (the latency tables of 2.30.7); no Blackwell row in the per-architecture "
                "tables, so a Blackwell GPU reads Hopper's; NVLS bandwidth as 2.19-2.22 (assumed unchanged "
                "until nvlsEfficiency, 2.28)", nvls_bw="2.19"),
    NcclVersion("2.27", (2, 27), (2, 27), _ALL, True, _BASE_230, _HOP_230, _NEW_LL, 141.0,
                "v2.27.7-1 (the latency tables of 2.30.7; Blackwell rows added, 2.30's here); NVLS bandwidth "
                "as 2.19-2.22 (nvlsEfficiency from 2.28)", blackwell_row=True, nvls_bw="2.19"),
    NcclVersion("2.28", (2, 28), (2, 30), _ALL, True, _BASE_230, _HOP_230, _NEW_LL, 141.0,
                "v2.28.3 to 2.30.7 (the figures this model reads did not change in between but 2.28's interim "
                "Blackwell rows, 2.30's here)", blackwell_row=True),
)
#: the newest modelled release: what a run without ``--nccl-version`` models
NEWEST = "2.30"


def modelled_range() -> str:
    first, last = FAMILIES[0].first, FAMILIES[-1].last
    return f"{first[0]}.{first[1]} to {last[0]}.{last[1]}"


def parse_version(text, flag: str = "--nccl-version") -> tuple:
    """``(major, minor, patch or None)`` of ``"X.Y[.Z]"`` (a ``+cuda...`` or ``-1`` suffix and a
    tag's ``v`` are dropped); a one-line error naming the value and the modelled range otherwise."""
    if not isinstance(text, str):
        raise UserInputError(f"{flag} {text!r} must be given as text (e.g. \"2.18.5\"; a number drops zeros: "
                             f"2.20 reads as 2.2); modelled: {modelled_range()}")
    raw = text.strip()
    core = raw.split("+", 1)[0].split("-", 1)[0].removeprefix("v").removeprefix("V")   # a git tag: v2.18.3-1
    parts = core.split(".")
    try:
        if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
            raise ValueError
        nums = tuple(int(p) for p in parts)
    except ValueError:
        raise UserInputError(f"{flag} {raw!r} is not a version X.Y or X.Y.Z; modelled: {modelled_range()}") from None
    if not any(f.contains(nums[0], nums[1]) for f in FAMILIES):
        raise UserInputError(f"{flag} {raw!r} is not a modelled NCCL version; modelled: {modelled_range()}")
    return nums[0], nums[1], nums[2] if len(nums) == 3 else None


def release_name(text) -> str:
    """Release ``text`` as the output names it, ``"X.Y.Z"`` or ``"X.Y"`` (a tag's ``v`` and a
    ``-1`` or ``+cuda...`` suffix dropped).

    >>> release_name("v2.18.3-1"), release_name("2.26.2+cuda12.2"), release_name("2.30")
    ('2.18.3', '2.26.2', '2.30')
    """
    major, minor, patch = parse_version(text)
    return f"{major}.{minor}" + ("" if patch is None else f".{patch}")


def version_of(text, flag: str = "--nccl-version") -> NcclVersion:
    """The family of release ``text`` (checked as :func:`parse_version` does)."""
    major, minor, _ = parse_version(text, flag)
    return next(f for f in FAMILIES if f.contains(major, minor))


def tuner_of(table):
    """The :class:`NcclVersion` a ``[nccl]`` table was set to, named as it was given (None: the
    newest release's)."""
    return tuner_named(getattr(table, "version", None))


def tuner_named(text):
    """The :class:`NcclVersion` of release ``text``, named ``text`` (None: None, the newest)."""
    return None if text is None else replace(version_of(text), name=release_name(text))


def with_version(profile, text):
    """``profile`` with NCCL release ``text``'s tuner: its ``[nccl]`` latency tables replaced by
    the family's and the version recorded (``text`` None: ``profile`` itself, the newest
    release's tuner as the ``nccl`` profile has it)."""
    if text is None:
        return profile
    from .constants import NcclConstants

    fam = version_of(text)
    table = profile.nccl if profile.nccl is not None else NcclConstants.default()
    table = replace(table, base=fam.base, hop=fam.hop, version=release_name(text))
    return replace(profile, nccl=table)


# -- what the tuner model reads of a machine's version (``machine.tuner``; None: the newest) -----
def has_algorithm(m, algo: str, coll: str = "allreduce") -> bool:
    """Whether the release of machine ``m``'s tuner has ``algo`` for ``coll``."""
    fam = getattr(m, "tuner", None)
    if fam is None:
        return True
    if coll == "allreduce":
        return algo in fam.algorithms
    return algo != "nvls" or fam.coll_nvls


def tuner_arch(m) -> str:
    """The architecture row of the tuner's per-architecture tables that machine ``m`` reads:
    its own, but Hopper's for a Blackwell GPU under a release without a Blackwell row (before
    2.27; NCCL 2.30 src/graph/tuning.cc history: the Blackwell rows were added in 2.27)."""
    fam = getattr(m, "tuner", None)
    if m.arch == "blackwell" and fam is not None and not fam.blackwell_row:
        return "hopper"
    return m.arch


def nvls_rule(m, algo: str, bw_intra: float, bw_inter: float):
    """``(bw per channel, bus -> algorithm ratio)`` of NVLS / NVLSTree allreduce under a release
    before nvlsEfficiency (2.28), or None (the newest rule applies). NCCL 2.19-2.27: bw =
    min(bwIntra, bwInter), bwInter halved for NVLSTree beyond 2 nodes, ratio 5/6; 2.17-2.18:
    bw = min(bwIntra, bwInter) (assumed as 2.19), ratio 5/6 (NVLS) or 0.70 x nNodes / (2 (nNodes
    - 1)) (NVLSTree) (tuning.cc at v2.18.3-1, v2.19.3-1, v2.21.5-1)."""
    fam = getattr(m, "tuner", None)
    rule = None if fam is None else fam.nvls_bw
    if rule is None:
        return None
    halve = algo == "nvlstree" and m.nnodes > 2 and rule == "2.19"
    bw = min(bw_intra, bw_inter / 2 if halve else bw_inter)
    if algo == "nvlstree" and rule == "2.18":
        return bw, 0.70 * m.nnodes / (2 * (m.nnodes - 1))
    return bw, 5.0 / 6.0


def ring_inter_steps(m) -> int:
    """Network steps NCCL's latency of a ring allreduce counts on machine ``m``: none on one
    node, 2 (nNodes - 1) (2.30), 2 nNodes under 2.18 (tuning.cc at v2.18.3-1; the other
    releases' count is taken as 2.30's)."""
    if m.nnodes == 1:
        return 0
    fam = getattr(m, "tuner", None)
    return 2 * m.nnodes if fam is not None and fam.ring_inter_2n else 2 * (m.nnodes - 1)


def ring_ll_factor(m, allreduce_or_reduce: bool) -> float:
    """Ring LL's busbw factor: 0.5 from 2.21; before, 1/4 for allreduce and reduce or across
    nodes, 1/3 otherwise (tuning.cc at v2.18.3-1)."""
    fam = getattr(m, "tuner", None)
    if fam is None:
        return 0.5
    return fam.ring_ll[0 if (allreduce_or_reduce or m.nnodes > 1) else 1]


def ll_max_bw(m, newest: float) -> float:
    """llMaxBws on ``m`` (``newest``: the newest release's figure): the Hopper row on one node
    was Ampere's (87.7) until 2.20."""
    fam = getattr(m, "tuner", None)
    if fam is None or m.nnodes > 1 or tuner_arch(m) != "hopper":
        return newest
    return fam.ll_max_hopper


def latency_tables(m, table):
    """``(base, hop)`` latency tables of the tuner: ``table``'s (``{"base", "hop"}``) when
    given, else those of ``m``'s release (None, None: the model's own, the newest)."""
    fam = getattr(m, "tuner", None)
    base = (table or {}).get("base", None if fam is None else fam.base)
    hop = (table or {}).get("hop", None if fam is None else fam.hop)
    return base, hop


_SINCE = {("allreduce", "nvls"): "2.17", ("allreduce", "nvlstree"): "2.18", ("other", "nvls"): "2.19"}


def check_available(m, algo: str, coll: str = "allreduce") -> None:
    """A one-line error when ``m``'s NCCL release has no ``algo`` for ``coll``."""
    if has_algorithm(m, algo, coll):
        return
    since = _SINCE[("allreduce" if coll == "allreduce" else "other", algo)]
    name = "NVLSTree" if algo == "nvlstree" else "NVLS"
    raise UserInputError(f"--nccl-version {m.tuner.name}: NCCL has {name} for {coll} from {since} on; "
                         f"use a newer --nccl-version or another algorithm (nccl-ring)")
