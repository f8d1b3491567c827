"""The ``NCCL_*`` settings an nccl-tests log states: read from its lines (:func:`settings_of`;
which lines count: :mod:`.nccltests`), and applied as NCCL applies them (see
:mod:`.compare`): which are applied, overridden by a flag, not modelled or diagnostic, and
NCCL's pick of algorithm, protocol and channels under them."""

from __future__ import annotations

import re

from ..errors import UserInputError

__all__ = ["settings_of", "log_settings", "topology_settings", "settings_pick", "settings_note", "DIAGNOSTIC",
           "CHANNEL_FLOOR", "CHANNEL_CEILING", "TOPOLOGY_SETTINGS", "nccl_version_of"]

#: NCCL settings with no effect on timing (diagnostics)
DIAGNOSTIC = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")
CHANNEL_FLOOR = ("NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS")
CHANNEL_CEILING = ("NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS")
#: settings of NCCL's IB transport -> the preset's ``--topology-opt`` they set (:func:`topology_settings`)
TOPOLOGY_SETTINGS = {"NCCL_IB_QPS_PER_CONNECTION": "net_connections"}
#: settings not modelled, with the reason shown beside them
NOT_MODELLED_WHY = {
    "NCCL_TREE_THRESHOLD": "the size below which NCCL 2.4 ran tree instead of ring, a rule later NCCL "
                           "replaced by its tuning model; the model here is that later one, with "
                           "protocols and channels 2.4 did not have",
    "NCCL_IB_HCA": "the NICs NCCL uses: --topology-opt nics_per_node=N leaves the others out of the machine",
}


_SETTING = re.compile(r"\b(NCCL_[A-Z0-9_]+)=(\"[^\"]*\"|'[^']*'|[^\s;)]+)")
_SET_BY_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set by environment to (\S+)")
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9 _()/-]{0,40}?)\s*:\s")
#: keys whose lines (and indented continuations) are prose, not the run's settings
_PROSE_KEYS = ("note", "notes")


def _stated(lines):
    """The lines' bodies (comment mark removed) that state something of the run: not those
    under a ``notes:`` key, nor their indented continuations (prose about other runs)."""
    key = None
    for line in lines or ():
        body = line.strip()
        body = body[1:] if body.startswith("#") else body
        m = _KEY.match(body) if ":" in body else None
        if m:
            key = m.group(1).strip().lower()
        elif not (body[:1].isspace() and len(body) - len(body.lstrip()) > 2):
            key = None                       # a line of its own, not a continuation
        if key is None or key.split()[0] not in _PROSE_KEYS:
            yield body


def settings_of(lines) -> dict:
    """``{NCCL_X: value}`` stated in ``lines`` (see :mod:`.nccltests`); placeholders such as
    ``NCCL_ALGO=<algo>`` or ``$VAR`` are not settings."""
    out: dict = {}
    for body in _stated(lines):
        if "NCCL_" not in body:
            continue
        for name, value in _SETTING.findall(body) + _SET_BY_ENV.findall(body):
            value = value.strip("\"'").rstrip(",.")
            if value and value[0] not in "<$":
                out[name] = value
    return out


def _count_setting(name, value, log, most=None, what="a count of 1 or more") -> int:
    """``value`` of the log's setting ``name`` as an int from 1 to ``most`` (None: no bound),
    else a one-line error saying NCCL takes ``what``."""
    try:
        v = int(value)
    except ValueError:
        v = 0
    if v < 1 or (most is not None and v > most):
        raise UserInputError(f"{log}: {name}={value!r} in the log: NCCL takes {what}")
    return v


