"""The daemon's log on stderr: one line per record, with no traceback and no local variables.

The log file (the obs app's) keeps every traceback; a terminal or the journal gets
the first line of each record and a pointer to the file. At ``DEBUG`` and below the
whole record is shown, tracebacks included, for whoever is debugging. Nowhere are
local variables shown (loguru's ``diagnose``): they may hold credentials that the
scrubber, which sees only the message, cannot find.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from loguru import logger

import beamclaw

if TYPE_CHECKING:
    from loguru import Message

_FORMAT = (
    "{time:YYYY-MM-DD HH:mm:ss.SSS} | <level>{level: <8}</level> | "
    "<cyan>{name}</cyan>:<cyan>{function}</cyan>:<cyan>{line}</cyan> - {message}"
)


def _shown(record: Any) -> bool:
    # The daemon's own report of a failed tree goes to the file; the CLI prints its one line.
    return not record["extra"].get("file_only")


def _whole(message: Message) -> None:
    sys.stderr.write(message)  # sys.stderr looked up now, not when the sink was added


def _first_line(message: Message) -> None:
    head, _, rest = str(message).rstrip("\n").partition("\n")
    sys.stderr.write(head + (" (traceback in the log file)" if rest.strip() else "") + "\n")


def log_to_stderr(level: str) -> None:
    """Replace loguru's sinks with one on stderr at *level* (a name such as ``INFO``).

    A name loguru does not know is a ConfigError naming the variable.
    """
    try:
        verbose = logger.level(level.upper()).no <= logger.level("DEBUG").no
    except ValueError:
        raise beamclaw.ConfigError(
            f"BEAMCLAW_LOG_LEVEL={level!r} is not a log level; use TRACE, DEBUG, INFO, WARNING or ERROR"
        ) from None
    logger.remove()
    logger.add(
        _whole if verbose else _first_line,
        level=level.upper(),
        format=_FORMAT,
        filter=_shown,
        colorize=sys.stderr.isatty(),
        backtrace=False,
        diagnose=False,
    )
