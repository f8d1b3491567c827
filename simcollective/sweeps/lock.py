"""The lock a sweep holds on the table it writes."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserInputError

__all__ = ["TableLock"]


class TableLock:
    """An exclusive lock on ``out`` (a ``.NAME.lock`` file next to it, flock'ed): a second
    sweep writing the same table refuses in one line instead of losing rows."""

    def __init__(self, out, shown=None):
        self.path = Path(out).with_name(f".{Path(out).name}.lock")
        self.shown = str(shown or out)
        self.fh = None

    def __enter__(self):
        import fcntl

        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "?"
            self.fh.close()
            table = str(self.path.with_name(self.path.name[1:-5]))
            also = f" ({table!r})" if table != os.path.abspath(self.shown) else ""
            raise UserInputError(f"--out {self.shown!r}{also} is being written by another sweep (pid {holder}); "
                                 "wait for it to finish or choose another --out") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(str(os.getpid()))
        self.fh.flush()
        return self

    def __exit__(self, *exc):
        try:
            self.path.unlink()
        except OSError:
            pass
        self.fh.close()       # closing releases the lock
