"""The control socket: a Unix socket in the data dir (mode 0600) speaking JSON lines.

The CLI talks to the running daemon through it. A request is one JSON object on one
line; the answer is one or more JSON lines, the last of which has ``"done": true``.

    {"cmd": "ping"}                                   -> {"type": "pong", "version": ...}
    {"cmd": "status"}                                 -> version, pid, uptime, apps, sessions
    {"cmd": "tree"}                                   -> {"type": "tree", "tree": inspect_tree(root)}
    {"cmd": "kill", "path": "core/sessions_sup/ID/loop"} -> crash that process on purpose
    {"cmd": "stop"}                                   -> stop the daemon as SIGTERM would
    {"cmd": "env_names"}                              -> the variables the configuration names
    {"cmd": "reload", "env": {VAR: value, ...}}       -> re-read the configuration (see `_reload`)
    {"cmd": "chat", "user": U, "agent": A, "text": T, "channel": "cli|mcp"?}
                                                      -> drafts and messages, then the reply (an MCP
                                                         host's is "mcp": its /yes answers only its own)
    {"cmd": "history", "user": U, "agent": A}         -> {"type": "history", "session": {...}, "messages": [...]}
    {"cmd": "history", "session": PREFIX}             -> the same, for a session `sessions` listed
    {"cmd": "open", "user": U, "agent": A}            -> {"type": "session", "session": {...}}
    {"cmd": "sessions", "limit": N}                   -> {"type": "sessions", "sessions": [...], "total": T}
    {"cmd": "mcp", "action": "list"}                  -> each MCP server's status
    {"cmd": "mcp", "action": "tools", "server": S?}   -> the MCP tools (of one server)
    {"cmd": "mcp", "action": "restart", "server": S}  -> start a server again (a failed one too)
    {"cmd": "reset", "user": U, "agent": A}           -> forget the conversation (/new)
    {"cmd": "interrupt", "user": U, "agent": A}       -> stop the turn being worked on (/stop, Ctrl-C)
    {"cmd": "approve", "session": PREFIX, "answer": "yes|no|always"}
                                                      -> answer the approval the conversation waits
                                                         for, whichever channel asked (the owner's word)
    {"cmd": "context", "user": U, "agent": A}         -> context window use
    {"cmd": "scheduler", "action": "list", "all": B}  -> the jobs (done ones too with all)
    {"cmd": "scheduler", "action": "add", "user": U, "agent": A, "kind": K, "spec": S, "timezone": Z,
     "message": M}                                    -> the new job
    {"cmd": "scheduler", "action": "cancel|pause|resume|runs", "job": ID} -> the job, or its run log
    {"cmd": "memory", "action": "search", "agent": A?, "user": U?, "query": Q, "limit": N?}
                                                      -> the hits (path, lines, score, text, kind) and a note;
                                                         without "user", the agent's files only
    {"cmd": "memory", "action": "reindex", "agent": A?} -> the agent's memory indexed again: its status
    {"cmd": "memory", "action": "status"}             -> each agent's memory: documents, chunks, vectors
    {"cmd": "follow", "user": U}                      -> stays open: each message delivered to U
                                                         (a scheduled job's reply), until closed
    {"cmd": "process", "target": T}                   -> `sv.process_info` of one process: T is a pid
                                                         (<0.12.0>), a registered name, or a path as kill takes
    {"cmd": "names"}                                  -> every registered name, its pid and mailbox length
    {"cmd": "send", "name": N, "message": M}          -> send the JSON value M to the process named N,
                                                         as Erlang's `!` (the remote console's `send`)
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import socket
import time
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from loguru import logger

import beamclaw_core as core
import beamclaw_mcp as mcp
import beamclaw_memory as memory
import beamclaw_scheduler as scheduler
import beamclaw_tools as tools
import supervision as sv

from ._apps import ROOT, Daemon, app_table
from ._describe import describe
from ._reload import ReloadRefused, names_needed, reload
from ._version import __version__

MAX_REQUEST: Final = 1_000_000
#: The most hits one ``memory search`` returns.
MAX_MEMORY_HITS: Final = 50
SOCKET_NAME: Final = "control.sock"


class _BadRequest(Exception):
    pass


@attrs.define
class _Connection:
    """One client's connection: JSON lines out, one at a time (the reply being streamed and
    a message the session sends meanwhile, such as "Stopped.", never interleave)."""

    stream: trio.SocketStream
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def write(self, **fields: Any) -> None:
        async with self._lock:
            await self.stream.send_all(json.dumps(fields).encode() + b"\n")


@attrs.define
class _StreamChannel(core.BaseChannel):
    """A `beamclaw_core.Channel` that writes each update to the control connection."""

    connection: _Connection

    async def send(self, text: str) -> None:
        await self.connection.write(type="message", text=text)

    async def send_typing(self) -> None:
        await self.connection.write(type="typing")

    async def update_draft(self, text: str) -> None:
        await self.connection.write(type="draft", text=text)

    async def finalize_draft(self, text: str) -> None:
        await self.connection.write(type="final", text=text)

    async def progress(self, text: str) -> None:
        await self.connection.write(type="progress", text=text)

    async def turn_failed(self, text: str) -> None:
        """Nothing: the run's answer (``reply``, not ok) carries the same text right after."""


