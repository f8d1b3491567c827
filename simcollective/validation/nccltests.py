"""Reading nccl-tests output (the tables its ``*_perf`` binaries print).

Formats understood, one or several result tables per file:

* current (about 2021 on): ``size count type redop root | time algbw busbw #wrong | time
  algbw busbw #wrong`` (out-of-place, then in-place);
* old (before about 2020): the same without ``root``, the last column of each block the
  maximum relative ``error``;
* busbw-only summaries (Azure AI-benchmarking-guide): ``size-label in-place-busbw`` with
  binary size labels such as ``65K`` or ``1G`` (the nearest power of two).

Lines may carry a launcher's prefix, removed before reading: ``0: `` (Slurm ``srun -l``) or
``[1,0]<stdout>:`` (Open MPI ``mpirun --tag-output``).

Each table's collective comes from the binary named in its own text (the lines from the end
of the previous table to its first row: ``# Collective test starting: alltoall_perf``, a
command naming ``alltoall_perf`` or ``-t alltoall``; the previous run's closing ``# Collective
test concluded: X_perf`` line is that run's), else from its own closing line, else from the
first one the file names;
a table read as all_reduce, reduce_scatter or reduce whose op column says ``none`` (as the
collectives that do not reduce print it) is refused when picked (:attr:`Table.problem`). The rank count comes from the table's ``# Rank N`` lines, else from
busbw/algbw (allreduce: 2(n-1)/n) or printed size / count; GPUs per process from the
``nGpus`` header or ``-g N``.

Rows that cannot be simulated are dropped and listed (:attr:`Table.dropped`, with the line
number and the reason): size 0, a negative size, nan or inf in a time or bandwidth column, a
row cut short (size, count and type, then fewer columns than a result row has).

NCCL environment settings the run stated (``Table.settings``: ``NCCL_X=V`` in a command,
an ``-x``/``export``/``env`` line or a section title, or NCCL's own ``NCCL_X set by
environment to V`` lines) are read per table: the file's preamble (the lines before its
first section title, or before its first result row when it has no titles) applies to every
table but those that start a run of their own (an nccl-tests ``# nThread N nGpus N`` header
or ``# Collective test starting`` line in their own text: the outputs of several runs pasted
into one file; without section titles, also a table after a run's closing ``# Avg bus
bandwidth`` line or stating its own NCCL version: annotated logs pasted one after the other),
and a table's own text (its section title, command and header lines) to that table only.
Lines under a ``notes:`` or ``NOTE:`` key (and their indented continuations) are prose about
other runs and are not read.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..errors import UserInputError
from .logtext import FileNames, binary_of, concluded, forced_algorithm, ranks_from_ratio, strip_launcher
from .settings import nccl_version_of, settings_of

__all__ = ["Row", "Table", "parse_log", "parse_lines", "MAX_TABLES", "MAX_ROWS", "MAX_ALL_ROWS", "strip_launcher",
           "BUS_FACTOR", "DTYPES", "STAND_INS"]

#: nccl-tests types simulated with data of another type of the same width (as ``bench -d``)
STAND_INS = {"bfloat16": "float16", "uint32": "int32", "int64": "float64", "uint64": "float64"}
#: nccl-tests type name -> NumPy dtype name the simulator runs (its own, or a stand-in)
DTYPES = {"float": "float32", "half": "float16", "double": "float64", "int32": "int32", "int": "int32",
          "float32": "float32", "float16": "float16", "float64": "float64", **STAND_INS}


def BUS_FACTOR(collective: str, n: int) -> float:
    """nccl-tests' busbw / algbw factor."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


@dataclass
class Row:
    size: int                    # bytes, as printed
    count: int | None
    dtype: str | None            # nccl-tests type name
    time_us: float | None        # out-of-place
    algbw: float | None
    busbw: float | None
    time_ip_us: float | None     # in-place
    algbw_ip: float | None
    busbw_ip: float | None
    redop: str | None = None     # the op column (sum, max, none, ...), None for busbw-only rows


