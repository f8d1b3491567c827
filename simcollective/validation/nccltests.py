"""Reading nccl-tests output (the tables its ``*_perf`` binaries print).

Formats understood, one or several result tables per file:

* current (about 2021 on): ``size count type redop root | time algbw busbw #wrong | time
  algbw busbw #wrong`` (out-of-place, then in-place);
* old (before about 2020): the same without ``root``, the last column of each block the
  maximum relative ``error``;
* busbw-only summaries (Azure AI-benchmarking-guide): ``size-label in-place-busbw`` with
  binary size labels such as ``65K`` or ``1G`` (the nearest power of two).

The collective comes from the binary name in the text (``all_reduce_perf``, ``# Collective
test starting: ...``); the rank count from the ``# Using devices`` lines, else from
busbw/algbw (allreduce: 2(n-1)/n); GPUs per process from the ``nGpus`` header or ``-g N``.

NCCL environment settings the run stated (``Table.settings``: ``NCCL_X=V`` in a command,
an ``-x``/``export``/``env`` line or a section title, or NCCL's own ``NCCL_X set by
environment to V`` lines) are read per table: the file's preamble (the lines before its
first section title, or before its first result row when it has no titles) applies to every
table, and a table's own text (from the end of the previous table to its first row: its
section title, command and header lines) to that table only. Lines under a ``notes:`` or
``NOTE:`` key (and their indented continuations) are prose about other runs and are not read.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..errors import UserInputError

__all__ = ["Row", "Table", "parse_log", "BUS_FACTOR", "DTYPES"]

#: nccl-tests type name -> NumPy dtype name (those the simulator runs)
DTYPES = {"float": "float32", "half": "float16", "double": "float64", "int32": "int32", "int": "int32",
          "float32": "float32", "float16": "float16", "float64": "float64"}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
               "gather", "scatter", "hypercube")


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


def _parse_row(tokens: list):
    """(format, Row) or None when the line is not a result row."""
    n = len(tokens)
    if n == 2:
        size = _label_size(tokens[0])
        bw = _num(tokens[1])
        if size is None or bw is None:
            return None
        return "busbw-only", Row(size, None, None, None, None, None, None, None, bw)
    if n < 12 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    has_root = n >= 13 and re.fullmatch(r"-?\d+", tokens[4]) is not None and _num(tokens[5]) is not None \
        and n in (13, 21)
    base = 5 if has_root else 4
    vals = tokens[base:]
    width = len(vals) // 2
    if len(vals) % 2 or width not in (4, 8):
        return None
    oop, ip = vals[:width], vals[width:]
    t, a, b = (_num(v) for v in oop[:3])
    ti, ai, bi = (_num(v) for v in ip[:3])
    if None in (t, a, b, ti, ai, bi):
        return None
    return ("current" if has_root else "old"), Row(int(tokens[0]), int(tokens[1]), tokens[2], t, a, b, ti, ai, bi)


def parse_log(text: str, where: str = "log") -> list:
    """The result tables of an nccl-tests output; a one-line error if there is none."""
    collective, gpp = _binary(text)
    tables: list = []
    header: list = []   # comment lines before the first result row
    pending: list = []  # lines (not result rows) since the last result row
    preamble: list | None = None  # lines before the first section title
    current: Table | None = None
    devices = 0
    title = ""
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("#") and re.match(r"#\s*-{2,}\s*\S", s) and preamble is None and not tables:
            preamble = list(pending)
            pending = []
        if s.startswith("#"):
            pending.append(line)
            if not tables:
                header.append(s)
            if re.match(r"#\s+Rank\s+\d+", s):
                devices += 1
            if "Avg bus bandwidth" in s and current is not None:
                current = None
            sec = re.match(r"#\s*-{2,}\s*(.*?)\s*-*$", s)
            if sec and sec.group(1):
                title = sec.group(1)
                current = None
            continue
        parsed = _parse_row(s.split())
        if parsed is None:
            pending.append(line)
            continue
        fmt, row = parsed
        if current is None or current.format != fmt or (current.rows and row.size <= current.rows[-1].size):
            current = Table(collective or "", fmt, title=title, gpus_per_process=gpp)
            if preamble is None:          # no section titles: the first table's text is the preamble
                preamble = list(pending)
                pending = []
            current.settings = {**settings_of(preamble), **settings_of(pending), **settings_of([title])}
            tables.append(current)
        pending = []
        current.rows.append(row)
    if not tables:
        raise UserInputError(f"{where}: not nccl-tests output (no result rows of the form "
                             "'size count type redop [root] time algbw busbw ...')")
    _complete_tables(tables, header, devices, where)
    return tables


def _binary(text: str) -> tuple:
    """``(collective, GPUs per process)``: the binary named in the text (``all_reduce_perf``,
    ``-t all_gather``) and ``nGpus``/``-g`` (-1: ``-g <nGPUs>``, one process drives every GPU)."""
    binaries = re.findall(r"\b([a-z_]+)_perf\b", text)
    collective = None
    binaries += re.findall(r"\s-t\s+([a-z_]+)\b", text)  # run_nccl_tests.sh -t all_gather
    for b in binaries:
        if b in COLLECTIVES:
            collective = b
            break
    gpp = None
    m = re.search(r"nGpus\s+(\d+)", text) or re.search(r"\s-g\s+(\d+)\b", text)
    if m:
        gpp = int(m.group(1))
    elif re.search(r"\s-g\s+<", text):  # "-g <nGPUs>": one process drives every GPU
        gpp = -1
    return collective, gpp


def _complete_tables(tables: list, header: list, devices: int, where: str) -> None:
    """Each table's forced algorithm, collective (guessed when the text names none) and ranks."""
    forced = _forced(" ".join(header))
    for t in tables:
        algo = t.settings.get("NCCL_ALGO")
        t.forced_algorithm = (_forced(f"NCCL_ALGO={algo}") if algo is not None else None) \
            or _forced(t.title) or forced
        if not t.collective:
            t.collective = _guess_collective(t, where)
        if devices and len(tables) == 1:
            t.nranks = devices
        elif t.collective == "all_reduce":
            t.nranks = _ranks_from_ratio(t)
        elif t.collective in PER_RANK_COLLECTIVES:
            t.nranks = _ranks_from_count(t)


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


