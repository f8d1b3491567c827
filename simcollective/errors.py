"""Exceptions raised by simcollective.

Every error a user can provoke derives from :class:`SimCollectiveError`; the CLI prints
its message on one line (``simcollective: error: ...``) and exits non-zero.
"""

__all__ = [
    "SimCollectiveError",
    "UserInputError",
    "TopologyError",
    "VerificationError",
    "DeadlockError",
    "OutputError",
]


class SimCollectiveError(Exception):
    """Base class of all errors simcollective reports to a user."""


class UserInputError(SimCollectiveError, ValueError):
    """A bad option, size, name or file given by the user."""


# The one TopologyError: the topologies package's (a ValueError, one line naming the node,
# edge, option or file). The CLI reports it like a UserInputError (exit 2).
from topologies import TopologyError  # noqa: E402


class OutputError(SimCollectiveError):
    """An output file could not be written (disk full, read-only file system, permission);
    the message names the path and the operating system's error."""


class VerificationError(SimCollectiveError):
    """A simulated collective produced a result that differs from the NumPy reference."""


class DeadlockError(SimCollectiveError):
    """Ranks blocked forever; the message names each blocked rank and what it waits for."""