async def _read_request(stream: trio.SocketStream) -> dict[str, Any]:
    data = b""
    while b"\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise _BadRequest(f"request larger than {MAX_REQUEST} bytes")
    try:
        request = json.loads(data.split(b"\n", 1)[0])
    except ValueError as exc:
        raise _BadRequest(f"request is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        raise _BadRequest('a request is a JSON object with a "cmd" string')
    return request


def _text_field(request: dict[str, Any], key: str) -> str:
    value = request.get(key)
    if not isinstance(value, str) or not value:
        raise _BadRequest(f'"{key}" must be a non-empty string')
    return value


class KilledOnPurpose(Exception):
    """The reason given to a process crashed with ``beamclaw kill``."""


#: Where conversations live in the tree; a kill path may start at a session instead.
_SESSIONS_PATH: Final = ("core", "sessions_sup")


async def _kill_path(path: str) -> str:
    """*path* from the root: a path that starts with a session id (as `beamclaw sessions`
    prints it) instead of an app is taken below ``core/sessions_sup``."""
    first = path.strip("/").split("/", 1)[0]
    apps = {str(c.id) for c in sv.which_children(ROOT)}
    if first and not any(app.startswith(first) for app in apps):
        try:
            found = await core.find_session(first)
        except core.SessionNotFound:
            raise _BadRequest(
                f"{first} names no app ({', '.join(sorted(apps))}) and no session (`beamclaw sessions` lists them)"
            ) from None
        if not found.running:
            raise _BadRequest(f"session {found.id[:12]} is not running (its next message starts it)")
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
            raise _BadRequest(f"{'/'.join([*walked, part])} {what} (children of /{'/'.join(walked)}: {known})")
        child = children[matches[0]]
        if child.pid is None:
            raise _BadRequest(f"{'/'.join([*walked, matches[0]])} is not running")
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
        raise _BadRequest(f"{path} ends with '/': name one process below it (children: {below})")
    if not walked:
        raise _BadRequest("give the path of a process below the root, e.g. core/sessions")
    return node, "/".join(walked)


_PID: Final = re.compile(r"<0\.(\d+)\.0>")


async def _target(target: str) -> sv.Pid | str:
    """The process *target* names: a pid as the tree shows it, a registered name, else a path
    (child ids from the root, or a session id first, as `beamclaw kill` takes)."""
    if match := _PID.fullmatch(target):
        pid = sv.Pid(int(match.group(1)))
        if not sv.is_alive(pid):
            raise _BadRequest(f"no live process {target}")
        return pid
    if target in sv.registered():
        return target
    return _resolve(await _kill_path(target))[0]


def _names() -> list[dict[str, Any]]:
    found = []
    for name in sv.registered():
        with contextlib.suppress(sv.NoProc):  # freed since it was listed
            info = sv.process_info(name, messages=0)
            found.append({"name": name, "pid": info["pid"], "kind": info["kind"], "mailbox": info["mailbox"]})
    return found


def _send(name: str, message: Any) -> dict[str, Any]:
    """Send *message* to the process registered as *name*; an operator's act, logged."""
    try:
        queued = sv.send(name, message)
    except sv.NoProc:
        raise _BadRequest(f"no process is registered as {name!r} (`names` lists them)") from None
    except sv.MailboxFull:
        raise _BadRequest(f"the mailbox of {name!r} is full; nothing was sent") from None
    logger.info("the remote console sent {!r} to {}", message, name)
    return {"name": name, "queued": queued}


def _status(daemon: Daemon) -> dict[str, Any]:
    tree = sv.inspect_tree(ROOT)
    apps = [{"id": c["id"], "state": c["state"], "restarts": c.get("restarts", 0)} for c in tree["children"]]
    sessions = 0
    if sv.whereis(core.SESSIONS_SUP) is not None:
        sessions = sv.count_children(core.SESSIONS_SUP).active
    return {
        "type": "status", "version": __version__, "pid": os.getpid(), "uptime": round(time.time() - daemon.started, 1),
        "apps": apps, "sessions": sessions, "config": str(daemon.config_path), **describe(daemon.config),
    }  # fmt: skip


async def _answer(connection: _Connection, request: dict[str, Any], daemon: Daemon) -> dict[str, Any]:
    match request["cmd"]:
        case "ping":
            return {"type": "pong", "version": __version__}
        case "status":
            return _status(daemon)
        case "config":
            return {"type": "config", "path": str(daemon.config_path), "config": daemon.config}
        case "env_names":
            return {"type": "env_names", "names": names_needed(daemon)}
        case "reload":
            environ = request.get("env", {})
            if not isinstance(environ, dict) or not all(isinstance(v, str) for v in environ.values()):
                raise _BadRequest('"env" must be an object of strings')
            try:
                return {"type": "reloaded", **attrs.asdict(await reload(daemon, environ))}
            except ReloadRefused as exc:
                raise _BadRequest(f"reload refused: {exc}") from None
        case "tree":
            return {"type": "tree", "tree": sv.inspect_tree(ROOT)}
        case "kill":
            pid, path = _resolve(await _kill_path(_text_field(request, "path")))
            sv.kill(pid, KilledOnPurpose(f"killed on purpose with `beamclaw kill {path}`"))
            return {"type": "killed", "pid": repr(pid), "path": path}
        case "stop":
            # The same graceful path as Ctrl-C or SIGTERM: sv.run stops the apps in reverse.
            trio.lowlevel.current_trio_token().run_sync_soon(os.kill, os.getpid(), signal.SIGTERM)
            return {"type": "stopping"}
        case "reset":
            handle = await _session(request)
            return {"type": "reset", "dropped": await core.reset_session(handle)}
        case "interrupt":
            return {"type": "interrupted", "stopped": await core.stop_turn(await _session(request))}
        case "approve":
            answer = _text_field(request, "answer")
            if answer not in {"yes", "no", "always"}:
                raise _BadRequest('"answer" must be "yes", "no" or "always"')
            return {"type": "approved", "answer": await core.answer_approval(await _session(request), answer)}
        case "context":
            usage = await core.context_usage(await _session(request))
            return {"type": "context", "used": usage.used, "window": usage.window, "messages": usage.messages}
        case "chat":
            channel = request.get("channel", "cli")
            if channel not in {"cli", "mcp"}:
                raise _BadRequest('"channel" must be "cli" or "mcp"')
            handle = await _session(request, channel)
            text = core.truncated(_text_field(request, "text"))
            result = await core.send_message(handle, text, _StreamChannel(connection))
            return {"type": "reply", "ok": result.ok, "text": result.text}
        case "history":
            handle = await _session(request)
            messages = [m.to_openai() for m in await core.history(handle)]
            return {"type": "history", "session": _handle_fields(handle), "messages": messages}
        case "open":
            return {"type": "session", "session": _handle_fields(await _session(request))}
        case "mcp":
            return await _mcp(request)
        case "scheduler":
            return await _scheduler(request, daemon)
        case "memory":
            return await _memory(request, daemon)
        case "follow":
            return await _follow(connection, _text_field(request, "user"))
        case "process":
            return {"type": "process", "info": sv.process_info(await _target(_text_field(request, "target")))}
        case "names":
            return {"type": "names", "names": _names()}
        case "send":
            return {"type": "sent", **_send(_text_field(request, "name"), request.get("message"))}
        case "sessions":
            limit = request.get("limit", 50)
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                raise _BadRequest('"limit" must be a whole number of at least 1')
            sessions, total = await core.list_sessions(limit)
            return {"type": "sessions", "sessions": [attrs.asdict(x) for x in sessions], "total": total}
    raise _BadRequest(f"unknown command {request['cmd']!r}")


async def _mcp(request: dict[str, Any]) -> dict[str, Any]:
    """``beamclaw mcp list | tools [SERVER] | restart SERVER``."""
    try:
        match request.get("action"):
            case "list":
                return {"type": "mcp", "servers": [attrs.asdict(s) for s in await mcp.server_statuses()]}
            case "tools":
                server = request.get("server")
                found = [
                    {"name": t.definition.name, "server": t.link.server, "remote": t.remote,
                     "description": t.definition.description, "asks": t.requires_approval}
                    for t in await tools.list_tools()
                    if isinstance(t, mcp.McpTool) and server in (None, t.link.server)
                ]  # fmt: skip
                return {"type": "mcp", "tools": sorted(found, key=lambda t: t["name"])}
            case "restart":
                await mcp.restart_server(_text_field(request, "server"))
                return {"type": "mcp", "restarted": request["server"]}
    except sv.NoProc:
        raise _BadRequest("the MCP app is not running (disabled in the configuration?)") from None
    except ValueError as exc:
        raise _BadRequest(str(exc)) from None
    raise _BadRequest('"action" must be list, tools or restart')


def _job_fields(job: scheduler.Job) -> dict[str, Any]:
    return {
        "id": job.id, "agent": job.agent_id, "user": job.user_id, "schedule": job.schedule.describe(),
        "message": job.message, "state": job.state, "next_due": job.next_due, "errors": job.errors,
        "paused_reason": job.paused_reason, "created_by": job.created_by,
    }  # fmt: skip


async def _scheduler(request: dict[str, Any], daemon: Daemon) -> dict[str, Any]:
    """``beamclaw scheduler list | add | cancel | pause | resume | runs``."""
    action = request.get("action")
    try:
        match action:
            case "list":
                jobs = await scheduler.list_jobs(everything=bool(request.get("all")))
                return {"type": "jobs", "jobs": [_job_fields(job) for job in jobs]}
            case "add":
                user = core.check_user_id(_text_field(request, "user"))
                default_agent = core.parse_core_config(app_table("core", daemon.config)).default_agent
                agent = core.check_agent_exists(daemon.home, _text_field(request, "agent"), default_agent)
                config = scheduler.parse_scheduler_config(app_table("scheduler", daemon.config))
                job = await scheduler.add_job(
                    agent_id=agent, user_id=user, channel="cli", kind=_text_field(request, "kind"),
                    spec=_text_field(request, "spec"), message=_text_field(request, "message"), created_by="cli",
                    timezone=str(request.get("timezone") or "UTC"), now=time.time(),
                    min_interval=config.min_interval_seconds,
                )  # fmt: skip
                return {"type": "job", "job": _job_fields(job)}
            case "cancel" | "pause" | "resume":
                return {
                    "type": "job",
                    "job": _job_fields(await scheduler.change_job(action, _text_field(request, "job"))),
                }
            case "runs":
                runs = await scheduler.job_runs(_text_field(request, "job"))
                return {"type": "runs", "runs": [attrs.asdict(run) for run in runs]}
    except (ValueError, scheduler.SchedulerNotRunning, core.UnknownAgent) as exc:
        raise _BadRequest(str(exc)) from None
    raise _BadRequest('"action" must be list, add, cancel, pause, resume or runs')


def _memory_agent(request: dict[str, Any], daemon: Daemon) -> str:
    """The agent a memory request names (``null`` or absent: the default agent); it must exist."""
    default_agent = core.parse_core_config(app_table("core", daemon.config)).default_agent
    agent = request.get("agent")
    if agent is None:
        return default_agent
    if not isinstance(agent, str):
        raise _BadRequest('"agent" must be the name of an agent, or null for the default one')
    return core.check_agent_exists(daemon.home, agent, default_agent)


def _memory_limit(request: dict[str, Any], daemon: Daemon) -> int:
    limit = request.get("limit")
    if limit is None:
        return memory.parse_memory_config(app_table("memory", daemon.config)).search.default_limit
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_MEMORY_HITS:
        raise _BadRequest(f'"limit" must be a whole number from 1 to {MAX_MEMORY_HITS}')
    return limit


async def _memory(request: dict[str, Any], daemon: Daemon) -> dict[str, Any]:
    """``beamclaw memory search | reindex | status``: the agents' long-term memory.

    A search without a user sees the agent's files only; with one, that user's past
    conversations with the agent too (never another user's).
    """
    try:
        match request.get("action"):
            case "search":
                agent = _memory_agent(request, daemon)
                user = request.get("user")
                if user is not None:
                    user = core.check_user_id(_text_field(request, "user"))
                query = _text_field(request, "query")
                if len(query) > memory.MAX_QUERY_CHARS:
                    raise _BadRequest(f"a memory query is at most {memory.MAX_QUERY_CHARS} characters")
                result = await memory.search(agent, query, owner=user, limit=_memory_limit(request, daemon))
                hits = [attrs.asdict(hit) for hit in result.hits]
                return {"type": "memory_hits", "agent": agent, "user": user, "hits": hits, "note": result.note}
            case "reindex":
                return {"type": "memory_status", "status": await memory.reindex(_memory_agent(request, daemon))}
            case "status":
                default_agent = core.parse_core_config(app_table("core", daemon.config)).default_agent
                agents = core.agent_names(daemon.home, default_agent)
                return {"type": "memory_status", "agents": await memory.status(agents)}
    except (memory.MemoryUnavailable, LookupError, ValueError) as exc:
        raise _BadRequest(str(exc)) from None
    raise _BadRequest('"action" must be search, reindex or status')


async def _follow(connection: _Connection, user: str) -> dict[str, Any]:
    """Hand *user* what is delivered to them (a scheduled job's reply) until the client closes."""
    try:
        core.check_user_id(user)
    except core.InvalidUserId as exc:
        raise _BadRequest(str(exc)) from None
    channel = _StreamChannel(connection)
    namespace = user.partition(":")[0]
    with core.outbound(namespace, lambda uid: channel if uid == user else None):
        await connection.write(type="following", user=user)
        while await connection.stream.receive_some(4096):
            pass  # nothing is expected from the client; its close ends this
    return {"type": "followed"}


async def _session(request: dict[str, Any], channel: str = "cli") -> core.SessionHandle:
    """The conversation a request names: ``session`` (an id prefix), else ``user`` with ``agent``."""
    try:
        if "session" in request:
            return await core.reopen_session(await core.find_session(_text_field(request, "session")))
        return await core.open_session(_text_field(request, "user"), _text_field(request, "agent"), channel)
    except (core.InvalidAgentName, core.SessionNotFound) as exc:
        raise _BadRequest(str(exc)) from None


def _handle_fields(handle: core.SessionHandle) -> dict[str, str]:
    return {"id": handle.id, "user_id": handle.user_id, "agent_id": handle.agent_id, "channel": handle.channel}


async def _serve_one(stream: trio.SocketStream, daemon: Daemon) -> None:
    """Answer one request. Whatever happens to it, the control server goes on serving the others."""
    connection = _Connection(stream)
    async with stream:
        try:
            answer = await _answer(connection, await _read_request(stream), daemon)
        except _BadRequest as exc:
            answer = {"type": "error", "error": str(exc)}
        except (sv.NoProc, sv.CallTimeout) as exc:
            answer = {"type": "error", "error": f"the daemon cannot serve this now ({type(exc).__name__})"}
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client went away; its run goes on and is stored
        except Exception as exc:  # noqa: BLE001 - a bug in one request must not take the socket down
            logger.opt(exception=True).error("control request failed")
            answer = {"type": "error", "error": f"internal error ({type(exc).__name__}); see the log file"}
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await connection.write(**answer, done=True)


async def _answers(path: Path) -> bool:
    try:
        stream = await trio.open_unix_socket(str(path))
    except OSError:
        return False
    await stream.aclose()
    return True


async def control_server(daemon: Daemon, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the control socket in the data dir until cancelled; remove it on the way out."""
    path = daemon.home / SOCKET_NAME
    if path.exists() or path.is_symlink():
        if await _answers(path):
            raise RuntimeError(f"another BeamClaw daemon is running (it answers at {path}); stop it first")
        path.unlink()  # a socket left by a daemon that was killed
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        await sock.bind(str(path))
    finally:
        os.umask(old_umask)
    sock.listen(64)
    try:
        async with trio.open_nursery() as nursery:
            handler = functools.partial(_serve_one, daemon=daemon)
            await nursery.start(trio.serve_listeners, handler, [trio.SocketListener(sock)])
            task_status.started()
    finally:
        path.unlink(missing_ok=True)
