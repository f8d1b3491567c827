"""The machines people rent: cloud and DGX shapes as presets over the hardware families.

Each shape of ``shapes.toml`` (shipped with the package) names the family it
is built on (:func:`~topologies.hardware.dgx_a100`, ``dgx_h100``,
``dgx_b200``, ``gb200_nvl72``, ``dgx1_v100``), its GPU model, its network
transport (:mod:`topologies.transports`) and the figures that differ from the
family's, each with its source. :func:`shape_builder` turns a shape into a
builder whose keywords are the family's options with the shape's figures as
defaults, plus ``transport``. These figures come from the transport unless
the shape gives its own for its own transport (default ``nan``, -1 for a
count: "the transport's", :data:`FROM_TRANSPORT`): ``net_latency`` (the
latency the transport advertises to NCCL), ``nic_latency`` (the NIC - leaf
cable), ``net_conn_bandwidth`` and ``net_connections`` (the most one stream
of an NCCL connection carries, the streams per connection), ``nic_bandwidth``
(the transport's line rate; a transport whose rate is per shape, 0, leaves the
shape's), ``net_goodput`` (the payload share of the cables' rate) and
``net_devices_per_gpu`` (the most NICs a GPU drives; the transport's "all":
0); with another ``transport=`` they are that transport's (p4d's 75 us are
aws-ofi-nccl's on p4d, not InfiniBand's). Every NIC node and NIC cable
records the transport's name; the cables take its ``link_type``.

``nics_per_node`` may be lowered (NICs left out, as ``NCCL_IB_HCA`` does) to
an equal share of the GPUs (k NICs per GPU, or one NIC per k GPUs) but not
raised above the shape's count.

Examples
--------
>>> G = shape_builder("aws-p4d")(2)
>>> G.graph["name"], G.graph["transport"], G.graph["net_latency"]
('aws-p4d', 'efa-v1', 7.5e-05)
>>> G.nodes["n0/nic3"]["transport"], G.nodes["n1/gpu0"]["model"]
('efa-v1', 'A100')
>>> shape_builder("aws-p4d")(2, nics_per_node=8)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
topologies.schema.TopologyError: aws-p4d has 4 NICs per node: nics_per_node must be one of 1, 2, 4 (each of its 8 GPUs an equal share), got 8
>>> shape_builder("aws-p4d")(2, transport="ib-ndr").graph.get("net_latency", 0.0)
0.0
"""

from __future__ import annotations

import inspect
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

import networkx as nx

from ..schema import TopologyError, validate
from ..transports import apply_transport
from ..transports import transport as get_transport
from .hgx import dgx_a100, dgx_b200, dgx_h100
from .nvl72 import gb200_nvl72
from .v100 import dgx1_v100

__all__ = ["Shape", "SHAPES", "FAMILIES", "FAMILY_GPUS", "FROM_TRANSPORT", "shape_builder", "figure_rows"]

#: Family name -> builder the shapes are built on.
FAMILIES = {"dgx-a100": dgx_a100, "dgx-h100": dgx_h100, "dgx-b200": dgx_b200,
            "gb200-nvl72": gb200_nvl72, "dgx1-v100": dgx1_v100}

#: Family name -> GPUs per node (per host of gb200-nvl72), as its builder's graph says.
FAMILY_GPUS = {"dgx-a100": 8, "dgx-h100": 8, "dgx-b200": 8, "gb200-nvl72": 4, "dgx1-v100": 8}

#: Builder option -> the transport figure it defaults to when the shape gives none.
FROM_TRANSPORT = {"net_latency": "net_latency", "nic_latency": "hop_latency",
                  "net_conn_bandwidth": "conn_bandwidth", "net_connections": "connections",
                  "nic_bandwidth": "line_rate", "net_goodput": "goodput",
                  "net_devices_per_gpu": "devices_per_gpu"}

_META = ("title", "family", "gpu_model", "transport")


@dataclass(frozen=True)
class Shape:
    """One rented machine: family, GPU model, transport and its own figures (with sources)."""

    name: str
    title: str
    family: str
    gpu_model: str
    transport: str
    figures: dict        # option -> value
    sources: dict        # option or "gpu_model" / "transport" -> source

    @property
    def nics(self) -> int:
        return int(self.figures["nics_per_node"])


def _shape(name: str, raw: dict) -> Shape:
    family = raw["family"]
    if family not in FAMILIES:
        raise TopologyError(f"shape {name!r}: unknown family {family!r}")
    cells = {k: v for k, v in raw.items() if k != "title" and k != "family"}
    for key, cell in cells.items():
        if not isinstance(cell, dict) or "value" not in cell or not cell.get("source"):
            raise TopologyError(f"shape {name!r}: figure {key!r} needs a value and a source")
    get_transport(cells["transport"]["value"])
    return Shape(name=name, title=str(raw["title"]), family=family,
                 gpu_model=str(cells["gpu_model"]["value"]),
                 transport=str(cells["transport"]["value"]),
                 figures={k: c["value"] for k, c in cells.items() if k not in _META},
                 sources={k: str(c["source"]) for k, c in cells.items()})


def _load() -> dict:
    text = resources.files(__package__).joinpath("shapes.toml").read_text()
    return {name: _shape(name, raw) for name, raw in tomllib.loads(text).items()}


#: Shape name -> :class:`Shape`, in the table's order.
SHAPES: dict[str, Shape] = _load()


#: The default of a figure the transport gives (:data:`FROM_TRANSPORT`), by whether the family
#: takes it as an int: ``nan``, or -1 (below every allowed count).
_THE_TRANSPORTS = {False: math.nan, True: -1}


def _is_the_transports(value) -> bool:
    return (isinstance(value, float) and math.isnan(value)) or (type(value) is int and value == -1)