def log_settings(settings: dict, log: str, coll: str, algorithm: str, protocol=None, channels=None) -> dict:
    """How the log's ``NCCL_*`` ``settings`` apply to a comparison run with the given
    ``--algorithm`` (``auto`` when not given), ``--protocol`` and ``--channels``.

    Returns ``{"read", "applied", "overridden", "not_modelled", "diagnostic", "algos", "protos",
    "min_channels", "max_channels", "topology"}``: ``algos``/``protos`` are the allowed sets of
    NCCL's model (None: all), ``min/max_channels`` the clamp of the communicator's channels (None:
    none), ``topology`` the :data:`TOPOLOGY_SETTINGS` stated, left to :func:`topology_settings`.
    """
    out = {"read": dict(settings), "applied": {}, "overridden": {}, "not_modelled": {}, "diagnostic": {},
           "algos": None, "protos": None, "min_channels": None, "max_channels": None, "topology": {}}
    nccl_algorithm = algorithm == "auto" or algorithm == "nccl" or algorithm.startswith("nccl-")
    for name, value in settings.items():
        if name in DIAGNOSTIC or name in TOPOLOGY_SETTINGS:
            out["diagnostic" if name in DIAGNOSTIC else "topology"][name] = value
            continue
        if name == "NCCL_ALGO":
            if value.lower() not in ("ring", "tree", "nvls"):
                out["not_modelled"][name] = value
            elif algorithm != "auto":
                out["overridden"][name] = f"--algorithm {algorithm}"
            else:
                out["applied"][name] = value   # compare runs nccl-X (Table.forced_algorithm)
            continue
        if name not in ("NCCL_PROTO", "NCCL_NVLS_ENABLE") + CHANNEL_FLOOR + CHANNEL_CEILING:
            why = NOT_MODELLED_WHY.get(name)
            out["not_modelled"][name] = f"{value} ({why})" if why else value
            continue
        if coll != "allreduce" or not nccl_algorithm:
            why = (f"--algorithm {algorithm} is not NCCL's" if not nccl_algorithm
                   else f"applied to allreduce only, not {coll}")
            out["not_modelled"][name] = f"{value} ({why})"
            continue
        if name == "NCCL_PROTO":
            allowed = _protocols(value, log)
            if protocol is not None:
                out["overridden"][name] = f"--protocol {protocol}"
            else:
                out["applied"][name] = value
                out["protos"] = allowed
        elif name == "NCCL_NVLS_ENABLE":
            if algorithm not in ("auto", "nccl"):
                out["overridden"][name] = f"--algorithm {algorithm}"
            else:
                out["applied"][name] = value
                if value.strip() == "0":
                    out["algos"] = ("tree", "ring")
        else:
            v = _count_setting(name, value, log, 64, "a channel count from 1 to 64")
            if channels is not None:
                out["overridden"][name] = f"--channels {channels}"
                continue
            out["applied"][name] = value
            key = "min_channels" if name in CHANNEL_FLOOR else "max_channels"
            old = out[key]
            out[key] = v if old is None else (max(old, v) if key == "min_channels" else min(old, v))
    if out["min_channels"] and out["max_channels"] and out["min_channels"] > out["max_channels"]:
        raise UserInputError(f"{log}: the log's channel floor {out['min_channels']} is above its ceiling "
                             f"{out['max_channels']} (NCCL_MIN_CTAS/NCCL_MAX_CTAS)")
    return out


def topology_settings(ls, graph, topology: str | None, opts: dict, log) -> dict:
    """The ``--topology-opt`` keys the log's transport settings give (``ls["topology"]``:
    ``NCCL_IB_QPS_PER_CONNECTION`` -> ``net_connections``, the QPs of each NCCL network
    connection), each moved to ``ls``'s applied, overridden or not modelled: applied when the
    machine ``graph`` is a preset (``topology``; None: a graph file) that takes the key, the key is
    not in ``opts`` already (the user's), and its network is NCCL's IB transport (a hardware
    family, or a shape on InfiniBand or RoCE: a net plugin does not read ``NCCL_IB_*``)."""
    from topologies import preset_options
    from topologies.transports import IB_VERBS

    out = {}
    for name, value in ls["topology"].items():
        key = TOPOLOGY_SETTINGS[name]
        transport = graph.graph.get("transport")
        if key in opts:
            ls["overridden"][name] = f"--topology-opt {key}={opts[key]}"
        elif topology is None or key not in preset_options(topology):
            ls["not_modelled"][name] = f"{value} (the machine takes no --topology-opt {key})"
        elif transport is not None and transport not in IB_VERBS:
            ls["not_modelled"][name] = f"{value} (transport {transport} is a net plugin, not NCCL's IB transport)"
        else:
            out[key] = _count_setting(name, value, log)
            ls["applied"][name] = value
    return out


def _protocols(value: str, log) -> tuple:
    """The protocols ``NCCL_PROTO=value`` allows (a comma list; ``^`` excludes)."""
    from ..nccl.model import PROTOCOLS

    text = value.strip()
    exclude = text.startswith("^")
    items = [x.strip().lower() for x in text.lstrip("^").split(",") if x.strip()]
    bad = [x for x in items if x not in PROTOCOLS]
    allowed = tuple(p for p in PROTOCOLS if (p in items) != exclude)
    if bad or not allowed:
        raise UserInputError(f"{log}: NCCL_PROTO={value!r} in the log: allowed protocols "
                             f"{', '.join(PROTOCOLS)} (a comma list, '^' to exclude), at least one left")
    return allowed


