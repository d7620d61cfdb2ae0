"""The daemon's host process: the operations only the daemon root can do, for the API's routes.

The management routes live in `beamclaw_control`, which may not import this package;
they `sv.call` the GenServer registered as `beamclaw_control.HOST` with its messages
(status, the configuration, reload, stop, a process named by a kill path). A request
the host refuses raises `beamclaw_gateway.BadRequest` in the caller, with the HTTP
status it deserves (400, 404, or 409 for a refused reload).
"""

from __future__ import annotations

import os
import re
import signal
import time
from typing import Any, Final

import attrs
import trio

import beamclaw_core as core
import supervision as sv
from beamclaw_control import HOST, EnvNames, HostRequest, LogFile, Reload, Resolve, ShowConfig, Status, Stop
from beamclaw_gateway import BadRequest

from ._apps import ROOT, Daemon
from ._describe import describe
from ._reload import ReloadRefused, names_needed, reload
from ._version import __version__

#: Where conversations live in the tree; a kill path may start at a session instead.
_SESSIONS_PATH: Final = ("core", "sessions_sup")
_PID: Final = re.compile(r"<0\.(\d+)\.0>")


class Host(sv.GenServer):
    """Answers `beamclaw_control.HostRequest` messages for the daemon *daemon*."""

    def init(self, daemon: Daemon) -> Daemon:
        sv.register(HOST)
        return daemon

    async def handle_call(self, request: HostRequest, caller: sv.Caller, daemon: Daemon) -> sv.Reply | sv.NoReply:
        try:
            return sv.Reply(await _answer(request, daemon), daemon)
        except BadRequest as exc:
            sv.reply_error(caller, exc)
            return sv.NoReply(daemon)


async def _answer(request: HostRequest, daemon: Daemon) -> Any:
    match request:
        case Status():
            return status(daemon)
        case ShowConfig():
            return {"path": str(daemon.config_path), "config": daemon.config}
        case EnvNames():
            return {"names": names_needed(daemon)}
        case Reload(env):
            try:
                return attrs.asdict(await reload(daemon, env))
            except ReloadRefused as exc:
                raise BadRequest(f"reload refused: {exc}", 409, "conflict") from None
        case Stop():
            # The same graceful path as Ctrl-C or SIGTERM: sv.run stops the apps in reverse.
            trio.lowlevel.current_trio_token().run_sync_soon(os.kill, os.getpid(), signal.SIGTERM)
            return {"stopping": True}
        case LogFile():
            return log_file(daemon)
        case Resolve(target, path_only):
            pid, path = await _target(target, path_only)
            return pid, path
    raise BadRequest(f"the daemon's host does not answer {request!r}")


def log_file(daemon: Daemon) -> str | None:
    """Where the obs app writes the log: ``logs/beamclaw.log`` in the data dir, unless
    ``[obs] log_file = false`` (see `beamclaw_obs.supervision_tree`)."""
    if not daemon.config.get("obs", {}).get("log_file", True):
        return None
    return str(daemon.home / "logs" / "beamclaw.log")


def status(daemon: Daemon) -> dict[str, Any]:
    """What `beamclaw status` shows: version, pid, uptime, the apps, sessions, configuration."""
    tree = sv.inspect_tree(ROOT)
    apps = [{"id": c["id"], "state": c["state"], "restarts": c.get("restarts", 0)} for c in tree["children"]]
    sessions = 0
    if sv.whereis(core.SESSIONS_SUP) is not None:
        sessions = sv.count_children(core.SESSIONS_SUP).active
    return {
        "version": __version__, "pid": os.getpid(), "uptime": round(time.time() - daemon.started, 1),
        "apps": apps, "sessions": sessions, "config": str(daemon.config_path), **describe(daemon.config),
    }  # fmt: skip


async def _target(target: str, path_only: bool) -> tuple[sv.Pid, str]:
    """The process *target* names and how to call it: a pid as the tree shows it, a
    registered name, else a path (child ids from the root, or a session id first)."""
    if not path_only:
        if match := _PID.fullmatch(target):
            pid = sv.Pid(int(match.group(1)))
            if not sv.is_alive(pid):
                raise BadRequest(f"no live process {target}", 404, "not_found")
            return pid, target
        if target in sv.registered():
            pid_of = sv.whereis(target)
            if pid_of is not None:
                return pid_of, target
    return _resolve(await _kill_path(target))


async def _kill_path(path: str) -> str:
    """*path* from the root: a path that starts with a session id (as `beamclaw sessions`
    prints it) instead of an app is taken below ``core/sessions_sup``."""
    first = path.strip("/").split("/", 1)[0]
    apps = {str(c.id) for c in sv.which_children(ROOT)}
    if first and not any(app.startswith(first) for app in apps):
        try:
            found = await core.find_session(first)
        except core.SessionNotFound:
            raise BadRequest(
                f"{first} names no app ({', '.join(sorted(apps))}) and no session (`beamclaw sessions` lists them)",
                404, "not_found",
            ) from None  # fmt: skip
        if not found.running:
            raise BadRequest(f"session {found.id[:12]} is not running (its next message starts it)", 409, "conflict")
        return "/".join([*_SESSIONS_PATH, found.id, *path.strip("/").split("/")[1:]])
    return path


def _walk(path: str) -> tuple[Any, list[str]]:
    """Follow *path* (child ids from the root, ``/``-separated; a unique prefix will do):
    the pid reached, and the child ids walked."""
    node: Any = ROOT
    walked: list[str] = []
    for part in [p for p in path.strip("/").split("/") if p]:
        children = {str(c.id): c for c in sv.which_children(node)}
        matches = [key for key in children if key == part] or [key for key in children if key.startswith(part)]
        if len(matches) != 1:
            known = ", ".join(sorted(children)) or "none"
            what = "matches several children" if matches else "matches no child"
            raise BadRequest(f"{'/'.join([*walked, part])} {what} (children of /{'/'.join(walked)}: {known})")
        child = children[matches[0]]
        if child.pid is None:
            raise BadRequest(f"{'/'.join([*walked, matches[0]])} is not running", 409, "conflict")
        node = child.pid
        walked.append(matches[0])
    return node, walked


def _resolve(path: str) -> tuple[sv.Pid, str]:
    """The pid at *path* (see `_walk`).

    A path ending in ``/`` names the children of a node, not one process, and is refused:
    ``core/sessions_sup/`` must not kill every conversation.
    """
    node, walked = _walk(path)
    if path.endswith("/") and walked:
        below = ", ".join(sorted(str(c.id)[:12] for c in sv.which_children(node))) or "none"
        raise BadRequest(f"{path} ends with '/': name one process below it (children: {below})")
    if not walked:
        raise BadRequest("give the path of a process below the root, e.g. core/sessions")
    return node, "/".join(walked)