@dataclass
class Table:
    collective: str
    format: str                  # "current", "old" or "busbw-only"
    rows: list = field(default_factory=list)
    nranks: int | None = None
    gpus_per_process: int | None = None
    title: str = ""
    forced_algorithm: str | None = None   # NCCL_ALGO=X named in the table's title or the file's header
    #: NCCL environment settings stated for this table (name -> value as written), in order read
    settings: dict = field(default_factory=dict)
    #: rows of the log not read: ``{"line", "size", "reason", "text"}`` (see the module docstring)
    dropped: list = field(default_factory=list)
    #: why this table cannot be compared (its op column contradicts its collective), or None
    problem: str | None = None
    #: ``# Rank N`` lines in this table's own text (0: none)
    run_devices: int = 0
    #: the rank count the columns imply (busbw/algbw, or size/count), None when they do not
    ranks_by_columns: int | None = None
    #: the NCCL version the table's own text (else the file's header) names, as written, or None
    nccl_version: str | None = None

    @property
    def redops(self) -> set:
        """The op column's values (``{"sum"}``, ``{"none"}``, ...; empty for busbw-only tables)."""
        return {r.redop for r in self.rows if r.redop}

    @property
    def dtype(self) -> str | None:
        types = {r.dtype for r in self.rows if r.dtype}
        return types.pop() if len(types) == 1 else None


_SIZE_LABEL = re.compile(r"^(\d+(?:\.\d+)?)([KMGT])$")
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _label_size(label: str) -> int | None:
    m = _SIZE_LABEL.match(label)
    if not m:
        return int(label) if label.isdigit() else None
    approx = float(m.group(1)) * _UNITS[m.group(2)]
    return 1 << round(math.log2(approx))


def _num(tok: str) -> float | None:
    try:
        v = float(tok)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _is_num(tok: str) -> bool:
    """A number as printed, nan and inf included."""
    try:
        float(tok)
    except ValueError:
        return False
    return True


_INT = re.compile(r"-?\d+")
_TYPE = re.compile(r"[a-z][a-z0-9_]*")       # an nccl-tests type name: a result row's third column


def _parse_row(tokens: list):
    """(format, Row), ``("dropped", reason, size)`` for a result row that cannot be simulated,
    or None when the line is not a result row."""
    n = len(tokens)
    if n == 2:
        size = _label_size(tokens[0])
        if size is None or not _is_num(tokens[1]):
            return None
        bw = _num(tokens[1])
        if bw is None:
            return "dropped", f"busbw {tokens[1]}", size
        if size == 0:
            return "dropped", "size 0: nothing to simulate", 0
        return "busbw-only", Row(size, None, None, None, None, None, None, None, bw)
    if n < 12 or not _INT.fullmatch(tokens[0]) or not _INT.fullmatch(tokens[1]):
        if 3 <= n < 12 and _INT.fullmatch(tokens[0]) and _INT.fullmatch(tokens[1]) and _TYPE.fullmatch(tokens[2]):
            return "dropped", "incomplete row: fewer columns than a result row (a cut line?)", int(tokens[0])
        return None
    has_root = n >= 13 and _INT.fullmatch(tokens[4]) is not None and _is_num(tokens[5]) and n in (13, 21)
    base = 5 if has_root else 4
    vals = tokens[base:]
    width = len(vals) // 2
    if len(vals) % 2 or width not in (4, 8):
        return None
    oop, ip = vals[:width], vals[width:]
    if not all(_is_num(v) for v in oop[:3] + ip[:3]):
        return None
    t, a, b = (_num(v) for v in oop[:3])
    ti, ai, bi = (_num(v) for v in ip[:3])
    size = int(tokens[0])
    bad = [v for v in oop[:3] + ip[:3] if _num(v) is None]
    if size < 0 or int(tokens[1]) < 0:
        return "dropped", "negative size or count", size
    if bad:
        return "dropped", f"{', '.join(sorted(set(bad)))} in the time/algbw/busbw columns", size
    if size == 0:
        return "dropped", "size 0: nothing to simulate", 0
    fmt = "current" if has_root else "old"
    return fmt, Row(size, int(tokens[1]), tokens[2], t, a, b, ti, ai, bi, tokens[3])


#: an nccl-tests run's own header: the outputs of several runs pasted into one file
_RUN_START = re.compile(r"^#\s*(?:nThread\s+\d+\s+nGpus|Collective test starting)")