def settings_pick(m, graphs, algorithm, nbytes, ls, protocol, channels):
    """``(nccl-* algorithm, protocol, channels)`` NCCL would run for one allreduce of ``nbytes``
    under the log's settings ``ls`` (see :func:`log_settings`): NCCL's model over the allowed
    algorithms and protocols, then the communicator's channels clamped to the floor/ceiling
    and reduced for small messages as NCCL does (:func:`simcollective.nccl.model.channels_for`)."""
    import dataclasses

    from ..nccl import model
    from ..nccl.protocols import MAX_CHANNELS

    protos = (protocol,) if protocol is not None else (ls["protos"] or model.PROTOCOLS)
    if algorithm == "nccl":
        algos = ls["algos"] or model.ALGOS
    else:
        a = algorithm.removeprefix("nccl-")
        algos = ("nvlstree",) if a == "nvls" and m.nnodes > 1 else (a,)
    try:
        algo, proto, _, _ = model.choose(m, nbytes, algos=algos, protos=protos)
    except UserInputError:
        if algorithm == "nccl" or protocol is not None or ls["protos"]:
            raise
        algo, proto = algos[0], "simple"   # as make_plan: a forced algorithm the model disables
    if channels is None:
        g = graphs[algo]
        comm = g.comm_channels
        if ls["min_channels"]:
            comm = max(comm, ls["min_channels"])
        if ls["max_channels"]:
            comm = min(comm, ls["max_channels"])
        comm = min(comm, MAX_CHANNELS["nvls" if algo == "nvlstree" else algo])
        clamped = {**graphs, algo: dataclasses.replace(g, comm_channels=comm)}
        channels = model.channels_for(m, clamped, algo, proto, nbytes)
    return f"nccl-{'nvls' if algo == 'nvlstree' else algo}", proto, channels




def settings_note(ls, rows) -> str | None:
    """One line: the log's settings read, how each was applied, which are not modelled."""
    parts = []
    chans = sorted({r["channels"] for r in rows if r.get("channels")})
    span = (f"{chans[0]} channels" if len(chans) == 1 else f"{chans[0]}-{chans[-1]} channels by size") if chans else ""
    for name, value in ls["applied"].items():
        if name in CHANNEL_FLOOR + CHANNEL_CEILING:
            parts.append(f"{name}={value} in the log: {span}")
        elif name == "NCCL_PROTO":
            parts.append(f"{name}={value} in the log: protocols {', '.join(ls['protos'])}")
        elif name == "NCCL_NVLS_ENABLE":
            parts.append(f"{name}={value} in the log: "
                         + ("no NVLS/NVLSTree" if ls["algos"] else "NVLS allowed (as by default)"))
        elif name in TOPOLOGY_SETTINGS:
            parts.append(f"{name}={value} in the log: --topology-opt {TOPOLOGY_SETTINGS[name]}={value}")
        else:
            parts.append(f"{name}={value} in the log: applied")
    for name, flag in ls["overridden"].items():
        parts.append(f"{name}={ls['read'][name]} in the log overridden by {flag}")
    if ls["not_modelled"]:
        parts.append("not modelled: " + ", ".join(f"{k}={v}" for k, v in ls["not_modelled"].items()))
    if ls["diagnostic"]:
        parts.append("no effect on timing: " + ", ".join(f"{k}={v}" for k, v in ls["diagnostic"].items()))
    return "; ".join(parts) or None


#: an NCCL version as logs write it: "NCCL version 2.18.5+cuda12.2" (NCCL_DEBUG=VERSION),
#: "# NCCL version: 2.18.5", "NCCL 2.26.2+cuda12.8"; and nccl-tests' "nccl-library=22809"
_VERSION = re.compile(r"\bNCCL(?:\s+version)?\s*[:=]?\s*v?(\d+\.\d+(?:\.\d+)?)")
_VERSION_CODE = re.compile(r"nccl-library=(\d{5})\b")


def nccl_version_of(lines) -> str | None:
    """The first NCCL version named in ``lines`` (``"2.18.5"``; a version code 22809 as
    ``"2.28.9"``), not in prose (:func:`_stated`), or None."""
    for line in _stated(lines):
        m = _VERSION.search(line)
        if m:
            return m.group(1)
        m = _VERSION_CODE.search(line)
        if m:
            code = int(m.group(1))
            return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return None
