"""The daemon: the root tree under `sv.run`.

Crashes, restarts and every other event are logged by the obs app, which every
other app depends on, so the daemon itself only says when it starts and stops, and
why when it must stop: a tree that cannot start (`sv.StartError`) or whose root
supervisor gives up (`sv.MaxIntensity`) is written with its traceback to the log
file, and the exception carries a note, the one line the user should read (which
app and child, and why), that the command line prints instead of a traceback.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import attrs
from loguru import logger

import supervision as sv

from ._config import default_config_path, register_secrets
from ._data_dir import data_dir
from ._describe import describe
from ._errors import AlreadyRunning
from ._root import build_tree


@attrs.define
class _GiveUps:
    """Which child each supervisor gave up on, from the supervision events.

    `sv.MaxIntensity` names the supervisor and the last exit reason, not the child;
    the events do, so the one line can say ``scheduler/heartbeat``.
    """

    children: dict[str, str] = attrs.field(factory=dict)

    def __call__(self, event: sv.SupervisorEvent) -> None:
        if event.kind is sv.EventKind.INTENSITY_EXCEEDED:
            self.children[str(event.supervisor_name or event.supervisor)] = str(event.child_id)


def run_daemon(config: dict[str, Any], config_path: Path | None = None) -> Any:
    """Start the enabled apps and serve until SIGINT or SIGTERM; return the exit reason.

    *config_path* is the file *config* was read from (the project's config.toml when
    None); SIGHUP and `beamclaw reload` read it again. Before anything starts, the
    data dir is made private and the umask owner-only (`data_dir`), so every database,
    log, index and socket of every app is the owner's alone. Raises ConfigError for an
    unusable data dir (or another user's), and `sv.StartError` or `sv.MaxIntensity`
    (each with a one-line note) when the tree fails.
    """
    home = data_dir(create=True)
    with daemon_lock(home):
        return _serve(config, home, config_path)


@contextlib.contextmanager
def daemon_lock(home: Path) -> Iterator[None]:
    """Hold the data dir's lock while the block runs (a daemon's life): a second daemon on the same
    data dir is refused before it starts anything (it would share the databases, and its
    start-up clean-up would remove the first one's sandboxes)."""
    lock = home / _LOCK_FILE
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise AlreadyRunning(
                f"another BeamClaw daemon (pid {holder}) is running on the data dir {home}; stop it first "
                "(`beamclaw stop`), or give this one its own BEAMCLAW_HOME"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # the lock goes with it


def daemon_pid(home: Path) -> int | None:
    """The pid of the daemon running on the data dir *home* (0 if it has only just taken
    its lock and not yet written its pid), or None when none runs.

    The lock is the truth, not a pid file: a daemon killed with SIGKILL leaves its pid
    written, but the kernel releases its lock with its last file descriptor. The lock is
    tested without being taken (a shared lock, dropped at once), so a daemon starting at
    that moment may be told that one runs: never the other way round.
    """
    try:
        fd = os.open(home / _LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            written = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(written) if written.isdigit() else 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _serve(config: dict[str, Any], home: Path, config_path: Path | None) -> Any:
    register_secrets(config)
    path = config_path or default_config_path()
    tree = build_tree(config, home, path)
    what = describe(config)
    logger.info(
        "BeamClaw starting with {}: model {}; {}; apps {}; data dir {}. Stop with Ctrl-C, reload with SIGHUP",
        path,
        what["model"],
        f"gateway {what['gateway']}" if what["gateway"] else "no gateway",
        ", ".join(str(spec.id) for spec in tree.children),
        home,
    )
    give_ups = _GiveUps()
    try:
        reason = sv.run(tree, setup=lambda: sv.subscribe(give_ups))
    except (sv.StartError, sv.MaxIntensity) as exc:
        log_file = _log_file(config, home)
        summary, cause = _summary(exc, give_ups.children)
        if log_file is not None and _log_failure(log_file, summary, cause):
            summary += f" (traceback in {log_file})"
        exc.add_note(summary)
        raise
    logger.info("BeamClaw stopped ({!r})", reason)
    return reason


#: The data dir's lock file, held by the running daemon (it also holds its pid).
_LOCK_FILE: Final = "daemon.lock"


def _describe(reason: Any) -> str:
    if isinstance(reason, BaseException):
        return f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
    return repr(reason)


def _summary(exc: sv.StartError | sv.MaxIntensity, gave_up_on: dict[str, str]) -> tuple[str, Any]:
    """The one line for the user, and the innermost reason (whose traceback the log file gets)."""
    path: list[str] = []
    reason: Any = exc
    if isinstance(exc, sv.StartError):
        while isinstance(reason, sv.StartError):
            path.append(str(reason.child_id))
            reason = reason.reason
        return f"could not start {'/'.join(path)}: {reason}", reason
    while isinstance(reason, sv.MaxIntensity):
        child = gave_up_on.get(str(reason.supervisor))
        if child is not None:
            path.append(child)
        reason = reason.last_reason
    where = "/".join(path) or "an app"
    limit = f"more than {exc.intensity} restart(s) in {exc.period:g} s"
    return f"the root supervisor gave up ({limit}); the last to fail: {where}: {_describe(reason)}", reason


def _log_file(config: dict[str, Any], home: Path) -> Path | None:
    """The obs app's log file (see `beamclaw_obs.supervision_tree`), or None when it is off."""
    return home / "logs" / "beamclaw.log" if config.get("obs", {}).get("log_file", True) else None


def _log_failure(log_file: Path, summary: str, cause: Any) -> bool:
    """Append the failure with its traceback to the log file: obs, which owns it, has stopped by now.

    The record is bound ``file_only``: the command line's stderr sink leaves it out
    and prints the note instead. Locals are never shown (``diagnose=False``).
    """
    exception = cause if isinstance(cause, BaseException) else None
    try:
        sink = logger.add(
            log_file,
            level="ERROR",
            serialize=True,
            diagnose=False,
            backtrace=True,
            encoding="utf-8",
            filter=lambda record: bool(record["extra"].get("file_only")),
        )
    except OSError:
        return False  # the one line still says what happened
    try:
        logger.bind(file_only=True, event="daemon_failed").opt(exception=exception).error(
            "BeamClaw stopped: {}", summary
        )
    finally:
        logger.remove(sink)
    return True
