"""The lock a sweep holds on the table it writes."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UserInputError

__all__ = ["TableLock"]


class TableLock:
    """An exclusive lock on the table ``out`` (the resolved path): a second sweep writing the
    same table refuses in one line instead of losing rows.

    Two locks, both ``flock``'ed: a ``.NAME.lock`` file next to the table (it exists before
    the table does, and holds the writer's pid), and, when the table exists, the table file
    itself: a lock on its identity (device and inode), which every name of the file shares,
    hard links included.
    """

    def __init__(self, out, shown=None):
        self.out = Path(out)
        self.path = self.out.with_name(f".{self.out.name}.lock")
        self.shown = str(shown or out)
        self.fh = None
        self.table_fd = None

    def _refuse(self, holder: str | None, why: str = ""):
        table = str(self.out)
        also = f" ({table!r})" if table != os.path.abspath(self.shown) else ""
        pid = f" (pid {holder})" if holder else ""
        raise UserInputError(f"--out {self.shown!r}{also}{why} is being written by another sweep{pid}; "
                             "wait for it to finish or choose another --out") from None

    def __enter__(self):
        import fcntl

        self.fh = open(self.path, "a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "?"
            self.fh.close()
            self._refuse(holder)
        try:
            self._lock_identity(fcntl)
        except BaseException:
            self.fh.close()
            raise
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(str(os.getpid()))
        self.fh.flush()
        return self

    def _lock_identity(self, fcntl) -> None:
        """Lock the table's inode (when it exists): another name of the same file is refused."""
        try:
            fd = os.open(self.out, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:           # no table yet (no other name can share it), or unreadable
            return
        st = os.fstat(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self._refuse(None, f", the same file (device {st.st_dev}, inode {st.st_ino}) as a table that")
        self.table_fd = fd

    def __exit__(self, *exc):
        try:
            self.path.unlink()
        except OSError:
            pass
        if self.table_fd is not None:
            os.close(self.table_fd)
        self.fh.close()       # closing releases the lock