class _Reader:
    """The state of one pass over a log's lines (see :func:`parse_log`)."""

    def __init__(self):
        self.names = FileNames()
        self.rows = 0             # result rows read, every table's
        self._preamble_settings = None    # the preamble's settings and NCCL version, read once
        self._preamble_version = ...
        self.tables: list = []
        self.header: list = []    # comment lines before the first result row
        self.pending: list = []   # lines (not result rows) since the last result row
        self.preamble: list | None = None  # lines before the first section title
        self.current: Table | None = None
        self.devices = 0
        self.title = ""
        self.drops: list = []     # dropped rows waiting for their table
        self.titled = self.closed = False  # preamble ends at a title; "Avg bus bandwidth" since the last table

    def comment(self, line: str, s: str) -> None:
        if re.match(r"#\s*-{2,}\s*\S", s) and self.preamble is None and not self.tables:
            self.preamble = list(self.pending)
            self.pending = []
            self.titled = True
        self.pending.append(line)
        if not self.tables:
            self.header.append(s)
        if re.match(r"#\s+Rank\s+\d+", s):
            self.devices += 1
        closing = concluded(s)
        if closing is not None and self.tables and not self.tables[-1].collective:
            self.tables[-1].collective = closing      # the run it closes named no binary before
        if "Avg bus bandwidth" in s and self.current is not None:
            self.current, self.closed = None, True
        if _RUN_START.match(s):
            self.current = None          # another run starts: its rows, dropped ones too, are its own
        sec = re.match(r"#\s*-{2,}\s*(.*?)\s*-*$", s)
        if sec and sec.group(1):
            self.title = sec.group(1)
            self.current = None

    def row(self, fmt: str, row: Row) -> None:
        cur = self.current
        if cur is None or cur.format != fmt or (cur.rows and row.size <= cur.rows[-1].size):
            cur = self.current = self._table(fmt)
            self.tables.append(cur)
        cur.dropped += self.drops
        self.drops = []
        self.pending = []
        cur.rows.append(row)

    def drop(self, lineno: int, s: str, reason: str, size) -> None:
        d = {"line": lineno, "size": size, "reason": reason, "text": " ".join(s.split())}
        (self.current.dropped if self.current is not None else self.drops).append(d)

    def _table(self, fmt: str) -> Table:
        """A new table; its own text is the lines since the previous table's last row."""
        own = self.pending
        if self.preamble is None:          # no section titles: the first table's text is the preamble
            self.preamble = list(own)
            own = self.pending = []
        new_run = bool(self.tables) and (any(_RUN_START.match(x.strip()) for x in own) or (
            not self.titled and (self.closed or nccl_version_of(own) is not None)))
        self.closed = False
        collective, gpp = binary_of("\n".join(own))
        # the file's binary and -g, for a table whose own text names none, are known at the end
        t = Table(collective or "", fmt, title=self.title, gpus_per_process=gpp if new_run else None)
        if self._preamble_settings is None:        # the preamble is fixed once read: scanned once
            self._preamble_settings = settings_of(self.preamble)
            self._preamble_version = nccl_version_of(self.preamble)
        inherited = {} if new_run else self._preamble_settings
        t.settings = {**inherited, **settings_of(own), **settings_of([self.title])}
        t.run_devices = sum(1 for x in own if re.match(r"#\s+Rank\s+\d+", x.strip()))
        t.nccl_version = nccl_version_of(own + [self.title]) or (None if new_run else self._preamble_version)
        algo = t.settings.get("NCCL_ALGO")
        t.forced_algorithm = (forced_algorithm(f"NCCL_ALGO={algo}") if algo is not None else None) \
            or forced_algorithm(t.title) or (None if new_run else forced_algorithm(" ".join(self.header)))
        return t


#: most tables in a log, rows in a table, rows in all (nccl-tests prints a few of ~30 rows)
MAX_TABLES, MAX_ROWS, MAX_ALL_ROWS = 1000, 10_000, 100_000


def parse_log(text: str, where: str = "log") -> list:
    """The result tables of an nccl-tests output; a one-line error if there is none."""
    return parse_lines(text.splitlines(), where)


def parse_lines(lines, where: str = "log") -> list:
    """The result tables of the lines of an nccl-tests output (any iterable: a file is read
    as a stream, one line at a time); one-line errors if there is none, or more than
    :data:`MAX_TABLES` tables or :data:`MAX_ROWS` rows in one, refused when the first too
    many is read."""
    r = _Reader()
    for lineno, raw in enumerate(lines, 1):
        line = strip_launcher(raw.lstrip("\ufeff") if lineno == 1 else raw)   # a BOM (Windows "UTF-8 with BOM")
        if "_perf" in line or "-t" in line or "-g" in line or "nGpus" in line:
            r.names.scan(line)
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            r.comment(line, s)
            continue
        parsed = _parse_row(s.split()) if s[0] in _ROW_START else None
        if parsed is None:
            r.pending.append(line)
        elif parsed[0] == "dropped":
            r.drop(lineno, s, parsed[1], parsed[2])
        else:
            r.row(*parsed)
            r.rows += 1
            _check_counts(r, lineno, where)
    if not r.tables:
        dropped = f" ({len(r.drops)} row(s) dropped: {r.drops[0]['reason']}, ...)" if r.drops else ""
        raise UserInputError(f"{where}: not nccl-tests output (no result rows of the form "
                             f"'size count type redop [root] time algbw busbw ...'){dropped}")
    r.tables[-1].dropped += r.drops
    collective, gpp = r.names.found()
    for t in r.tables:
        t.collective = t.collective or collective or ""
        t.gpus_per_process = gpp if t.gpus_per_process is None else t.gpus_per_process
    _complete_tables(r.tables, r.devices, where)
    return r.tables


