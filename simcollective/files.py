"""Every user file read and every output path written goes through here (public; the parsers
of :mod:`simcollective.parsing` re-export it).

Reading: the size is checked with ``stat`` before a byte is read (and reading stops one byte
past the limit, for pipes and devices), the text must be UTF-8, and JSON, TOML and XML are
checked for nesting depth before they are parsed, by scans that do not recurse themselves.
Every failure is one line naming the option, the file and the limit.

Limits, chosen far above real files:

=================================  ===========  =====================================
kind                                limit        a real file
=================================  ===========  =====================================
topology file (.json, .graphml)     64 MiB       ~330 bytes per GPU: 64 MiB ~ 200k GPUs
nccl-tests log (streamed)           128 MiB      a few hundred KiB (NCCL_DEBUG=INFO: MBs)
run JSON (``--utilization-from``)   64 MiB       ~150 bytes per link
placement file                      64 MiB       ~20 bytes per rank
sweep config, profile (TOML)        1 MiB        a few KiB
results table, sweep journal        1 GiB        ~1 KiB per point
nesting (JSON, TOML, XML)           64 levels    a few levels
a line of a streamed file           64 KiB       ~100 bytes
=================================  ===========  =====================================

A file that may be large (an nccl-tests log) is streamed: :func:`iter_lines` reads one line at
a time, so its memory is what the reader keeps, not the file; a line longer than
:data:`MAX_LINE` (a binary or sparse file has no newlines) is refused when it is read.

Writing: :func:`check_output_path` follows symlinks (a dangling one must point into an
existing, writable directory) before any work; :func:`writing` turns an operating-system
error while writing (disk full, read-only file system, permission) into one line naming
the path and the error.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import re
import stat
import tempfile
from pathlib import Path

from .errors import OutputError, UserInputError
from .units import format_bytes

__all__ = ["LIMITS", "MAX_NESTING", "MAX_LINE", "check_size", "read_bytes", "read_text", "iter_lines", "load_json", "load_toml", "check_nesting",
           "check_output_path", "resolve_output", "writing", "os_error"]

MiB = 2**20
#: the size limit of each kind of user file, in bytes (named in the error)
LIMITS = {
    "topology file": 64 * MiB,
    "nccl-tests log": 128 * MiB,    # streamed (iter_lines): about 2.5 s of CPU to read 128 MiB
    "run JSON": 64 * MiB,
    "placement file": 64 * MiB,
    "sizes file": 256 * MiB,    # alltoallv's P x P matrix: 4096 ranks of 8-byte entries are 128 MiB
    "sweep config": 1 * MiB,
    "profile file": 1 * MiB,
    "results table": 1024 * MiB,
    "file": 64 * MiB,
}
#: the longest line of a streamed file, in bytes
MAX_LINE = 64 * 2**10
#: the deepest nesting of arrays/objects (JSON), arrays/inline tables/dotted keys (TOML) or
#: elements (XML) a user file may have
MAX_NESTING = 64


def _limit_text(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return format_bytes(n)


def os_error(exc: OSError) -> str:
    """``No space left on device (ENOSPC)``: the message and symbolic name of an OS error."""
    name = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or str(exc) or type(exc).__name__
    return f"{text} ({name})" if name else text


def check_size(path, what: str, kind: str = "file") -> None:
    """Refuse, from ``stat`` alone, a user file larger than ``LIMITS[kind]`` (or missing, or a
    directory), for readers that read the file themselves (pandas)."""
    limit = LIMITS[kind]
    shown = f"{what} {str(path)!r}"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserInputError(f"{shown} does not exist") from None
    except OSError as exc:
        raise UserInputError(f"{shown} cannot be read: {os_error(exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserInputError(f"{shown} is a directory; give a file")
    if st.st_size > limit:
        raise UserInputError(f"{shown}: {format_bytes(st.st_size)} is over the {_limit_text(limit)} "
                             f"limit for a {kind}")


def read_bytes(path, what: str, kind: str = "file") -> bytes:
    """The bytes of a user file no larger than ``LIMITS[kind]``; one-line errors."""
    limit = LIMITS[kind]
    shown = f"{what} {str(path)!r}"
    check_size(path, what, kind)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)        # a pipe or device has no size: stop past the limit
    except FileNotFoundError:
        raise UserInputError(f"{shown} does not exist") from None
    except OSError as exc:
        raise UserInputError(f"{shown} cannot be read: {os_error(exc)}") from None
    if len(data) > limit:
        raise UserInputError(f"{shown} is over the {_limit_text(limit)} limit for a {kind}")
    return data


def read_text(path, what: str, kind: str = "file") -> str:
    """The UTF-8 text of a user file (see :func:`read_bytes`); binary content is one line."""
    data = read_bytes(path, what, kind)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserInputError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}: "
                             f"{data[exc.start:exc.start + 1]!r}); give a text file") from None


def iter_lines(path, what: str, kind: str = "file"):
    """The lines of a UTF-8 text file no larger than ``LIMITS[kind]``, read a block at a time
    (``str.splitlines`` rules, no line ends); one-line errors for a missing, oversized or
    binary file and for a line longer than :data:`MAX_LINE` bytes, raised when that part of
    the file is reached."""
    limit, shown = LIMITS[kind], f"{what} {str(path)!r}"
    check_size(path, what, kind)
    try:
        with open(path, "rb") as fh:
            rest, read, lineno = b"", 0, 0
            while True:
                block = fh.read(_BLOCK)
                read += len(block)
                if read > limit:           # a pipe or device has no size: stop past the limit
                    raise UserInputError(f"{shown} is over the {_limit_text(limit)} limit for a {kind}")
                parts = (rest + block).split(b"\n")
                rest = parts.pop() if block else b""
                _check_line_lengths(parts + [rest], shown, lineno)
                yield from _decode(parts, shown, lineno).splitlines()
                lineno += len(parts)
                if not block:
                    return
    except OSError as exc:
        raise UserInputError(f"{shown} cannot be read: {os_error(exc)}") from None


_BLOCK = 2**20


def _check_line_lengths(parts: list, shown: str, lineno: int) -> None:
    if max(map(len, parts), default=0) > MAX_LINE:
        n = next(i for i, p in enumerate(parts) if len(p) > MAX_LINE)
        raise UserInputError(f"{shown}: line {lineno + n + 1} is longer than {_limit_text(MAX_LINE)} "
                             "(a text file's lines are short); give a text file")


def _decode(parts: list, shown: str, lineno: int) -> str:
    try:
        return b"\n".join(parts).decode("utf-8")
    except UnicodeDecodeError:
        for i, data in enumerate(parts):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UserInputError(f"{shown} is not UTF-8 text (line {lineno + i + 1}, byte {exc.start}: "
                                     f"{data[exc.start:exc.start + 1]!r}); give a text file") from None
        raise


# TOML strings and comments, whose brackets do not nest (one regex pass, no recursion)
_TOML_SKIP = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*',
                        re.DOTALL)
# a key of more than MAX_NESTING dotted parts (possessive, tried only where a part starts: linear)
_DOTTED = re.compile(r"(?<![\w-])(?:[\w-]*+[ \t]*+\.[ \t]*+){%d,}" % MAX_NESTING)
_BRACKETS = "[]{}"
_DROP = "".join(chr(c) for c in range(128) if chr(c) not in _BRACKETS)
_DELTA = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_nesting(text: str, where: str, syntax: str) -> None:
    """Refuse JSON or TOML ``text`` that nests deeper than :data:`MAX_NESTING` levels, before
    a (recursive) parser sees it. ``where``: the option and file, for the message."""
    if syntax == "json":      # escapes out (left to right, as JSON pairs them), then what is outside "..."
        rest = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[0::2])
    else:
        rest = _TOML_SKIP.sub("", text)
    if syntax == "toml" and _DOTTED.search(rest):
        raise UserInputError(f"{where}: a dotted key has more than {MAX_NESTING} parts")
    brackets = rest.encode("ascii", "ignore").translate(None, _DROP.encode())
    depth = max(itertools.accumulate(map(_DELTA.__getitem__, brackets)), default=0)
    if depth > MAX_NESTING:
        raise UserInputError(f"{where} nests {depth} levels deep; at most {MAX_NESTING} are allowed")


def check_xml_nesting(data: bytes, where: str) -> None:
    """Refuse XML nesting deeper than :data:`MAX_NESTING` elements (expat streams, no recursion);
    malformed XML is left to the real parser to report."""
    import xml.parsers.expat

    depth = [0]
    parser = xml.parsers.expat.ParserCreate()

    def start(*_):
        depth[0] += 1
        if depth[0] > MAX_NESTING:
            raise UserInputError(f"{where} nests elements more than {MAX_NESTING} levels deep")

    def end(*_):
        depth[0] -= 1

    parser.StartElementHandler, parser.EndElementHandler = start, end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError:
        pass


def load_json(path, what: str, kind: str = "file"):
    """A user JSON file, size- and depth-checked; one-line errors."""
    return _load(path, what, kind, "json")


def load_toml(path, what: str, kind: str = "file") -> dict:
    """A user TOML file, size- and depth-checked; one-line errors."""
    return _load(path, what, kind, "toml")


def _load(path, what: str, kind: str, syntax: str):
    import tomllib

    where = f"{what} {str(path)!r}"
    text = read_text(path, what, kind)
    check_nesting(text, where, syntax)
    try:
        return json.loads(text) if syntax == "json" else tomllib.loads(text)
    except ValueError as exc:        # a decode error, or an integer of more than 4300 digits
        name = "JSON" if syntax == "json" else "valid TOML"
        raise UserInputError(f"{where} is not {name}: {' '.join(str(exc).split())}") from None


# -- output paths -----------------------------------------------------------------------------

def resolve_output(path) -> str:
    """The file an output path writes: symlinks followed (a dangling one to its target)."""
    return os.path.realpath(path)


def check_output_path(path, what: str, suffixes: tuple | None = None) -> None:
    """Refuse, before any work, an output path whose directory is missing or not writable.

    ``-`` (stdout) passes. ``suffixes``: the allowed extensions (lower case, with the dot).
    Symlinks are followed: a dangling one needs its target's directory to exist and be writable.
    """
    if path is None or str(path) == "-":
        return
    p = Path(path)
    if suffixes is not None and p.suffix.lower() not in suffixes:
        allowed = ", ".join(suffixes[:-1]) + " or " + suffixes[-1] if len(suffixes) > 1 else suffixes[0]
        raise UserInputError(f"{what} {str(path)!r}: the file type is chosen by extension: {allowed}")
    shown = f"{what} {str(path)!r}"
    if p.is_symlink():
        target = Path(resolve_output(p))
        shown = f"{shown} (a symlink to {str(target)!r})"
        if target.is_symlink():                  # realpath stops where symlinks loop
            raise UserInputError(f"{shown}: the symlinks loop; give a file name")
        p = target
    if p.is_dir():
        raise UserInputError(f"{shown} is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UserInputError(f"{shown}: directory {str(parent)!r} does not exist")
    # try it for real (permission bits do not tell for root, read-only mounts or /proc)
    try:
        if p.exists():
            with open(p, "ab"):
                pass
        else:
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{p.name}.", suffix=".check")
            os.close(fd)
            os.unlink(tmp)
    except OSError as exc:
        raise UserInputError(f"{shown} is not writable: {exc.strerror or exc}") from None


@contextlib.contextmanager
def writing(path, what: str, kept: str = ""):
    """Turn an OS error inside the block (disk full, read-only, permission) into one
    :class:`OutputError` line naming ``what``, the path and the error; ``kept`` is appended
    (what was written and how to go on)."""
    try:
        yield
    except OSError as exc:
        where = getattr(exc, "filename", None)
        other = f" {str(where)!r}" if where is not None and str(where) != str(path) else ""
        raise OutputError(f"{what} {str(path)!r}: cannot write{other}: {os_error(exc)}"
                          + (f"; {kept}" if kept else "")) from None
