"""What the text of an nccl-tests log names, beside its result rows: the binary (``*_perf``,
``-t NAME``, a run's closing line), GPUs per process (``nGpus``, ``-g``), a forced
``NCCL_ALGO``, the rank count an allreduce table's busbw/algbw implies, and a launcher's line
prefix (read by :mod:`.nccltests`)."""

from __future__ import annotations

import re

__all__ = ["COLLECTIVES", "FileNames", "binary_of", "concluded", "forced_algorithm", "ranks_from_ratio",
           "strip_launcher"]

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
               "gather", "scatter", "hypercube")


class FileNames:
    """The binary (``*_perf``, else ``-t NAME``) and GPUs per process (``nGpus N``, else ``-g
    N``, else ``-g <nGPUs>``: -1) that a whole file names first, read line by line (see
    :func:`binary_of`)."""

    def __init__(self):
        self.perf = self.t = self.ngpus = self.g = None
        self.g_all = False

    def scan(self, line: str) -> None:
        if "_perf" in line and self.perf is None:
            self.perf = next((b for b in re.findall(r"\b([a-z_]+)_perf\b", line) if b in COLLECTIVES), None)
        if "-t" in line and self.t is None:
            self.t = next((b for b in re.findall(r"\s-t\s+([a-z_]+)\b", " " + line) if b in COLLECTIVES), None)
        if "nGpus" in line and self.ngpus is None:
            m = re.search(r"nGpus\s+(\d+)", line)
            self.ngpus = int(m.group(1)) if m else None
        if "-g" in line and self.g is None:
            m = re.search(r"\s-g\s+(\d+)\b", " " + line)
            self.g = int(m.group(1)) if m else None
            self.g_all = self.g_all or bool(re.search(r"\s-g\s+<", " " + line))

    def found(self) -> tuple:
        gpp = self.ngpus if self.ngpus is not None else self.g if self.g is not None else (-1 if self.g_all else None)
        return self.perf or self.t, gpp


_CONCLUDED = re.compile(r"#\s*Collective test concluded:\s*([a-z_]+)_perf\b")


def concluded(line: str) -> str | None:
    """The collective a run's closing line names (``# Collective test concluded: alltoall_perf``:
    ``"alltoall"``), or None for any other line."""
    m = _CONCLUDED.search(line) if "concluded" in line else None
    return m.group(1) if m and m.group(1) in COLLECTIVES else None


def binary_of(text: str) -> tuple:
    """``(collective, GPUs per process)``: the binary named in the text (``all_reduce_perf``,
    ``-t all_gather``; not a previous run's closing line, :func:`concluded`) and ``nGpus``/``-g``
    (-1: ``-g <nGPUs>``, one process drives every GPU)."""
    if "concluded" in text:
        text = "\n".join(ln for ln in text.splitlines() if concluded(ln) is None)
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


def forced_algorithm(text: str) -> str | None:
    """``NCCL_ALGO=X`` named in ``text``, lower case (``ring``), or None."""
    m = re.search(r"NCCL_ALGO=([A-Za-z]+)", text)
    return m.group(1).lower() if m else None


def ranks_from_ratio(t) -> int | None:
    """The ranks an allreduce table's busbw / algbw implies (2(n-1)/n), or None."""
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


#: a launcher's line prefix: ``0: `` (srun -l) or ``[1,0]<stdout>:`` (mpirun --tag-output)
_LAUNCHER = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:(?=\s|$))\s?")


def strip_launcher(line: str) -> str:
    """``line`` without a launcher's prefix: ``0: `` (``srun -l``) or ``[1,0]<stdout>:``
    (``mpirun --tag-output``)."""
    head = line.lstrip()[:24]
    if ":" not in head or head[:1] not in _LAUNCHER_START:       # most lines: no regex
        return line
    return _LAUNCHER.sub("", line, count=1)


_LAUNCHER_START = frozenset("[0123456789")