def _defaults(shape: Shape, own: bool = False) -> dict:
    """The builder's keyword defaults: the family's, the shape's figures over them, ``nan`` (-1 for
    an int) for the figures the transport gives (``own``: the shape's own figure for its own
    transport)."""
    family = inspect.signature(FAMILIES[shape.family]).parameters
    out = {"transport": shape.transport}
    for key, p in list(family.items())[1:]:
        default = p.default
        if key in FROM_TRANSPORT:
            default = _THE_TRANSPORTS[isinstance(p.default, int)]
        if key in shape.figures and (own or key not in FROM_TRANSPORT):
            value = shape.figures[key]
            default = float(value) if isinstance(p.default, float) else value
        out[key] = default
    return out


def _resolved(shape: Shape, t, options: dict) -> dict:
    """``options`` with each ``nan`` (int: -1) figure of :data:`FROM_TRANSPORT` resolved: the
    shape's own under its own transport, else transport ``t``'s (a line rate of 0, "per shape":
    the shape's own, else the family's; ``devices_per_gpu`` "all": 0); a figure the family takes
    as an int, as an int."""
    out = dict(options)
    family = inspect.signature(FAMILIES[shape.family]).parameters
    for key, figure in FROM_TRANSPORT.items():
        if key in out and _is_the_transports(out[key]):
            own = t.name == shape.transport and key in shape.figures
            value = float(shape.figures[key]) if own else _option_value(t, figure)
            if not value and figure == "line_rate":
                value = float(shape.figures.get(key, family[key].default))
            out[key] = value
        if isinstance(family[key].default, int) and isinstance(out[key], float) and out[key].is_integer():
            out[key] = int(out[key])
    return out


def _option_value(t, figure: str):
    """Transport ``t``'s ``figure`` as the preset option takes it (``devices_per_gpu`` "all": 0)."""
    return 0 if t.written(figure) == "all" else getattr(t, figure)


def _nic_counts(shape: Shape, gpus: int) -> list:
    """The NIC counts that leave each of ``gpus`` GPUs an equal share, up to the shape's."""
    return [k for k in range(1, shape.nics + 1) if gpus % k == 0 or k % gpus == 0]


def _check_nics(shape: Shape, nics: object) -> None:
    gpus = FAMILY_GPUS[shape.family]
    allowed = _nic_counts(shape, gpus)
    if isinstance(nics, bool) or not isinstance(nics, int) or nics not in allowed:
        raise TopologyError(f"{shape.name} has {shape.nics} NICs per node: nics_per_node must be one of "
                            f"{', '.join(map(str, allowed))} (each of its {gpus} GPUs an equal share), "
                            f"got {nics!r}")


def _build(shape: Shape, nodes, transport: str, options: dict) -> nx.DiGraph:
    t = get_transport(transport)
    _check_nics(shape, options["nics_per_node"])
    options = _resolved(shape, t, options)
    try:
        G = FAMILIES[shape.family](nodes, **options)
    except TopologyError as exc:
        if not str(exc).startswith("nics_per_node must be"):
            raise
        raise TopologyError(f"{shape.name} has {shape.nics} NICs per node, more than the "
                            f"{shape.family} builder allows ({exc}); give --topology-opt "
                            f"nics_per_node=N with fewer") from None
    built = ""
    for _, d in G.nodes(data=True):
        if d.get("kind") == "gpu":
            built, d["model"] = d["model"], shape.gpu_model
    apply_transport(G, t)
    text = G.graph.get("description", "").replace(f" {built} ", f" {shape.gpu_model} ")
    G.graph["name"] = shape.name
    G.graph["shape"] = shape.name
    G.graph["description"] = (f"{shape.title} ({shape.gpu_model}, {t.name}; built as "
                              f"{shape.family}): {text.split(': ', 1)[-1]}")
    return validate(G)


def shape_builder(name: str):
    """The builder of shape `name`: ``builder(nodes, *, transport=..., <family options>)``."""
    shape = SHAPES[name]
    defaults = _defaults(shape)
    family_first = next(iter(inspect.signature(FAMILIES[shape.family]).parameters.values()))

    def builder(nodes=family_first.default, **options):
        unknown = sorted(set(options) - set(defaults))
        if unknown:
            raise TopologyError(f"unknown option {unknown[0]!r} for topology {name!r}; "
                                f"allowed: {', '.join(defaults)}")
        merged = {**defaults, **options}
        transport = merged.pop("transport")
        return _build(shape, nodes, transport, merged)

    params = [inspect.Parameter("nodes", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=family_first.default)]
    params += [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
               for k, v in defaults.items()]
    builder.__signature__ = inspect.Signature(params)
    builder.__name__ = builder.__qualname__ = name.replace("-", "_")
    builder.__doc__ = f"{shape.title}, built as {shape.family} (figures: ``topologies --show {name}``)."
    return builder


def figure_rows(name: str) -> list:
    """(option, default, source) of every ``--topology-opt`` key of shape `name`, in the
    builder's order: the shape's own figures, the transport's, then the family's."""
    shape = SHAPES[name]
    t = get_transport(shape.transport)
    rows = [("gpu_model", shape.gpu_model, shape.sources["gpu_model"])]
    for key, default in _defaults(shape, own=True).items():
        if key in shape.sources:
            rows.append((key, default, shape.sources[key]))
        elif key in FROM_TRANSPORT:
            figure = FROM_TRANSPORT[key]
            all_ = " (0: all)" if t.written(figure) == "all" else ""
            rows.append((key, _option_value(t, figure), f"from transport {t.name}{all_}: {t.source(figure)}"))
        else:
            rows.append((key, default, f"as the {shape.family} preset (its docstring)"))
    return rows
