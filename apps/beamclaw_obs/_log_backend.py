"""The log backend: one structured loguru line per event, also to a rotating file.

Starting it also installs the scrubber as loguru's patcher, so every log line of the
process (not only events) is scrubbed before any sink sees it: the message, the bound
extra values, and the messages and notes of a logged exception and of every exception
chained to it or grouped in it (a traceback prints them all). Tracebacks never show
the values of local variables (loguru's ``diagnose``), which the scrubber never sees:
every sink added here has ``diagnose=False``, and loguru's own default stderr sink
(added at import with ``diagnose=True``) is replaced by one without it.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Final

from loguru import logger

from ._backend import Backend
from ._detector import default_rules
from ._event import ObsEvent
from ._scrubber import scrub, scrub_data

_DEBUG_EVENTS: Final = frozenset(
    {"llm_request", "llm_response", "tool_call_start", "tool_call_result", "child_started", "agent_start"}
)
_ERROR_EVENTS: Final = frozenset({"intensity_exceeded"})
_WARNING_EVENTS: Final = frozenset({"start_failed", "auto_shutdown", "shutdown_overrun", "history_repaired"})
_LEVEL_NUMBERS: Final = {name: logger.level(name).no for name in ("DEBUG", "INFO", "WARNING", "ERROR")}


#: loguru's default sink: stderr, added when loguru is imported, with ``diagnose=True``.
_LOGURU_DEFAULT_SINK: Final = 0
#: Exceptions looked at in one chain (causes, contexts, groups), at most.
_CHAIN_LIMIT: Final = 100


def _scrub_exception(exception: BaseException) -> None:
    """Scrub the strings a traceback prints of *exception* and the exceptions linked to it.

    The traceback text is formatted by the sink, after the patcher; what it shows of
    each exception comes from its ``args`` (``str(exception)``), its notes and, for an
    `OSError`, its file names. They are replaced in place, the exception is the same.
    """
    seen: set[int] = set()
    todo = [exception]
    while todo and len(seen) < _CHAIN_LIMIT:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        try:
            current.args = tuple(scrub_data(current.args))
            notes = getattr(current, "__notes__", None)
            if isinstance(notes, list):
                notes[:] = scrub_data(notes)
            if isinstance(current, OSError) and current.filename is not None:
                current.filename = scrub_data(current.filename)
                if current.filename2 is not None:
                    current.filename2 = scrub_data(current.filename2)
        except (AttributeError, TypeError):  # an exception class that refuses: keep going
            pass
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        if isinstance(current, BaseExceptionGroup):
            todo += current.exceptions


def _scrub_record(record: Any) -> None:
    record["message"] = scrub(record["message"])
    record["extra"] = scrub_data(record["extra"])
    if record["exception"] is not None and record["exception"].value is not None:
        _scrub_exception(record["exception"].value)


def install_scrubbing_patcher() -> None:
    """Make every loguru record pass through the scrubber (idempotent).

    The rules are loaded before the patcher is installed, and the ones that could not
    be used are named after: the first record scrubbed must not be the one that loads
    them (see `default_rules`).
    """
    rules = default_rules()
    logger.configure(patcher=_scrub_record)
    for rule_id, why in rules.skipped:
        logger.debug("scrubber rule {} not used: {}", rule_id, why)


def _replace_default_sink() -> None:
    """Swap loguru's default stderr sink, if still there, for one that shows no local variables."""
    try:
        logger.remove(_LOGURU_DEFAULT_SINK)
    except ValueError:
        return  # already removed: the command line installs its own sinks
    logger.add(sys.stderr, level="DEBUG", diagnose=False, backtrace=True)


def _level(event: ObsEvent) -> str:
    if event.name == "child_exited":
        return "ERROR" if event.data.get("crashed") else "DEBUG"
    return _level_of(event.name)


def _level_of(name: str) -> str:
    """The level of events called *name* (the highest one, for those whose data decides)."""
    if name in _ERROR_EVENTS or name == "child_exited":
        return "ERROR"
    if name in _WARNING_EVENTS:
        return "WARNING"
    return "DEBUG" if name in _DEBUG_EVENTS else "INFO"


def _lowest_written() -> float:
    """The lowest level any loguru sink writes now (loguru keeps it for its own first check;
    0, every level, should a loguru version not): infinite when there is no sink at all
    (a TUI running its own daemon removes loguru's, and ``log_file = false`` adds none)."""
    return float(getattr(getattr(logger, "_core", None), "min_level", 0))


def format_event(event: ObsEvent) -> str:
    """``name key=value ...`` with values as compact JSON; a traceback goes on the lines after."""
    fields = " ".join(
        f"{key}={json.dumps(value, default=str, ensure_ascii=False)}"
        for key, value in event.data.items()
        if key != "traceback" and value is not None
    )
    line = f"{event.name} {fields}".rstrip()
    traceback = event.data.get("traceback")
    return f"{line}\n{traceback.rstrip()}" if traceback else line


class _ToLoguru(logging.Handler):
    """Records of the standard ``logging`` (libraries: the MCP SDK, hypercorn...) into loguru,
    so they are scrubbed and written where BeamClaw's own lines go (loguru's recipe)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level: str | int = logger.level(record.levelname).name
        except ValueError:
            level = record.levelno
        logger.bind(library=record.name).opt(exception=record.exc_info).log(level, "{}", record.getMessage())


def _route_standard_logging() -> None:
    """Send the standard library's warnings and errors to loguru (idempotent)."""
    root = logging.getLogger()
    if not any(isinstance(handler, _ToLoguru) for handler in root.handlers):
        root.addHandler(_ToLoguru(level=logging.WARNING))
        root.setLevel(min(root.level or logging.WARNING, logging.WARNING))


def _owner_only(path: str, flags: int) -> int:
    """`open`'s opener for a file only its owner may read (0600)."""
    return os.open(path, flags, 0o600)


class LogBackend(Backend):
    def setup(self, log_file: Path | None, level: str) -> int | None:
        install_scrubbing_patcher()
        _replace_default_sink()
        _route_standard_logging()
        if log_file is None:
            return None
        log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        log_file.parent.chmod(0o700)  # the logs quote conversations: the owner's alone, whoever made the folder
        # diagnose=False: loguru would print the values of the local variables of every
        # frame of a logged traceback, which the scrubber (it sees the message) never
        # sees and which may hold a credential. backtrace=True keeps the frames above
        # the one that caught the exception: code, never values.
        return logger.add(
            log_file,
            level=level,
            rotation="10 MB",
            retention=5,
            serialize=True,
            enqueue=False,
            encoding="utf-8",
            diagnose=False,
            backtrace=True,
            opener=_owner_only,  # this file and every rotated one, whatever the umask
        )

    def wants(self, event: str) -> bool:
        """Events of a level some sink writes (sinks come and go: asked each time)."""
        return _LEVEL_NUMBERS[_level_of(event)] >= _lowest_written()

    def handle_event(self, event: ObsEvent, state: int | None) -> None:
        # Formatted only if a sink writes its level: a child's normal exit is DEBUG.
        logger.bind(event=event.name).opt(lazy=True).log(_level(event), "{}", lambda: format_event(event))

    def terminate(self, reason: Any, state: int | None) -> None:
        super().terminate(reason, state)
        if state is not None:
            logger.remove(state)
