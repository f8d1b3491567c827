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
]


class SimCollectiveError(Exception):
    """Base class of all errors simcollective reports to a user."""


class UserInputError(SimCollectiveError, ValueError):
    """A bad option, size, name or file given by the user."""


class TopologyError(UserInputError):
    """A hardware graph that does not follow the schema (names the node or edge)."""


class VerificationError(SimCollectiveError):
    """A simulated collective produced a result that differs from the NumPy reference."""


class DeadlockError(SimCollectiveError):
    """Ranks blocked forever; the message names each blocked rank and what it waits for."""