_SETTING = re.compile(r"\b(NCCL_[A-Z0-9_]+)=(\"[^\"]*\"|'[^']*'|[^\s;)]+)")
_SET_BY_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set by environment to (\S+)")
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9 _()/-]{0,40}?)\s*:\s")
#: keys whose lines (and indented continuations) are prose, not the run's settings
_PROSE_KEYS = ("note", "notes")


def settings_of(lines) -> dict:
    """``{NCCL_X: value}`` stated in ``lines`` (see the module docstring); placeholders such as
    ``NCCL_ALGO=<algo>`` or ``$VAR`` are not settings."""
    out: dict = {}
    key = None
    for line in lines:
        body = line.strip()
        body = body[1:] if body.startswith("#") else body
        m = _KEY.match(body)
        if m:
            key = m.group(1).strip().lower()
        elif not (body[:1].isspace() and len(body) - len(body.lstrip()) > 2):
            key = None                       # a line of its own, not a continuation
        if key is not None and key.split()[0] in _PROSE_KEYS:
            continue
        for name, value in _SETTING.findall(body) + _SET_BY_ENV.findall(body):
            value = value.strip("\"'").rstrip(",.")
            if value and value[0] not in "<$":
                out[name] = value
    return out


def _forced(text: str) -> str | None:
    m = re.search(r"NCCL_ALGO=([A-Za-z]+)", text)
    return m.group(1).lower() if m else None


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


def _ranks_from_ratio(t: Table) -> int | None:
    best = None
    for r in t.rows:
        for a, b in ((r.algbw, r.busbw), (r.algbw_ip, r.busbw_ip)):
            if a and b and a >= 1.0 and (best is None or a > best[0]):
                best = (a, b)
    if best is None:
        return None
    ratio = best[1] / best[0]
    if ratio >= 1.999:
        return None
    return max(2, round(2 / (2 - ratio)))
