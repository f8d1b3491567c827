"""What defines one simulated collective (:class:`RunConfig`), the machine it runs on
(:func:`build_graph`) and what it measured (:class:`Report`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["SCHEMA_VERSION", "RunConfig", "Report", "build_graph", "run_defaults", "JSON_KEYS", "VERIFY_MODES", "ENGINES",
           "ROUTINGS", "routing_of",
           "DEFAULT_MEMORY_BUDGET"]

#: the version of the JSON and table schema (docs/schema.md): every ``--json`` output and
#: sweep row carries it; it goes up when a key is renamed, removed or changes unit or meaning
SCHEMA_VERSION = 1

JSON_KEYS = (
    "algorithm", "topology", "nodes", "ranks", "elements", "dtype", "bytes", "time_s", "algbw", "busbw",
    "verified", "verification", "phases", "messages", "wall_s",
)

DEFAULT_MEMORY_BUDGET = 2**30
#: values of ``verify`` (``--verify``)
VERIFY_MODES = ("auto", "full", "symbolic")
#: values of ``engine`` (``--engine``): the compiled path where it applies, or one of the two
ENGINES = ("auto", "compiled", "simpy")
#: values of ``routing`` (``--routing``): the machine's own policy, or one of the router's
#: (``network.routing.ROUTING_POLICIES``, spelled out here to keep the network out of startup)
ROUTINGS = ("auto", "first", "hash", "dest", "study")


@dataclass
class RunConfig:
    """Everything that defines one simulated collective (sizes in elements/bytes).

    ``elements`` is the count given to the collective (see the module docstring);
    ``bytes``, when set, replaces it: the count is derived from a size in bytes as
    nccl-tests does (:meth:`~simcollective.data.collectives.Collective.count_from_bytes`).
    ``root`` applies to broadcast and reduce only (default 0 there). ``sizes`` (a P x P
    matrix of bytes, or the path of one) or ``moe`` (a gate, :func:`~simcollective.data.moe.parse_moe`)
    give an alltoallv its sizes (without them it is uniform, as alltoall, of ``elements``
    per peer); ``moe`` runs the dispatch and then the combine.
    """

    topology: str = "abci"
    nodes: int = 1
    topology_opts: dict = field(default_factory=dict)
    topology_file: str | None = None
    algorithm: str = "ring"
    elements: int = 2**20
    gpus: int | None = None
    dtype: str = "float32"
    profile: str = "ideal"
    placement: str | list = "auto"                 # the graph's rank_order if any, else linear
    routing: str = "auto"                          # auto: the machine's (routing_of)
    seed: int = 1
    options: dict = field(default_factory=dict)     # user-set algorithm options
    density: float | None = None
    k: int | None = None
    workload: str = "uniform"
    overlap: float = 0.0
    inputs: str | None = None
    verify: str = "auto"                            # auto | full | symbolic
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    trace: bool = False
    collective: str = "allreduce"
    root: int | None = None
    bytes: int | None = None
    timing: str = "simultaneous"                    # simultaneous | study (barrier-exit offsets)
    study: bool = False                             # every behaviour of the study's simulator
    nccl_version: str | None = None                 # NCCL release X.Y[.Z] of the tuner; None: newest
    stragglers: dict = field(default_factory=dict)  # rank -> seconds it starts late (--straggler)
    sizes: object = None                            # alltoallv: P x P bytes (a matrix or a .npy/.csv/.json path)
    moe: object = None                              # alltoallv: a MoE gate ("tokens=...,hidden=...,topk=...")
    engine: str = "auto"                            # auto | compiled | simpy (see ENGINES)


    def __post_init__(self):
        # text as the CLI takes it: RunConfig(elements="32M", density="1/128", nodes="2")
        from .parsing import coerce_run_fields

        for key, value in coerce_run_fields(vars(self)).items():
            if value is not getattr(self, key):
                setattr(self, key, value)
        if self.engine not in ENGINES:
            from .errors import UserInputError

            raise UserInputError(f"--engine {self.engine!r} must be one of: {', '.join(ENGINES)}")


def run_defaults() -> dict:
    """``{field: default}`` of :class:`RunConfig`: the one source of the defaults of ``run``'s
    options, of sweep inputs (``sweeps.DEFAULTS``) and of the Python API."""
    import dataclasses

    return {f.name: getattr(RunConfig(), f.name) for f in dataclasses.fields(RunConfig)}


@dataclass(repr=False)
class Report:
    """The measurements of one run (``result`` holds the raw :class:`RunResult`)."""

    fields: dict
    result: object = None

    def __repr__(self) -> str:     # compact: the fields of a 64-rank run are half a megabyte
        f = self.fields
        return (f"<Report {f.get('algorithm')} on {f.get('topology')}: {f.get('ranks')} ranks, "
                f"{f.get('elements')} x {f.get('dtype')}, time_s={f.get('time_s')!r}>")

    def to_json(self) -> dict:
        """The fields as strict JSON data: a non-finite number (``algbw`` of a run that takes no
        time, e.g. one rank) becomes ``null`` and ``null_reasons`` says why."""
        out = {"schema_version": SCHEMA_VERSION, **self.fields}
        reasons = {}
        for key, value in out.items():
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = None
                reasons[key] = (f"{value} is not a number in JSON: time_s is {self.fields.get('time_s')} "
                                f"(a run of {self.fields.get('ranks')} rank(s) moves no data)"
                                if key in ("algbw", "busbw") else f"{value} is not a number in JSON")
        if reasons:
            out["null_reasons"] = reasons
        return out

    def __getitem__(self, key):
        return self.fields[key]


def load_topology_file(path):
    """A user topology file, read with the size and nesting limits of
    :mod:`simcollective.files` before NetworkX parses it."""
    import topologies

    from .files import check_nesting, check_xml_nesting, read_bytes, read_text

    where = f"--topology-file {str(path)!r}"
    if not str(path).lower().endswith(topologies.io.FORMATS):
        return topologies.load(path)          # its one-line error names the allowed extensions
    if str(path).lower().endswith(".graphml"):
        data = read_bytes(path, "--topology-file", "topology file")
        check_xml_nesting(data, where)
    else:                                     # node-link JSON
        data = read_text(path, "--topology-file", "topology file")
        check_nesting(data, where, "json")
    try:
        return topologies.load(path, data)
    except topologies.TopologyError as exc:          # its message starts with the path
        raise topologies.TopologyError(f"--topology-file {exc}") from None


def routing_of(routing: str, graph) -> str:
    """The routing policy a run uses: ``routing``, or for ``auto`` the machine's own (the
    graph attribute ``routing``: on a hardware preset whose servers span several scalable
    units ``dest`` over InfiniBand and ``hash`` over Ethernet, see
    ``topologies.hardware.common.rails``; ``first`` on every other machine). An unknown
    value is a one-line error that lists the allowed ones."""
    from .errors import UserInputError

    if routing not in ROUTINGS:
        raise UserInputError(f"routing policy {routing!r} is not one of: {', '.join(ROUTINGS)}")
    if routing != "auto":
        return routing
    own = graph.graph.get("routing", "first")
    if own not in ROUTINGS[1:]:
        raise UserInputError(f"the machine's graph attribute routing {own!r} is not one of: {', '.join(ROUTINGS[1:])}")
    return own


def build_graph(config: RunConfig):
    """The hardware graph of a configuration (validated)."""
    import topologies

    if config.topology_file:
        return load_topology_file(config.topology_file)
    from .memory import check_machine_size

    if isinstance(config.nodes, int) and config.topology in topologies.PRESETS:
        check_machine_size(config.topology, config.nodes, dict(config.topology_opts or {}))
    return topologies.build(config.topology, config.nodes, dict(config.topology_opts or {}))

