"""Parameter sweeps: a TOML grid of runs, executed in parallel, collected in one tidy table.

``simcollective sweep CONFIG.toml [--out results.csv] [--workers N] [--scheduler ADDRESS]``

The configuration file is data (read with :mod:`tomllib`, validated, never executed)::

    name = "smoke"                       # optional
    description = "a tiny end-to-end check"

    [fixed]                              # the same for every point
    topology = "abci"
    profile = "ideal"

    [grid]                               # lists: the sweep is their cartesian product
    nodes = [1, 2]
    algorithm = ["ring", "ring-ring"]
    elements = ["64K", "1M"]             # sizes accept K/M/G suffixes

Several ``[[grid]]`` blocks (an array of tables) make a sweep the union of their products,
each block combined with ``[fixed]``. Keys are the fields of one ``simcollective run``, named
as in :data:`INPUT_KEYS` (``-`` and ``_`` are interchangeable); ``density`` accepts ``"1/128"``;
``topology_opts`` is a table (``{oversubscription = 3}``) or ``"key=value,..."``;
``nodes = "auto"`` means ``ceil(gpus / gpus_per_node)`` of the topology. An unknown key
is an error that names it and lists the allowed ones. ``collective`` (default allreduce),
``root`` and ``bytes`` (the nccl-tests size, instead of ``elements``) are those of
``simcollective run``; in a grid, ``elements``, ``bytes`` and ``gpus`` also accept a range
``{from = "8", to = "128M", factor = 2}`` (or ``step = N``), ``to`` included when reached.
The ``bytes`` column of a row holds the size that was run (nccl-tests rounds per-rank
shares down to 16 bytes).
``collective = "alltoallv"`` takes ``moe`` (a gate string, as ``run --moe``; checked when the
config is read) or ``sizes`` (a matrix file, relative to the config) instead of a size: a grid
over gate strings varies skew or top-k; the gate's figures become ``moe_<key>`` columns.

Inputs that do not apply to a point's algorithm are not passed to it (``density``, ``k``,
``workload``, ``overlap``, ``inputs`` for dense algorithms; ``group_size``, ``chunk_size``,
``allgather``, ``densify``, ``resparsify``, ``protocol``, ``channels``: every algorithm option of
the registry, for algorithms that do not declare them): the
row keeps the grid value, and its ``ignored`` column names them. Points that are the same
run once this is applied are simulated once.

The table has one row per point: ``key`` (a hash of the point's inputs), every input
column, ``ok``, ``error``, ``ignored``, then every key of ``run --json``: ``phases`` is
flattened into ``phase_<name>`` columns, ``bytes_by_link_type`` into ``bytes_<type>``,
``options`` and ``top_links`` are JSON strings; run keys that repeat an input are not
repeated (``algorithm, topology, nodes, elements, seed, workload, placement``) except
those the run resolves, which become ``out_density, out_k, out_dtype, out_profile``,
``out_routing, out_timing, out_study`` (``study = true`` resolves routing and timing to
``study``). ``collective``, ``timing`` and ``study`` left unset are not part of a point's key.
``wall_s`` (host seconds) is the only column that depends on the machine or executor.
The algorithm options outside the table's fixed columns (:data:`~.config.WHEN_SET_OPTIONS`:
``protocol``, ``channels``) are columns only when a point sets them or a run reports them
(NCCL's algorithms report the protocol and channels they ran): a sweep that sets neither has
the same columns and point keys as one that cannot set them.

The package: :mod:`.config` (keys, values, the configuration file), :mod:`.grid` (points and
their keys), :mod:`.points` (one point: its run configuration and row), :mod:`.table` (the
results table and its journal), :mod:`.execution` (workers, Dask, resume, the lock) and
:mod:`.command` (``simcollective sweep``).
"""

from .command import add_parser, cmd_sweep
from .config import DEFAULTS, INPUT_KEYS, load_config
from .execution import run_sweep
from .grid import expand_grid, grid_size, point_key
from .points import run_point
from .table import read_results, write_results

__all__ = [
    "INPUT_KEYS", "DEFAULTS", "load_config", "expand_grid", "point_key", "run_point", "run_sweep",
    "read_results", "write_results", "add_parser", "cmd_sweep", "grid_size",
]