#: the first character of a result row (a size, or a launcher-free busbw-only label); other lines are text
_ROW_START = frozenset("-0123456789")


def _check_counts(r, lineno: int, where: str) -> None:
    if len(r.tables) > MAX_TABLES:
        raise UserInputError(f"{where}: more than {MAX_TABLES} result tables (line {lineno}); nccl-tests "
                             "prints one per run: split the file")
    if len(r.tables[-1].rows) > MAX_ROWS or r.rows > MAX_ALL_ROWS:
        many = f"a result table of more than {MAX_ROWS}" if r.rows <= MAX_ALL_ROWS else f"more than {MAX_ALL_ROWS}"
        raise UserInputError(f"{where}: {many} rows (line {lineno}); nccl-tests prints about 30 a table: "
                             "split the file")


def _complete_tables(tables: list, devices: int, where: str) -> None:
    """Each table's collective (guessed when the text names none), its agreement with the op
    column, and its ranks."""
    for i, t in enumerate(tables):
        if not t.collective:
            t.collective = _guess_collective(t, where)
        t.problem = _op_problem(t, where, i + 1 if len(tables) > 1 else None)
        if t.collective == "all_reduce":
            t.ranks_by_columns = ranks_from_ratio(t)
        elif t.collective in PER_RANK_COLLECTIVES:
            t.ranks_by_columns = _ranks_from_count(t)
        t.nranks = t.run_devices or (devices if len(tables) == 1 else 0) or t.ranks_by_columns


#: collectives whose op column is a reduction (nccl-tests prints ``none`` for those that do not reduce)
REDUCING = ("all_reduce", "reduce_scatter", "reduce")


def _op_problem(t: Table, where: str, section) -> str | None:
    """One line when the table's op column says ``none`` under a reducing collective, else None."""
    ops = t.redops
    if not (t.collective in REDUCING and "none" in ops):
        return None
    sec = f" section {section}" if section else ""
    return (f"{where}{sec}: the op column says {', '.join(sorted(ops))} but the collective read is "
            f"{t.collective}_perf; name the section's binary in the file (e.g. "
            "'# Collective test starting: alltoall_perf')")


#: collectives whose printed size is ranks x count x element size
PER_RANK_COLLECTIVES = ("all_gather", "reduce_scatter", "alltoall", "gather", "scatter")


def _ranks_from_count(t: Table) -> int | None:
    """Ranks of a per-rank collective's table: printed size / (count x element size), the
    same on every row (else unknown)."""
    import numpy as np

    found = set()
    for r in t.rows:
        if not r.count or r.dtype not in DTYPES:
            continue
        item = np.dtype(DTYPES[r.dtype]).itemsize
        if r.size % (r.count * item):
            return None
        found.add(r.size // (r.count * item))
    return found.pop() if len(found) == 1 else None


def _guess_collective(t: Table, where: str) -> str:
    if t.format == "busbw-only":
        raise UserInputError(f"{where}: a busbw-only table does not say which collective it measured "
                             "(no '*_perf' name in the file)")
    r = max(t.rows, key=lambda r: r.size)
    if r.count and r.dtype in DTYPES:
        import numpy as np

        item = np.dtype(DTYPES[r.dtype]).itemsize
        if r.size != r.count * item:
            raise UserInputError(f"{where}: size is not count x element size: an all_gather/reduce_scatter-like "
                                 "log without its binary name; name it in the file (e.g. '# all_gather_perf')")
    if r.algbw and r.busbw and r.busbw / r.algbw > 1.05:
        return "all_reduce"
    raise UserInputError(f"{where}: cannot tell which collective this log measured (busbw = algbw: "
                         "broadcast, reduce or sendrecv); name the binary in the file (e.g. '# reduce_perf')")
