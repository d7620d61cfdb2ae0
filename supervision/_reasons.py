"""Exit reasons, and the exception a process raises to exit with one.

A process exits with `NORMAL` when its function returns, with `SHUTDOWN` when it
was asked to stop, with `KILLED` when it was cancelled without a chance to clean up,
and with the exception itself when it crashed. Any other value may be given through
`Exit` or `Stop`; only `NORMAL` and `SHUTDOWN` count as normal exits, as in OTP.
"""

from __future__ import annotations

import enum
from typing import Any, Final, final


@final
class ExitReason(enum.Enum):
    """The named exit reasons of OTP that are not crashes."""

    NORMAL = "normal"
    SHUTDOWN = "shutdown"
    KILLED = "killed"
    NOPROC = "noproc"

    def __repr__(self) -> str:
        return self.value

    __str__ = __repr__


NORMAL: Final = ExitReason.NORMAL
SHUTDOWN: Final = ExitReason.SHUTDOWN
KILLED: Final = ExitReason.KILLED
NOPROC: Final = ExitReason.NOPROC


@final
class _Ignore(enum.Enum):
    IGNORE = "ignore"

    def __repr__(self) -> str:
        return "IGNORE"


IGNORE: Final = _Ignore.IGNORE
"""Reported by a start function instead of starting: OTP's ``ignore`` from ``init``."""


def is_normal(reason: Any) -> bool:
    """Whether *reason* is a normal exit, so a transient child is not restarted."""
    return reason is NORMAL or reason is SHUTDOWN


class Exit(BaseException):
    """Raised inside a process to exit with *reason* (``exit(Reason)`` in Erlang).

    It derives from BaseException so that ``except Exception`` in user code does not
    swallow a deliberate exit.
    """

    def __init__(self, reason: Any = NORMAL) -> None:
        super().__init__(reason)
        self.reason = reason
